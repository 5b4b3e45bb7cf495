"""Builds the training environment from a validated ``StackConfig``.

``build_platform`` is the only place that turns config into component ``...Args``; the
``Platform`` it returns is the typed handle the rest of the program (stack outputs, the
training jobs) builds on.

Extension point for jobs: a jobs module receives the ``Platform`` (bucket URL, image
reference, training service account, region, environment kind) plus its own section of
``StackConfig`` and declares its resources with ``platform.resource_options()`` so
they wait for the environment, e.g. in ``__main__.py``::

    platform = build_platform(config)
    jobs = declare_jobs(platform, config.jobs)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi

from vertex_training.stack.config import PROJECT_NAME, PROJECT_ROOT, EnvironmentKind, StackConfig

__all__ = [
    "DOCKERFILE",
    "LOCAL_IMAGE_REFERENCE",
    "LOCAL_PROJECT",
    "Platform",
    "build_platform",
]

LOCAL_PROJECT = "local"
"""The project id a local stack reports (job names keep the Vertex shape)."""

LOCAL_IMAGE_REFERENCE = "trainer:local"
"""The local stack runs the trainer from this checkout; no image is built."""

DOCKERFILE = Path("docker") / "trainer.Dockerfile"
"""Relative to the project root, which is also the build context."""


@dataclass(frozen=True)
class Platform:
    """Typed handles on the environment a stack stood up (cloud or local)."""

    environment: EnvironmentKind
    project: str
    """Google Cloud project id; ``local`` on a local stack."""
    region: str
    bucket_url: pulumi.Output[str]
    """``gs://<bucket>`` on cloud stacks; an absolute directory on a local stack."""
    image_reference: pulumi.Output[str]
    """Cloud: ``...@sha256:<digest>`` of the pushed trainer image. Local: ``trainer:local``."""
    training_service_account: pulumi.Output[str] | None
    """Email of the account jobs run as; None on a local stack."""
    workbench_service_account: pulumi.Output[str] | None = None
    repository_url: pulumi.Output[str] | None = None
    workbench_url: pulumi.Output[str] | None = None
    local_root: Path | None = None
    """Local stack: the directory holding the local bucket, logs and job state."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels every resource of the stack carries (jobs too)."""
    dependencies: tuple[pulumi.Resource, ...] = ()
    """What a job must wait for: the bucket grants, the image, the enabled APIs."""

    @property
    def is_local(self) -> bool:
        return self.environment is EnvironmentKind.LOCAL

    def resource_options(self) -> pulumi.ResourceOptions:
        """Options for resources that use the environment (e.g. jobs): wait for it.

        Merge with your own: ``ResourceOptions.merge(platform.resource_options(), mine)``.
        """
        return pulumi.ResourceOptions(depends_on=list(self.dependencies))


def build_platform(config: StackConfig) -> Platform:
    """Register the environment's resources (none on a local stack) and return handles."""
    labels = _labels(config)
    if not config.environment.is_cloud:
        return _local_platform(config, labels)
    return _cloud_platform(config, labels)


def _local_platform(config: StackConfig, labels: dict[str, str]) -> Platform:
    # Nothing is registered: the local backend creates the directories when it runs a job.
    bucket = config.local_root / "bucket"
    return Platform(
        environment=config.environment,
        project=LOCAL_PROJECT,
        region=config.region,
        bucket_url=pulumi.Output.from_input(str(bucket)),
        image_reference=pulumi.Output.from_input(LOCAL_IMAGE_REFERENCE),
        training_service_account=None,
        local_root=config.local_root,
        labels=labels,
    )


