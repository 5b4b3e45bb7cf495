"""A job placed on a persistent resource is held to its pools where the job meets its
platform: a pool that matches none, or wants more replicas than its match holds, is
refused with one message naming the job's pool and the resource's; a study whose parallel
trials outgrow a pool is warned about (trials would queue)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.capacity.resources import gpu_pool, platform
from tests.jobs.facts import IMAGE
from tests.pulumi_mocks import RecordingMonitor, run_pulumi
from vertex_training._checks import InvalidArgumentsError
from vertex_training.capacity import PersistentResource, PersistentResourceArgs, ResourcePool
from vertex_training.jobs.api import CustomJobArgs, HyperparameterTuningJobArgs, TrialJob, resolve
from vertex_training.jobs.pools import Accelerator, WorkerPool
from vertex_training.jobs.resources import CustomJob
from vertex_training.jobs.studies import DoubleParameter, Metric, Study

T4 = Accelerator("NVIDIA_TESLA_T4", 2)


def _resource() -> PersistentResource:
    args = PersistentResourceArgs(
        platform=platform(),
        pools=[gpu_pool(), ResourcePool(id="cpu", machine_type="e2-standard-4", replica_count=2)],
    )
    return PersistentResource("warm", args)


def _pool(**changes: Any) -> WorkerPool:
    values: dict[str, Any] = {
        "machine_type": "n1-standard-8",
        "accelerator": T4,
        "boot_disk_size_gb": 200,
        "image": IMAGE,
    }
    return WorkerPool(**{**values, **changes})


def _refusal(**run: Any) -> tuple[str, list[RecordingMonitor]]:
    """The error of a program declaring the resource and a job on it; the monitor."""
    monitors: list[RecordingMonitor] = []

    def program() -> None:
        resource = _resource()
        args = CustomJobArgs(platform=platform(), persistent_resource_id=resource, **run)
        CustomJob("train", args)

    with pytest.raises(Exception) as caught:
        run_pulumi(program, monitor_sink=monitors)
    return str(caught.value), monitors


def _jobs(monitors: list[RecordingMonitor]) -> list[str]:
    return [r.name for r in monitors[0].registrations if r.type.endswith(":CustomJob")]


def test_a_job_that_fits_no_pool_is_refused_naming_both_sides() -> None:
    message, monitors = _refusal(chief=_pool(machine_type="n1-standard-4"))
    lines = [line for line in message.splitlines() if "matches no pool" in line]
    assert len(lines) == 1
    # The job's pool, by the caller's name, and what it asks for; every pool of the resource.
    assert "chief" in lines[0] and "n1-standard-4 + 2 x NVIDIA_TESLA_T4, pd-ssd 200 GB" in lines[0]
    assert "pools[0]: n1-standard-8 + 2 x NVIDIA_TESLA_T4, pd-ssd 200 GB" in lines[0]
    assert "'cpu': e2-standard-4, pd-ssd 100 GB" in lines[0]
    assert _jobs(monitors) == []


def test_a_disk_of_another_size_fits_no_pool() -> None:
    message, _ = _refusal(chief=_pool(boot_disk_size_gb=None))
    assert "n1-standard-8 + 2 x NVIDIA_TESLA_T4, pd-ssd 100 GB matches no pool" in message


def test_a_job_that_wants_too_many_replicas_is_refused_naming_both_sides() -> None:
    message, monitors = _refusal(chief=_pool(), workers=_pool(replica_count=5))
    lines = [line for line in message.splitlines() if "holds at most" in line]
    assert len(lines) == 1
    assert (
        lines[0]
        .strip()
        .startswith("CustomJobArgs.workers.replica_count: 5 replicas of n1-standard-8")
    )
    assert (
        "pool pools[0] of persistent resource 'warm' holds at most 4 (autoscaling maximum 4)"
        in lines[0]
    )
    assert _jobs(monitors) == []


def test_a_job_that_fits_carries_the_resource_id_and_waits_for_it() -> None:
    def program() -> None:
        resource = _resource()
        CustomJob(
            "train",
            CustomJobArgs(platform=platform(), chief=_pool(), persistent_resource_id=resource),
        )

    run = run_pulumi(program)
    job = run.named("train")
    assert job.inputs["spec"]["jobSpec"]["persistentResourceId"] == "warm"
    assert run.named("warm-resource").urn in job.dependencies


def test_a_job_on_it_takes_no_input_from_it_so_a_replacement_replaces_no_job() -> None:
    """The job's spec holds the resource's id as plain text: no input of the job comes from
    the resource, so replacing the resource (its id stays) gives the job no new input."""
    monitors: list[RecordingMonitor] = []
    inputs_from: dict[str, set[str]] = {}

    def program() -> None:
        monitor = monitors[0]
        register = monitor.RegisterResource

        def recording(request: Any) -> Any:
            deps = request.propertyDependencies
            inputs_from[request.name] = {urn for key in deps for urn in deps[key].urns}
            return register(request)

        monitor.RegisterResource = recording  # type: ignore[method-assign]
        resource = _resource()
        args = CustomJobArgs(platform=platform(), chief=_pool(), persistent_resource_id=resource)
        CustomJob("train", args)

    run = run_pulumi(program, monitor_sink=monitors)
    assert run.named("warm-resource").urn in run.named("train").dependencies  # created after
    assert inputs_from["train"] == set()


def _study(parallel: int, resource: PersistentResource) -> HyperparameterTuningJobArgs:
    return HyperparameterTuningJobArgs(
        platform=platform(),
        trial=TrialJob(chief=_pool(), workers=_pool(), persistent_resource_id=resource),
        study=Study(
            metrics=[Metric("accuracy", "maximize")],
            parameters=[
                DoubleParameter(parameter_id="learning_rate", min_value=0.001, max_value=0.1)
            ],
        ),
        max_trial_count=6,
        parallel_trial_count=parallel,
    )


def test_a_study_whose_parallel_trials_outgrow_the_pool_is_warned_about() -> None:
    resources: list[PersistentResource] = []
    run_pulumi(lambda: resources.append(_resource()))
    # Two replicas a trial (chief and a worker) on a pool of at most 4: 2 trials fit.
    assert [
        f for f in resolve(_study(2, resources[0]), "study").findings if "queue" in f.message
    ] == []
    (warning,) = [
        f for f in resolve(_study(3, resources[0]), "study").findings if "queue" in f.message
    ]
    assert warning.severity == "warning" and warning.path == "parallelTrialCount"
    assert "3 trials at a time x 2 replicas need 6 of pool pools[0]" in warning.message


@pytest.mark.parametrize(
    ("pool", "words"),
    [
        (gpu_pool(machine_type="n1-standrad-8"), "pools[0].machine_type"),
        (gpu_pool(accelerator=Accelerator("NVIDIA_TESLA_T4", 3)), "pools[0].accelerator"),
        (gpu_pool(boot_disk_type="pd-fast"), "pools[0].boot_disk_type"),
    ],
)
def test_a_pool_that_could_never_be_provisioned_is_refused(pool: ResourcePool, words: str) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        PersistentResourceArgs(platform=platform(), pools=[pool])
    assert words in str(caught.value)
    assert caught.value.findings and caught.value.findings[0].caller.startswith(words)


def test_a_specific_reservation_must_name_its_reservations() -> None:
    from vertex_training.jobs.pools import ReservationAffinity

    pool = gpu_pool(reservation_affinity=ReservationAffinity(type="SPECIFIC_RESERVATION"))
    with pytest.raises(InvalidArgumentsError) as caught:
        PersistentResourceArgs(
            platform=platform(environment="local", local_root=None), pools=[pool]
        )
    callers = {f.caller for f in caught.value.findings}
    assert callers == {"pools[0].reservation_affinity.key", "pools[0].reservation_affinity.values"}


def test_a_label_vertex_refuses_is_refused_at_its_key() -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        PersistentResourceArgs(platform=platform(), pools=[gpu_pool()], labels={"Team": "x"})
    assert [f.caller for f in caught.value.findings] == ["labels.Team"]
