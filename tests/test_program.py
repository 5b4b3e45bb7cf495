"""The whole program (``__main__.py``) evaluated under mocks, for every stack file."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from tests import PROJECT_ROOT
from tests.pulumi_mocks import (
    MOCK_ACCESS_TOKEN,
    PulumiRun,
    RecordingMonitor,
    Registration,
    run_program,
    stack_file_config,
)
from vertex_training.platform.trainer_image import content_tag
from vertex_training.stack.definition import (
    DOCKERFILE,
    IMAGE_SOURCES,
    SERVING_DOCKERFILE,
    SERVING_IMAGE_SOURCES,
)

LOCAL_IMAGE_REFERENCE = "trainer:local"

STACK_FILES = {
    path.name.split(".")[1]: path
    for path in sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"))
}
SERVICE = "gcp:projects/service:Service"
IMAGE = "docker-build:index:Image"
JOB_TYPES = (
    "pulumi-python:dynamic/vertex:CustomJob",
    "pulumi-python:dynamic/vertex:HyperparameterTuningJob",
)


def image_named(run: PulumiRun, name: str) -> Registration:
    """The platform's build of image ``name`` (``platform-image-<name>-image``)."""
    (image,) = [r for r in run.of_type(IMAGE) if r.name == f"platform-image-{name}-image"]
    return image


def exported_names() -> set[str]:
    """The names __main__.py exports (``pulumi.export("name", ...)``), read without running it."""
    import ast

    tree = ast.parse((PROJECT_ROOT / "__main__.py").read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "export"
        and isinstance(node.args[0], ast.Constant)
    }


def evaluate(stack: str) -> PulumiRun:
    return run_program(stack, stack_file_config(STACK_FILES[stack]))


@pytest.fixture(scope="module")
def runs() -> dict[str, PulumiRun]:
    return {stack: evaluate(stack) for stack in STACK_FILES}