def _cloud_platform(config: StackConfig, labels: dict[str, str]) -> Platform:
    # Imported here so that a local stack never loads pulumi_gcp or docker-build.
    from vertex_training.platform.identity import PlatformIdentity, PlatformIdentityArgs
    from vertex_training.platform.project_services import ProjectServices, ProjectServicesArgs
    from vertex_training.platform.registry import TrainerRepository, TrainerRepositoryArgs
    from vertex_training.platform.storage import TrainingBucket, TrainingBucketArgs

    assert config.gcp_project is not None  # config validation guarantees it on cloud stacks
    project = config.gcp_project
    is_prod = config.environment is EnvironmentKind.PROD
    stack = _slug(config.stack)

    services = ProjectServices("services", ProjectServicesArgs(project=project))

    def after_services(*more: pulumi.Resource) -> pulumi.ResourceOptions:
        # Nothing may race the API enablement: every component waits for all services.
        return pulumi.ResourceOptions(depends_on=[services, *more])

    bucket = TrainingBucket(
        "storage",
        TrainingBucketArgs(
            project=project,
            region=config.region,
            bucket_name=config.bucket_name,
            labels=labels,
            staging_retention_days=config.storage.staging_retention_days,
            # dev is disposable; prod keeps every trained model through a destroy.
            force_destroy=not is_prod,
            versioning=is_prod,
            soft_delete_retention_days=config.storage.soft_delete_retention_days if is_prod else 0,
            protect=is_prod,
        ),
        opts=after_services(),
    )
    repository = TrainerRepository(
        "registry",
        TrainerRepositoryArgs(
            project=project,
            region=config.region,
            repository_id=config.registry.repository_name,
            keep_count=config.registry.keep_count,
            labels=labels,
        ),
        opts=after_services(),
    )
    identity = PlatformIdentity(
        "identity",
        PlatformIdentityArgs(
            project=project,
            bucket_name=bucket.name,
            repository_location=config.region,
            repository_id=repository.repository.repository_id,
            training_account_id=_account_id("vtx-train", stack),
            workbench_account_id=(
                _account_id("vtx-workbench", stack) if config.workbench.enabled else None
            ),
        ),
        opts=after_services(),
    )

    workbench_url: pulumi.Output[str] | None = None
    if config.workbench.enabled:
        from vertex_training.platform.workbench import TrainingWorkbench, TrainingWorkbenchArgs

        assert identity.workbench_email is not None
        workbench = TrainingWorkbench(
            "workbench",
            TrainingWorkbenchArgs(
                project=project,
                zone=config.workbench_zone,
                instance_name=f"vertex-workbench-{stack}"[:63].rstrip("-"),
                service_account_email=identity.workbench_email,
                machine_type=config.workbench.machine_type,
                gpu_type=config.workbench.gpu_type,
                gpu_count=config.workbench.gpu_count,
                disk_size_gb=config.workbench.disk_size_gb,
                container_image=config.workbench.container_image,
                idle_timeout_minutes=config.workbench.idle_timeout_minutes,
                # prod notebooks are reached through the Workbench proxy only.
                public_ip=not is_prod,
                labels=labels,
            ),
            opts=after_services(identity),
        )
        workbench_url = workbench.url

    image_dependencies: list[pulumi.Resource] = []
    if config.image.pinned_reference is not None:
        image_reference = pulumi.Output.from_input(config.image.pinned_reference)
    else:
        import pulumi_gcp.organizations as gcp_organizations

        from vertex_training.platform.trainer_image import (
            TrainerImage,
            TrainerImageArgs,
            content_tag,
        )

        client = gcp_organizations.get_client_config_output()
        image = TrainerImage(
            "trainer-image",
            TrainerImageArgs(
                repository_url=repository.url,
                registry_host=repository.host,
                registry_token=client.access_token,
                context_dir=PROJECT_ROOT,
                dockerfile=PROJECT_ROOT / DOCKERFILE,
                tag=content_tag(PROJECT_ROOT),
                image_name=config.image.image_name,
            ),
            opts=after_services(repository),
        )
        image_reference = image.reference
        image_dependencies.append(image)

    return Platform(
        environment=config.environment,
        project=project,
        region=config.region,
        bucket_url=bucket.url,
        image_reference=image_reference,
        training_service_account=identity.training_email,
        workbench_service_account=identity.workbench_email,
        repository_url=repository.url,
        workbench_url=workbench_url,
        labels=labels,
        dependencies=(services, bucket, identity, *image_dependencies),
    )


def _labels(config: StackConfig) -> dict[str, str]:
    return {
        "app": PROJECT_NAME,
        "stack": _slug(config.stack)[:63],
        "environment": config.environment.value,
        "managed-by": "pulumi",
    }


def _slug(text: str) -> str:
    """Lowercase letters, digits and '-' only: safe in resource ids and label values."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "stack"


def _account_id(prefix: str, stack: str) -> str:
    # Service account ids are 6-30 characters and must end with a letter or digit.
    return f"{prefix}-{stack}"[:30].rstrip("-")
