"""Stack YAML -> the public Args: the one place config becomes ``TrainingPlatformArgs``
and job Args, so the stack files and a user's program declare the same resources.

``load_stack()`` is what this repo's ``__main__.py`` calls::

    stack = vt.load_stack()
    platform = vt.TrainingPlatform("platform", stack.platform)
    jobs = {name: vt.declare_job(name, args.on(platform)) for name, args in stack.jobs.items()}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vertex_training._project import project_root
from vertex_training.jobs.api import SERVING_IMAGE, JobArgs
from vertex_training.platform.platform import (
    ImageBuild,
    TensorBoard,
    TrainingPlatformArgs,
    Workbench,
)
from vertex_training.stack.capacity import CapacityDeclarations
from vertex_training.stack.config import (
    StackConfig,
    load_pulumi_config,
    load_stack_config,
)
from vertex_training.stack.serving import ServingDeclarations

__all__ = [
    "DOCKERFILE",
    "IMAGE_SOURCES",
    "SERVING_DOCKERFILE",
    "SERVING_IMAGE_SOURCES",
    "StackDefinition",
    "load_stack",
    "stack_definition",
]

DOCKERFILE = Path("docker") / "trainer.Dockerfile"
"""Relative to the project root, which is also the build context."""

IMAGE_SOURCES: tuple[str, ...] = ("trainer", "docker", "requirements.lock", ".dockerignore")
"""Paths (relative to the build context) whose content decides the trainer image's tag."""

SERVING_DOCKERFILE = Path("docker") / "serving.Dockerfile"
"""The serving image (the prediction server, ``predictor/``): a model's default container."""

SERVING_IMAGE_SOURCES: tuple[str, ...] = ("predictor", str(SERVING_DOCKERFILE), ".dockerignore")
"""Paths whose content decides the serving image's tag."""


@dataclass(frozen=True)
class StackDefinition:
    """A stack's config as public Args."""

    config: StackConfig
    platform: TrainingPlatformArgs
    jobs: Mapping[str, JobArgs]
    """Name -> Args on the platform the stack declares, as the job rules see it (judged
    there): ``args.on(platform)`` puts them on the platform itself."""
    serving: ServingDeclarations = field(default_factory=ServingDeclarations)
    """The stack's models and endpoints: ``declare(platform, jobs)``."""
    capacity: CapacityDeclarations = field(default_factory=CapacityDeclarations)
    """The stack's persistent resources: ``declare(platform, jobs)`` gives them, and the
    jobs placed on the ones they name."""


def stack_definition(config: StackConfig) -> StackDefinition:
    """The Args a validated stack config declares."""
    from vertex_training.jobs.pools import Accelerator

    root = project_root()
    image: ImageBuild | str = config.image.trainer_image or ImageBuild(
        context=root,
        dockerfile=root / DOCKERFILE,
        image_name=config.image.image_name,
        sources=IMAGE_SOURCES,
    )
    settings = config.workbench
    workbench = None
    if settings.enabled:
        workbench = Workbench(
            machine_type=settings.machine_type,
            accelerator=(
                Accelerator(settings.gpu_type, settings.gpu_count) if settings.gpu_type else None
            ),
            zone=settings.zone,
            disk_size_gb=settings.disk_size_gb,
            container_image=settings.container_image,
            idle_timeout_minutes=settings.idle_timeout_minutes,
        )
    images: dict[str, ImageBuild | str] = {"trainer": image}
    serving = config.serving or ServingDeclarations()
    if any(model.args.image is None for model in serving.models):
        # A model without an image serves with ours, built like the trainer's and used by
        # digest (a local platform builds nothing: its twin runs predictor/ from here).
        images[SERVING_IMAGE] = ImageBuild(
            context=root,
            dockerfile=root / SERVING_DOCKERFILE,
            image_name=SERVING_IMAGE,
            sources=SERVING_IMAGE_SOURCES,
        )
    platform = TrainingPlatformArgs(
        environment=config.environment.value,
        project=config.gcp_project if config.environment.is_cloud else None,
        region=config.region,
        images=images,
        workbench=workbench,
        bucket_name=config.bucket_name,
        repository_name=config.registry.repository_name,
        image_keep_count=config.registry.image_keep_count,
        staging_retention_days=config.storage.staging_retention_days,
        soft_delete_retention_days=config.storage.soft_delete_retention_days,
        strict_hardware_checks=config.general.strict_hardware_checks,
        acknowledged_hardware_checks=config.general.acknowledged_hardware_checks,
        tensorboard=(
            TensorBoard()
            if config.general.tensorboard_enabled and config.environment.is_cloud
            else None
        ),
        kms_key_name=config.general.kms_key_name,
        local_root=config.local_root,
    )
    jobs = {job.name: job.args for job in config.jobs.jobs}
    capacity = config.capacity or CapacityDeclarations()
    return StackDefinition(
        config=config, platform=platform, jobs=jobs, serving=serving, capacity=capacity
    )


def load_stack(stack_file: Path | None = None) -> StackDefinition:
    """The running stack's config (or ``stack_file``'s) as Args; every config problem is a
    ``pulumi.RunError`` listing them all, raised before anything is registered."""
    config = load_pulumi_config() if stack_file is None else load_stack_config(stack_file)
    return stack_definition(config)
