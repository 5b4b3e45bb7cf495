"""Experiment tracking: a TensorBoard in the jobs' region, CMEK on request, and a writer
role for the training account holding only what the uploader calls."""

from __future__ import annotations

from typing import Any

import pytest

import vertex_training as vt
from tests.platform import FORBIDDEN_ROLES
from tests.pulumi_mocks import run_pulumi
from vertex_training.platform.tensorboard import (
    EXPERIMENT_PERMISSIONS,
    TENSORBOARD_WRITER_PERMISSIONS,
    ExperimentTracking,
    ExperimentTrackingArgs,
)

TENSORBOARD = "gcp:vertex/aiTensorboard:AiTensorboard"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
TRAINING = "serviceAccount:vtx-train-dev@p-1.iam.gserviceaccount.com"
KEY = "projects/p-1/locations/europe-west4/keyRings/r/cryptoKeys/k"


def args(**changes: Any) -> ExperimentTrackingArgs:
    fields: dict[str, Any] = {
        "project": "p-1",
        "region": "europe-west4",
        "display_name": "vertex-training-dev",
        "training_member": TRAINING,
        "role_id": "vertexTensorboardWriter_dev",
        "labels": {"stack": "dev"},
    }
    return ExperimentTrackingArgs(**{**fields, **changes})


def outputs_of(tracking_args: ExperimentTrackingArgs) -> tuple[Any, dict[str, str]]:
    found: dict[str, str] = {}

    def program() -> None:
        tracking = ExperimentTracking("tracking", tracking_args)
        tracking.tensorboard_name.apply(lambda v: found.__setitem__("name", v))
        tracking.console_url.apply(lambda v: found.__setitem__("url", v))

    return run_pulumi(program), found


def test_tensorboard_in_the_region_with_labels_and_no_cmek_by_default() -> None:
    run, _ = outputs_of(args())
    tensorboard = run.one(TENSORBOARD)
    assert tensorboard.name == "tracking-tensorboard"
    assert tensorboard.inputs["region"] == "europe-west4"
    assert tensorboard.inputs["project"] == "p-1"
    assert tensorboard.inputs["displayName"] == "vertex-training-dev"
    assert tensorboard.inputs["labels"] == {"stack": "dev"}
    assert "encryptionSpec" not in tensorboard.inputs


def test_cmek_when_asked() -> None:
    run, _ = outputs_of(args(kms_key_name=KEY))
    assert run.one(TENSORBOARD).inputs["encryptionSpec"] == {"kmsKeyName": KEY}


def test_outputs_are_the_job_field_value_and_the_console_page() -> None:
    _, found = outputs_of(args())
    assert found["name"] == "projects/p-1/locations/europe-west4/tensorboards/1234567890"
    assert found["url"] == (
        "https://console.cloud.google.com/vertex-ai/experiments/tensorboard-instances?project=p-1"
    )


def test_training_account_gets_only_the_tensorboard_writer_role() -> None:
    run, _ = outputs_of(args())
    role = run.one(CUSTOM_ROLE)
    assert role.inputs["roleId"] == "vertexTensorboardWriter_dev"
    permissions = role.inputs["permissions"]
    assert permissions == list(TENSORBOARD_WRITER_PERMISSIONS)
    assert all(p.startswith("aiplatform.tensorboard") for p in permissions)
    # No job, endpoint, dataset or delete permission: a replica can only upload logs.
    assert not [p for p in permissions if p.endswith((".delete", ".setIamPolicy"))]
    grant = run.one(PROJECT_MEMBER)
    assert grant.inputs == {
        "project": "p-1",
        "role": "projects/p-1/roles/vertexTensorboardWriter_dev",
        "member": TRAINING,
    }
    roles = [r.inputs["role"] for r in run.registrations if "role" in r.inputs]
    assert not FORBIDDEN_ROLES.intersection(roles)
    assert "roles/aiplatform.user" not in roles


@pytest.mark.parametrize("experiments", [False, True])
def test_experiment_permissions_only_when_asked(experiments: bool) -> None:
    run, _ = outputs_of(args(experiments=experiments))
    permissions = set(run.one(CUSTOM_ROLE).inputs["permissions"])
    assert permissions.issuperset(TENSORBOARD_WRITER_PERMISSIONS)
    assert permissions.issuperset(EXPERIMENT_PERMISSIONS) is experiments
    assert not permissions.intersection(EXPERIMENT_PERMISSIONS) or experiments


def test_children_are_parented_and_named_after_the_component() -> None:
    run, _ = outputs_of(args())
    component = run.one("vertex-training:platform:ExperimentTracking")
    children = run.children_of(component)
    assert len(children) == len(run.registrations) - 1 == 3
    assert all(r.name.startswith("tracking-") for r in children)


def test_an_existing_tensorboard_is_used_and_still_granted() -> None:
    existing = "projects/p-1/locations/europe-west4/tensorboards/42"
    run, found = outputs_of(args(existing_tensorboard=existing))
    assert run.of_type(TENSORBOARD) == []
    assert found["name"] == existing
    assert run.one(PROJECT_MEMBER).inputs["member"] == TRAINING


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {
                "tensorboard": vt.TensorBoard(
                    existing="projects/p-1/locations/us-central1/tensorboards/42"
                )
            },
            "tensorboard.existing: 'projects/p-1/locations/us-central1/tensorboards/42' is in "
            "us-central1, not in the region europe-west4 (jobs stream only to a TensorBoard in "
            "their own region); valid: projects/P/locations/europe-west4/tensorboards/ID",
        ),
        (
            {"tensorboard": vt.TensorBoard(existing="tb-42")},
            "'tb-42' is not a TensorBoard name; valid: projects/P/locations/europe-west4/",
        ),
        (
            {
                "tensorboard": vt.TensorBoard(),
                "kms_key_name": "projects/p-1/locations/us/keyRings/r/cryptoKeys/k",
            },
            "kms_key_name: 'projects/p-1/locations/us/keyRings/r/cryptoKeys/k' is in us, not "
            "in the region europe-west4",
        ),
    ],
)
def test_bad_input_is_refused_before_anything_is_registered(
    changes: dict[str, Any], message: str
) -> None:
    # The platform's rules judge what it hands ExperimentTracking, before any child exists.
    sink: list[Any] = []
    platform_args = vt.TrainingPlatformArgs(
        environment="dev", project="p-1", region="europe-west4", **changes
    )
    with pytest.raises(vt.InvalidArgumentsError) as error:
        run_pulumi(lambda: vt.TrainingPlatform("p", platform_args), monitor_sink=sink)
    assert message in str(error.value)
    assert sink[0].registrations == []
