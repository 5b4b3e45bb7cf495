"""A PersistentResource served by the provider, and a job of another language placed on
it by its ``resourceId`` output: the provider finds the resource it constructed by that
id and holds the job to its pools, with the words a Python program gets."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from tests import pulumi_mocks
from tests.pulumi_mocks import RecordingMonitor, run_pulumi
from vertex_training.provider.components import (
    ArgsError,
    CustomJob,
    HyperparameterTuningJob,
    PersistentResource,
    TrainingPlatform,
)

DIGEST = "us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64
T4 = {"type": "NVIDIA_TESLA_T4", "count": 2.0}  # numbers cross the engine as floats


@pytest.fixture(autouse=True)
def _jobs_report_their_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A created job reports its state, as the job provider does (the component reads it)."""
    new_resource = pulumi_mocks.PlatformMocks.new_resource

    def created(self: Any, args: Any) -> Any:
        resource_id, state = new_resource(self, args)
        if "judged_digest" in state:
            state["state"] = "SUCCEEDED"
        return resource_id, state

    monkeypatch.setattr(pulumi_mocks.PlatformMocks, "new_resource", created)


def _platform() -> TrainingPlatform:
    args = {"environment": "dev", "project": "team-project", "images": {"trainer": DIGEST}}
    return TrainingPlatform("platform", args)


def _resource(platform: TrainingPlatform) -> PersistentResource:
    pool = {
        "machine_type": "n1-standard-8",
        "accelerator": T4,
        "boot_disk_size_gb": 200.0,
        "autoscaling": {"min_replica_count": 1.0, "max_replica_count": 4.0},
    }
    return PersistentResource("warm", {"platform": platform, "pools": [pool]})


def _engine_output(value: str, urn: str) -> Any:
    """``value`` as the engine hands a construct another resource's output: an output
    value with its dependency, deserialized by the SDK's own code."""
    struct = struct_pb2.Struct()
    struct.update(
        {
            "id": {
                rpc._special_sig_key: rpc._special_output_value_sig,
                "value": value,
                "dependencies": [urn],
            }
        }
    )
    return rpc.deserialize_properties(struct, keep_unknowns=True)["id"]


def _job(platform: TrainingPlatform, resource_id: Any, machine_type: str, replicas: float) -> None:
    chief = {"machine_type": machine_type, "accelerator": T4, "boot_disk_size_gb": 200.0}
    workers = {**chief, "replica_count": replicas}
    args = {
        "platform": platform,
        "chief": chief,
        "workers": workers,
        "persistent_resource_id": resource_id,
    }
    CustomJob("train", args)


def _run(machine_type: str, replicas: float) -> tuple[list[RecordingMonitor], Any]:
    monitors: list[RecordingMonitor] = []

    def program() -> None:
        platform = _platform()
        resource = _resource(platform)
        urn = "urn:pulumi:test::p::vertex-training:index:PersistentResource::warm"
        _job(platform, _engine_output("warm", urn), machine_type, replicas)
        del resource

    try:
        run_pulumi(program, monitor_sink=monitors)
    except ArgsError as error:
        return monitors, error
    return monitors, None


def _jobs(monitors: list[RecordingMonitor]) -> list[Any]:
    return [r for r in monitors[0].registrations if "judged_digest" in r.inputs]


def test_a_job_on_the_resources_id_that_fits_no_pool_is_refused_as_in_python() -> None:
    monitors, error = _run("n1-standard-4", 1.0)
    assert error is not None, "the job was not held to the resource's pools"
    chief, workers = error.errors  # one problem each, at the key the caller wrote
    assert (chief["property_path"], workers["property_path"]) == ("chief", "workers")
    assert chief["reason"].startswith(
        "n1-standard-4 + 2 x NVIDIA_TESLA_T4, pd-ssd 200 GB matches no pool of persistent "
        "resource 'warm' (pools[0]: n1-standard-8 + 2 x NVIDIA_TESLA_T4, pd-ssd 200 GB)"
    )
    assert _jobs(monitors) == []


def test_a_job_on_the_resources_id_wanting_too_many_replicas_is_refused() -> None:
    monitors, error = _run("n1-standard-8", 5.0)
    assert error is not None
    (found,) = error.errors
    assert found["property_path"] == "workers.replicaCount"
    assert "pool pools[0] of persistent resource 'warm' holds at most 4" in found["reason"]
    assert _jobs(monitors) == []


def test_a_job_that_fits_carries_the_id_and_waits_for_the_resource() -> None:
    monitors, error = _run("n1-standard-8", 1.0)
    assert error is None
    (job,) = _jobs(monitors)
    assert job.inputs["spec"]["jobSpec"]["persistentResourceId"] == "warm"
    (cloud,) = [r for r in monitors[0].registrations if r.name == "warm-resource"]
    assert cloud.type == "gcp:vertex/aiPersistentResource:AiPersistentResource"
    assert cloud.urn in job.dependencies


def test_an_id_of_no_resource_of_this_program_is_vertexs_to_know() -> None:
    monitors: list[RecordingMonitor] = []
    run_pulumi(lambda: _job(_platform(), "elsewhere", "n1-standard-4", 1.0), monitor_sink=monitors)
    (job,) = _jobs(monitors)
    assert job.inputs["spec"]["jobSpec"]["persistentResourceId"] == "elsewhere"


def test_a_pool_that_could_never_be_provisioned_is_refused_at_its_key() -> None:
    def program() -> None:
        pool = {"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_H100_80GB"}}
        PersistentResource("warm", {"platform": _platform(), "pools": [pool]})

    with pytest.raises(ArgsError) as caught:
        run_pulumi(program)
    paths = [e["property_path"] for e in caught.value.errors]
    assert paths and all(p.startswith("pools[0].") for p in paths), paths


def test_a_tuning_jobs_trials_are_held_to_the_resources_pools() -> None:
    def program() -> None:
        platform = _platform()
        _resource(platform)
        urn = "urn:pulumi:test::p::vertex-training:index:PersistentResource::warm"
        chief = {"machine_type": "n1-standard-4", "accelerator": T4, "boot_disk_size_gb": 200.0}
        study = {
            "metrics": [{"metric_id": "accuracy", "goal": "maximize"}],
            "parameters": [
                {
                    "type": "DoubleParameter",
                    "parameter_id": "lr",
                    "min_value": 0.1,
                    "max_value": 1.0,
                }
            ],
        }
        trial = {"chief": chief, "persistent_resource_id": _engine_output("warm", urn)}
        HyperparameterTuningJob(
            "study",
            {
                "platform": platform,
                "trial": trial,
                "study": study,
                "max_trial_count": 2.0,
                "parallel_trial_count": 1.0,
            },
        )

    with pytest.raises(ArgsError) as caught:
        run_pulumi(program)
    (found,) = caught.value.errors
    assert found["property_path"] == "trial.chief"
    assert "matches no pool of persistent resource 'warm'" in found["reason"]
