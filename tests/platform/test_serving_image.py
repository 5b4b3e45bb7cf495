"""The serving image beside the trainer's: built and pushed the same way, a model's by
digest, never a job pool's default."""

from __future__ import annotations

from typing import Any

from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_pulumi
from vertex_training.jobs.api import SERVING_IMAGE
from vertex_training.platform.platform import (
    ImageBuild,
    TrainingPlatform,
    TrainingPlatformArgs,
)
from vertex_training.stack.definition import SERVING_DOCKERFILE, SERVING_IMAGE_SOURCES

IMAGE = "docker-build:index:Image"


SERVING_BUILD = ImageBuild(
    context=PROJECT_ROOT,
    dockerfile=PROJECT_ROOT / SERVING_DOCKERFILE,
    sources=SERVING_IMAGE_SOURCES,
)


def _declared(images: dict[str, Any], outputs: list[Any]) -> None:
    """A dev platform with ``images``; its job default and serving image into ``outputs``."""
    platform = TrainingPlatform(
        "platform", TrainingPlatformArgs(environment="dev", project="my-project-1", images=images)
    )
    default = platform.default_image()
    outputs.append(None if default is None else default.apply(outputs.append))
    platform.image(SERVING_IMAGE).apply(outputs.append)


def test_the_serving_image_is_built_and_the_jobs_default_stays_the_trainer() -> None:
    trainer = "us-central1-docker.pkg.dev/my-project-1/trainers/trainer@sha256:" + "a" * 64
    outputs: list[Any] = []
    run = run_pulumi(lambda: _declared({"trainer": trainer, SERVING_IMAGE: SERVING_BUILD}, outputs))
    assert trainer in outputs
    assert any(isinstance(o, str) and "/trainers/serving@sha256:" in o for o in outputs)
    (image,) = run.of_type(IMAGE)
    assert image.name == "platform-image-serving-image"
    assert image.inputs["dockerfile"] == {"location": str(PROJECT_ROOT / SERVING_DOCKERFILE)}
    assert image.inputs["tags"][0].split(":")[0].endswith("/trainers/serving")


def test_a_platform_with_only_the_serving_image_has_no_job_default() -> None:
    outputs: list[Any] = []
    run_pulumi(lambda: _declared({SERVING_IMAGE: SERVING_BUILD}, outputs))
    default, serving = outputs
    assert default is None
    assert serving.startswith("us-central1-docker.pkg.dev/my-project-1/trainers/serving@sha256:")