def test_main_stays_small() -> None:
    """The program reads the stack and declares the platform, jobs, models and endpoints: it
    shapes its outputs and nothing else (the ceiling grew by 5 lines with served models, and
    by 3 with persistent resources, which the jobs are placed on)."""
    lines = [
        line
        for line in (PROJECT_ROOT / "__main__.py").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert len(lines) <= 48


@pytest.mark.parametrize("stack", sorted(STACK_FILES))
def test_every_stack_exports_every_named_output(stack: str, runs: dict[str, PulumiRun]) -> None:
    names = exported_names()
    assert {
        "project",
        "region",
        "bucketUrl",
        "repositoryUrl",
        "imageReference",
        "workbenchUrl",
        "trainingServiceAccount",
        "workbenchServiceAccount",
        "jobs",
    } <= names
    assert set(runs[stack].outputs) == names


def test_local_stack_registers_no_cloud_resource(runs: dict[str, PulumiRun]) -> None:
    run = runs["local"]
    assert not [r for r in run.registrations if r.type.startswith(("gcp:", "docker-build:"))]
    assert run.calls == []  # not even an invoke of the Google provider
    assert run.outputs["environment"] == "local"
    assert run.outputs["bucketUrl"] == str(PROJECT_ROOT / ".local-vertex" / "bucket")
    assert run.outputs["imageReference"] == LOCAL_IMAGE_REFERENCE
    assert run.outputs["trainingServiceAccount"] is None


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_cloud_stack_builds_the_whole_environment(stack: str, runs: dict[str, PulumiRun]) -> None:
    run = runs[stack]
    components = {r.type.rsplit(":", 1)[-1] for r in run.registrations if not r.custom}
    # dev keeps one persistent resource warm (its cassava CPU job runs on it).
    assert components - {"PersistentResource"} == {
        "TrainingPlatform",
        "ProjectServices",
        "TrainingBucket",
        "TrainerRepository",
        "PlatformIdentity",
        "TrainingWorkbench",
        "TrainerImage",
        "ExperimentTracking",
    }
    outputs = run.outputs
    project = outputs["project"]
    assert project == f"vertex-training-{stack}"
    assert outputs["region"] == "us-central1"
    assert outputs["bucketUrl"] == f"gs://{project}-{stack}-vertex"
    assert outputs["repositoryUrl"] == f"us-central1-docker.pkg.dev/{project}/trainers"
    assert outputs["imageReference"].startswith(f"{outputs['repositoryUrl']}/trainer@sha256:")
    assert (
        outputs["trainingServiceAccount"] == f"vtx-train-{stack}@{project}.iam.gserviceaccount.com"
    )
    assert outputs["workbenchServiceAccount"].startswith(f"vtx-workbench-{stack}@")
    assert outputs["workbenchUrl"].startswith("https://")
    # Jobs stream their logs to the stack's TensorBoard, and the outputs say where it is.
    tensorboard = outputs["tensorboard"]
    assert "/locations/us-central1/tensorboards/" in tensorboard
    assert outputs["tensorboardUrl"].startswith("https://console.cloud.google.com/")
    for job in run.registrations:
        if job.type in JOB_TYPES:
            spec = job.inputs["spec"]
            run_spec = spec.get("jobSpec") or spec["trialJobSpec"]
            assert run_spec["tensorboard"] == tensorboard
            assert run_spec["baseOutputDirectory"]["outputUriPrefix"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_nothing_races_the_api_enablement(stack: str, runs: dict[str, PulumiRun]) -> None:
    run = runs[stack]
    services = {r.urn for r in run.of_type(SERVICE)}
    assert len(services) >= 6
    for registration in run.registrations:
        if registration.type == SERVICE or registration.type.endswith(
            (":ProjectServices", ":TrainingPlatform")
        ):
            continue
        assert services <= set(registration.dependencies), registration.name


@pytest.mark.parametrize("stack", sorted(STACK_FILES))
def test_every_resource_is_parented_to_a_component(stack: str, runs: dict[str, PulumiRun]) -> None:
    run = runs[stack]
    component_urns = {r.urn for r in run.registrations if not r.custom}
    for registration in run.registrations:
        # Jobs are the program's own resources, as in any user's program.
        if registration.custom and ":dynamic/" not in registration.type:
            assert registration.parent in component_urns, registration.name
            component = next(r for r in run.registrations if r.urn == registration.parent)
            assert registration.name.startswith(f"{component.name}-"), registration.name


def test_dev_is_disposable_and_prod_is_protected(runs: dict[str, PulumiRun]) -> None:
    dev_bucket = runs["dev"].one("gcp:storage/bucket:Bucket")
    prod_bucket = runs["prod"].one("gcp:storage/bucket:Bucket")
    assert dev_bucket.inputs["forceDestroy"] is True and not dev_bucket.protect
    assert prod_bucket.inputs["forceDestroy"] is False
    assert prod_bucket.protect and prod_bucket.retain_on_delete
    assert prod_bucket.inputs["versioning"] == {"enabled": True}
    assert prod_bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 14 * 86_400}
    dev_setup = runs["dev"].one("gcp:workbench/instance:Instance").inputs["gceSetup"]
    prod_setup = runs["prod"].one("gcp:workbench/instance:Instance").inputs["gceSetup"]
    assert dev_setup["disablePublicIp"] is False
    assert prod_setup["disablePublicIp"] is True
    assert prod_setup["acceleratorConfigs"] == [{"type": "NVIDIA_TESLA_T4", "coreCount": "1"}]


def test_workbench_uses_the_workbench_account(runs: dict[str, PulumiRun]) -> None:
    run = runs["dev"]
    instance = run.one("gcp:workbench/instance:Instance").inputs
    assert instance["gceSetup"]["serviceAccounts"] == [
        {"email": run.outputs["workbenchServiceAccount"]}
    ]
    assert instance["location"] == "us-central1-a", "no workbenchZone: the region's zone a"


def test_image_push_waits_for_the_repository(runs: dict[str, PulumiRun]) -> None:
    run = runs["dev"]
    repository = run.one("gcp:artifactregistry/repository:Repository")
    assert {image.name for image in run.of_type(IMAGE)} == {
        "platform-image-trainer-image",
        "platform-image-serving-image",
    }
    for image in run.of_type(IMAGE):
        assert repository.urn in image.dependencies


def test_image_is_pushed_with_the_google_access_token_and_tagged_by_content(
    runs: dict[str, PulumiRun],
) -> None:
    run = runs["dev"]
    assert [call.token for call in run.calls] == [
        "gcp:organizations/getClientConfig:getClientConfig"
    ]
    image = image_named(run, "trainer")
    (registry,) = image.inputs["registries"]["value"]
    assert registry["password"] == MOCK_ACCESS_TOKEN
    assert image.inputs["tags"] == [
        f"{run.outputs['repositoryUrl']}/trainer:{content_tag(PROJECT_ROOT, IMAGE_SOURCES)}"
    ]
    assert image.inputs["dockerfile"] == {"location": str(PROJECT_ROOT / DOCKERFILE)}
    assert image.inputs["context"] == {"location": str(PROJECT_ROOT)}


def test_dev_model_serves_with_the_platform_serving_image_by_digest(
    runs: dict[str, PulumiRun],
) -> None:
    run = runs["dev"]
    repository = run.outputs["repositoryUrl"]
    image = image_named(run, "serving")
    assert image.inputs["dockerfile"] == {"location": str(PROJECT_ROOT / SERVING_DOCKERFILE)}
    assert image.inputs["tags"] == [
        f"{repository}/serving:{content_tag(PROJECT_ROOT, SERVING_IMAGE_SOURCES)}"
    ]
    model = run.one("pulumi-python:dynamic/vertex:Model")
    assert image.urn in model.dependencies
    served = model.inputs["body"]["containerSpec"]["imageUri"]
    assert served.startswith(f"{repository}/serving@sha256:")
    assert len(served.rsplit(":", 1)[1]) == 64
    # The jobs still run the trainer: the serving image is a model's, never a pool's default.
    for job in run.registrations:
        if job.type in JOB_TYPES:
            spec = job.inputs["spec"]
            pools = (spec.get("jobSpec") or spec["trialJobSpec"])["workerPoolSpecs"]
            assert {p["containerSpec"]["imageUri"] for p in pools} == {
                run.outputs["imageReference"]
            }


def test_the_local_model_builds_no_serving_image(runs: dict[str, PulumiRun]) -> None:
    run = runs["local"]
    assert run.of_type(IMAGE) == []
    model = run.one("pulumi-python:dynamic/vertex:Model")
    assert model.inputs["body"]["containerSpec"]["imageUri"] == "serving:local"


def test_a_pinned_trainer_image_skips_the_build() -> None:
    digest = "europe-docker.pkg.dev/p/r/trainer@sha256:" + "b" * 64
    config = stack_file_config(STACK_FILES["dev"]) | {"vertex-training:trainerImage": digest}
    run = run_program("dev", config)
    assert [image.name for image in run.of_type(IMAGE)] == ["platform-image-serving-image"]
    assert run.outputs["imageReference"] == digest


def test_workbench_can_be_turned_off() -> None:
    config = stack_file_config(STACK_FILES["dev"]) | {"vertex-training:workbenchEnabled": "false"}
    run = run_program("dev", config)
    assert run.of_type("gcp:workbench/instance:Instance") == []
    assert run.outputs["workbenchUrl"] is None
    assert run.outputs["workbenchServiceAccount"] is None


BAD_CONFIGS = {
    "missing gcp:project": (
        {"vertex-training:environment": "dev"},
        "gcp:project: missing",
        "pulumi config set gcp:project <your-project-id> --stack dev",
    ),
    "unknown region": (
        {"vertex-training:region": "us-central42"},
        "vertex-training:region: 'us-central42' is not a Vertex AI region",
        "pulumi config set vertex-training:region us-central2 --stack dev",
    ),
    "malformed bucket name": (
        {"vertex-training:bucketName": "My_Bucket"},
        "vertex-training:bucketName: 'My_Bucket' is not a valid bucket name",
        "pulumi config set vertex-training:bucketName",
    ),
    "negative disk size": (
        {"vertex-training:workbenchDiskSizeGb": "-10"},
        "vertex-training:workbenchDiskSizeGb: -10 GB is not a valid boot disk size",
        "valid: an integer from 150 to 64000",
    ),
    "unknown key": (
        {"vertex-training:bucketname": "x-bucket"},
        "vertex-training:bucketname: unknown config key (did you mean 'bucketName'?)",
        "pulumi config rm vertex-training:bucketname --stack dev",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_fails_before_any_resource(case: str) -> None:
    change, problem, fix = BAD_CONFIGS[case]
    config = stack_file_config(STACK_FILES["dev"])
    if case == "missing gcp:project":
        del config["gcp:project"]
    config |= change
    monitor_holder: list[RecordingMonitor] = []
    # RunError: the CLI shows the message alone, no Python traceback.
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", config, monitor_sink=monitor_holder)
    assert problem in str(caught.value)
    assert fix in str(caught.value)
    (monitor,) = monitor_holder
    assert monitor.registrations == []
    assert monitor.mocks.calls == []  # type: ignore[attr-defined]


def test_cmek_reaches_the_bucket_the_tensorboard_and_every_job() -> None:
    key = "projects/kms-project/locations/us-central1/keyRings/ml/cryptoKeys/training"
    run = run_program(
        "dev", stack_file_config(STACK_FILES["dev"]) | {"vertex-training:kmsKeyName": key}
    )
    assert run.one("gcp:storage/bucket:Bucket").inputs["encryption"] == {"defaultKmsKeyName": key}
    assert run.one("gcp:vertex/aiTensorboard:AiTensorboard").inputs["encryptionSpec"] == {
        "kmsKeyName": key
    }
    jobs = [r for r in run.registrations if r.type in JOB_TYPES]
    assert jobs and all(j.inputs["spec"]["encryptionSpec"] == {"kmsKeyName": key} for j in jobs)


def test_a_key_in_another_region_is_a_config_error() -> None:
    key = "projects/p/locations/europe-west4/keyRings/ml/cryptoKeys/training"
    config = stack_file_config(STACK_FILES["dev"]) | {"vertex-training:kmsKeyName": key}
    with pytest.raises(
        pulumi.RunError,
        match=r"vertex-training:kmsKeyName: .* is in europe-west4, not in the region us-central1",
    ):
        run_program("dev", config)


def test_stack_file_config_passes_values_as_text() -> None:
    config = stack_file_config(STACK_FILES["prod"])
    assert config["vertex-training:workbenchGpuCount"] == "1"
    assert all(isinstance(v, str) for v in config.values())
    assert Path(STACK_FILES["prod"]).exists()
