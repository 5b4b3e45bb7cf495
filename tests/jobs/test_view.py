"""The read-only view of a body: what it reads, in which spelling, and every field it
cannot read reported at its API path (the view goes on reading after the first)."""

from __future__ import annotations

import sys

import pytest

from tests.bodies import cassava, categorical, horses_or_humans, integer, job_spec, pool, study
from tests.bodies import tuning_job as tuning_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.view import (
    BodyError,
    ConditionalParameterSpec,
    CustomJobView,
    DiscreteParameterSpec,
    DoubleParameterSpec,
    EarlyStoppingKind,
    IntegerParameterSpec,
    MetricGoal,
    ScaleType,
    SearchAlgorithm,
    TuningJobView,
    json_name,
    read_view,
    snake_case,
    view_of,
)

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def test_a_custom_job() -> None:
    view = view_of(CUSTOM, cassava())
    assert isinstance(view, CustomJobView) and view.trial_job is view.job
    assert view.display_name == "multiworker-cassava"
    assert view.labels == (("codelab", "cassava"),)
    chief, workers = view.job.worker_pools
    assert chief is not None and workers is not None
    assert chief.path == "jobSpec.workerPoolSpecs[0]"
    assert (chief.machine.machine_type, chief.machine.accelerator_type) == (
        "n1-standard-8",
        "NVIDIA_TESLA_V100",
    )
    assert chief.machine.accelerator_count == 1 and chief.replica_count == 1
    assert chief.container is not None and chief.container.args[:2] == ("--workload", "cassava")
    assert chief.disk is None  # not declared: the service's default
    assert view.job.base_output_directory == "gs://p-bucket/jobs/cassava"
    assert view.job.service_account == "training@p.iam.gserviceaccount.com"


def test_a_tuning_job() -> None:
    view = view_of(TUNING, horses_or_humans())
    assert isinstance(view, TuningJobView)
    assert (view.max_trial_count, view.parallel_trial_count) == (6, 2)
    assert view.study.algorithm is SearchAlgorithm.BAYESIAN
    assert view.study.metrics[0].goal is MetricGoal.MAXIMIZE
    assert view.study.parameters == (
        DoubleParameterSpec("learning_rate", 0.001, 1, ScaleType.LOG),
        DoubleParameterSpec("momentum", 0, 1, ScaleType.LINEAR),
        DiscreteParameterSpec("num_units", (64.0, 128.0, 512.0)),
    )
    assert view.study.early_stopping is EarlyStoppingKind.NONE


def test_conditional_parameters_and_early_stopping() -> None:
    body = tuning_body(
        job_spec(pool()),
        study(
            categorical("opt", ["sgd", "adam"], sgd=[integer("layers", 1, 4)]),
            medianAutomatedStoppingSpec={"useElapsedDuration": True},
        ),
    )
    view = view_of(TUNING, body)
    assert isinstance(view, TuningJobView)
    [opt] = view.study.parameters
    assert opt.conditional == (
        ConditionalParameterSpec(IntegerParameterSpec("layers", 1, 4, ScaleType.LINEAR), ("sgd",)),
    )
    assert view.study.early_stopping is EarlyStoppingKind.MEDIAN
    assert view.study.early_stopping_uses_elapsed_duration


def test_numbers_as_the_engine_hands_them_and_snake_case_keys() -> None:
    body = cassava()
    chief = body["jobSpec"]["workerPoolSpecs"][0]
    chief["replica_count"] = 1.0
    del chief["replicaCount"]
    chief["machineSpec"]["acceleratorCount"] = 1.0
    view = view_of(CUSTOM, body)
    first = view.trial_job.worker_pools[0]
    assert first is not None and first.replica_count == 1
    assert first.machine.accelerator_count == 1


def test_durations_keep_fractions_and_zero() -> None:
    body = cassava()
    body["jobSpec"]["scheduling"] = {"timeout": "1.5s", "maxWaitDuration": "0s"}
    spec = view_of(CUSTOM, body).trial_job
    assert (spec.timeout_seconds, spec.max_wait_seconds) == (1.5, 0.0)


def test_an_unspecified_accelerator_reads_as_none() -> None:
    body = cassava(accelerator=None)
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = (
        "ACCELERATOR_TYPE_UNSPECIFIED"
    )
    chief = view_of(CUSTOM, body).trial_job.worker_pools[0]
    assert chief is not None and chief.machine.accelerator_type is None


def test_every_unreadable_field_is_reported_at_its_path() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "two"
    body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["machineType"] = 8
    body["jobSpec"]["scheduling"] = {"timeout": "1h"}
    body["labels"] = {"team": 3}
    _, unreadable = read_view(CUSTOM, body)
    assert {f.path for f in unreadable} == {
        "jobSpec.workerPoolSpecs[0].replicaCount",
        "jobSpec.workerPoolSpecs[1].machineSpec.machineType",
        "jobSpec.scheduling.timeout",
        "labels.team",
    }
    assert all(f.severity == "error" for f in unreadable)
    with pytest.raises(BodyError, match=r"jobSpec\.scheduling\.timeout"):
        view_of(CUSTOM, body)


def test_int64_range_and_enum_names() -> None:
    body = horses_or_humans()
    body["maxTrialCount"] = str(2**63)
    body["studySpec"]["algorithm"] = "GRID"
    _, unreadable = read_view(TUNING, body)
    messages = {f.path: f.message for f in unreadable}
    assert "int64" in messages["maxTrialCount"]
    assert "GRID_SEARCH" in messages["studySpec.algorithm"]


def test_not_an_object() -> None:
    _, unreadable = read_view(CUSTOM, ["not", "a", "body"])
    assert [f.path for f in unreadable] == [""]


def test_names() -> None:
    assert json_name("replica_count") == "replicaCount"
    assert snake_case("replicaCount") == "replica_count"


def test_the_view_does_not_import_the_protos() -> None:
    # The program reads views at preview time; aiplatform_v1 costs a second to import.
    import subprocess

    code = (
        "import sys, vertex_training.jobs.view, vertex_training.jobs.rules.job;"
        "print('google.cloud.aiplatform_v1' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
