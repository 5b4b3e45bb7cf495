"""Nothing unjudged gets through (issue 33): the provider's ``check`` judges inputs that are
not exactly those the program judged, and in any case the values the program could not know
(Outputs, the platform's included), with the same finding and words as the program; pools
given through a job's ``extra_fields`` get the pool rules."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

import vertex_training as vt
from tests.pulumi_mocks import run_pulumi
from vertex_training.findings import render
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider

DIGEST = "us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64
POOL = "jobSpec.workerPoolSpecs[0]"


def _args(**fields: Any) -> vt.CustomJobArgs:
    return vt.CustomJobArgs(
        project="p",
        region="us-central1",
        chief=vt.WorkerPool(machine_type="n1-standard-16", image=DIGEST),
        base_output_directory="gs://b/out",
        **fields,
    )


def _registered(program: Any, name: str = "j") -> dict[str, Any]:
    """The inputs ``program`` registered for the job ``name``, as check receives them."""
    return dict(run_pulumi(program, stack="dev").named(name).inputs)


def _failures(inputs: dict[str, Any]) -> list[tuple[str, str]]:
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, inputs)
    return [(f.property, f.reason) for f in result.failures or []]


def test_inputs_as_the_program_judged_them_pass_check() -> None:
    assert _failures(_registered(lambda: vt.CustomJob("j", _args()))) == []


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (
            lambda pool: pool["machineSpec"].update(
                acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=3
            ),
            f"{POOL}.machineSpec.acceleratorCount",
            "3 x NVIDIA_TESLA_T4 on n1-standard-16 is not valid; valid counts: 1, 2, 4 "
            "(check accelerator-count:NVIDIA_TESLA_T4x3@n1-standard-16)",
        ),
        (
            lambda pool: pool.update(replicaCount="2"),
            f"{POOL}.replicaCount",
            "the first pool (the chief) runs exactly 1 replica, got 2; put further replicas "
            "in workerPoolSpecs[1]",
        ),
    ],
    ids=["3xT4-on-n1-standard-16", "chief-of-2"],
)
def test_a_body_changed_after_the_program_judged_it_is_judged_by_check(
    change: Any, path: str, message: str
) -> None:
    # What a resource transform, or a body edited in state, does: the inputs are no longer
    # those whose digest the program recorded, so check judges them all.
    inputs = _registered(lambda: vt.CustomJob("j", _args()))
    spec = copy.deepcopy(inputs["spec"])
    change(spec["jobSpec"]["workerPoolSpecs"][0])
    assert _failures({**inputs, "spec": spec}) == [("spec", f"{path}: {message}")]


def test_check_says_what_the_program_says_in_the_same_words() -> None:
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.WorkerPool(
            machine_type="n1-standard-16", accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3)
        )
    [finding] = caught.value.findings
    inputs = _registered(lambda: vt.CustomJob("j", _args()))
    spec = copy.deepcopy(inputs["spec"])
    machine = spec["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    machine.update(acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=3)
    [(_, reason)] = _failures({**inputs, "spec": spec})
    assert reason == f"{POOL}.{finding.path}: {render(finding, 'message')}"


def test_a_wait_changed_after_the_program_judged_it_is_judged_by_check() -> None:
    inputs = _registered(lambda: vt.CustomJob("j", _args()))
    failures = _failures({**inputs, "poll_interval_seconds": 0.0})
    assert failures == [
        (
            "poll_interval_seconds",
            "poll_interval_seconds: must be a positive number of seconds, got 0.0",
        )
    ]


def test_a_key_the_platform_gives_as_an_output_is_judged_once_known() -> None:
    # The platform's CMEK key comes from another resource: not known where the job is
    # resolved, so the job's region rule runs on it in check.
    key = "projects/p/locations/europe-west4/keyRings/k/cryptoKeys/c"

    def program() -> None:
        platform = vt.TrainingPlatform(
            "platform",
            vt.TrainingPlatformArgs(
                environment="dev",
                project="team-project",
                images={"trainer": DIGEST},
                kms_key_name=pulumi.Output.from_input(key),
            ),
        )
        chief = vt.WorkerPool(machine_type="n1-standard-4")
        vt.CustomJob("j", vt.CustomJobArgs(platform=platform, chief=chief))

    inputs = _registered(program)
    [(prop, reason)] = _failures(inputs)
    assert prop == "spec"
    assert reason.startswith(
        f"encryptionSpec.kmsKeyName: {key!r} is in europe-west4, not in the region us-central1"
    )
    assert "encryptionSpec.kmsKeyName" in inputs["unknown_paths"]


def test_pools_given_through_extra_fields_get_the_pool_rules() -> None:
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "diskSpec": {"bootDiskSizeGb": 10},
        "containerSpec": {"imageUri": DIGEST},
    }
    args = _args(extra_fields={"jobSpec": {"workerPoolSpecs": [pool]}})
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        run_pulumi(lambda: vt.CustomJob("j", args), stack="dev")
    [finding] = caught.value.findings
    assert finding.path == f"{POOL}.diskSpec.bootDiskSizeGb"
    assert finding.caller == (
        "extra_fields['jobSpec']['workerPoolSpecs'][0]['diskSpec']['bootDiskSizeGb']"
    )
    assert "10 is outside the valid range 100-65536" in str(caught.value)
