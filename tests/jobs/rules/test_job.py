"""The rules over a job's view (``read_view`` then ``job_findings``), as the provider's
check and the stack-config reader apply them: regressions of the spec-based rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bodies import (
    categorical,
    custom_job,
    double,
    horses_or_humans,
    integer,
    job_spec,
    pool,
    study,
    tuning_job,
)
from vertex_training.jobs.model import JobKind
from vertex_training.jobs.rules.hardware import Finding
from vertex_training.jobs.rules.job import errors_of, job_findings
from vertex_training.jobs.view import read_view

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def findings(
    body: dict[str, Any],
    kind: JobKind = CUSTOM,
    *,
    region: str | None = None,
    strict: bool = False,
) -> list[Finding]:
    view, unreadable = read_view(kind, body)
    assert unreadable == [] and view is not None
    return job_findings(view, region=region, remote=True, strict=strict)


def errors(body: dict[str, Any], kind: JobKind = CUSTOM, **kwargs: Any) -> list[Finding]:
    return errors_of(findings(body, kind, **kwargs))


# ------------------------------------------------------------- hardware the rules know


@pytest.mark.parametrize(
    ("machine", "accelerator", "count"),
    [
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        ("a4-highgpu-8g", "NVIDIA_B200", 8),
        ("a4x-highgpu-4g", "NVIDIA_GB200", 4),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000", 1),
        ("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4),
    ],
)
def test_current_accelerators_are_accepted(machine: str, accelerator: str, count: int) -> None:
    chief = pool(machine, accelerator, count)
    if accelerator.startswith("TPU_"):
        chief["machineSpec"]["tpuTopology"] = "2x2"
    assert findings(custom_job(chief)) == []


def test_h100_in_us_east5_is_accepted() -> None:
    body = custom_job(pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8))
    assert errors(body, region="us-east5") == []


def test_an_evaluator_pool_with_two_replicas_is_accepted() -> None:
    body = custom_job(pool(), pool(replicas=2), {}, pool(replicas=2))
    assert findings(body) == []


@pytest.mark.parametrize("value", ["café", "日本", "ünïcödé-1_2"])
def test_international_lowercase_label_values_are_accepted(value: str) -> None:
    assert findings(custom_job(pool(), labels={"team": value})) == []


@pytest.mark.parametrize("value", ["Café", "a b", "x" * 64])
def test_bad_label_values_are_refused(value: str) -> None:
    [error] = errors(custom_job(pool(), labels={"team": value}))
    assert error.path == "labels.team"


# -------------------------------------------------------------------- what is refused


def test_an_unknown_machine_type_names_its_api_path() -> None:
    [error] = errors(custom_job(pool("n1-standard-5")))
    assert error.path == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"
    assert "n1-standard-5" in error.message


def test_a_machine_the_catalog_does_not_know_warns_or_strictly_fails() -> None:
    body = custom_job(pool("gpu-large"))
    [warning] = findings(body)
    assert warning.severity == "warning"
    assert warning.path == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"
    [error] = findings(body, strict=True)
    assert error.severity == "error" and error.path == warning.path


def test_a_timeout_beyond_the_api_range_is_refused_by_the_view() -> None:
    body = custom_job(pool(), scheduling={"timeout": "1000000000000s"})
    _, unreadable = read_view(CUSTOM, body)
    [finding] = unreadable
    assert finding.path == "jobSpec.scheduling.timeout"
    assert finding.severity == "error" and "1000000000000s" in finding.message


def test_fractional_timeouts_are_kept() -> None:
    view, unreadable = read_view(CUSTOM, custom_job(pool(), timeout_seconds=1.5))
    assert unreadable == [] and view is not None
    assert view.trial_job.timeout_seconds == 1.5


def test_max_trial_count_zero_is_refused_with_a_message() -> None:
    found = errors(horses_or_humans(max_trials=0, parallel=0), TUNING)
    paths = {f.path: f.message for f in found}
    assert "must be between 1" in paths["maxTrialCount"]
    assert "must be between 1" in paths["parallelTrialCount"]


def test_parallel_beyond_max_trials_is_refused() -> None:
    [error] = errors(horses_or_humans(max_trials=2, parallel=3), TUNING)
    assert error.path == "parallelTrialCount"


def test_a_chief_with_two_replicas_is_refused() -> None:
    [error] = errors(custom_job(pool(replicas=2)))
    assert error.path == "jobSpec.workerPoolSpecs[0].replicaCount"
    assert "chief" in error.message


def test_gpu_count_and_region_by_path() -> None:
    body = custom_job(pool(), pool("n1-standard-8", "NVIDIA_TESLA_V100", 3))
    [count] = errors(body)
    assert count.path == "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount"
    assert "valid counts: 1, 2, 4, 8" in count.message
    elsewhere = custom_job(pool("n1-standard-8", "NVIDIA_TESLA_V100", 1))
    [region] = errors(elsewhere, region="us-west2")
    assert "not offered in region us-west2" in region.message


def test_trailing_empty_pools_and_a_missing_chief() -> None:
    [trailing] = errors(custom_job(pool(), {}))
    assert trailing.path == "jobSpec.workerPoolSpecs[1]"
    missing = {f.path for f in errors(custom_job({}, pool()))}
    assert "jobSpec.workerPoolSpecs" in missing


def test_tuning_study_rules_by_path() -> None:
    body = tuning_job(
        job_spec(pool()),
        study(
            double("lr", 0, 1, "UNIT_LOG_SCALE"),
            integer("layers", 4, 1),
            categorical("opt", ["sgd", "sgd"]),
            algorithm="GRID_SEARCH",
        ),
    )
    paths = {f.path for f in errors(body, TUNING)}
    assert {
        "studySpec.parameters[0].scaleType",
        "studySpec.parameters[0]",  # grid over a double
        "studySpec.parameters[1].integerValueSpec.minValue",
        "studySpec.parameters[2].categoricalValueSpec.values",
    } <= paths


def test_conditional_parents_must_be_parent_values() -> None:
    body = tuning_job(
        job_spec(pool()),
        study(categorical("opt", ["sgd", "adam"], rmsprop=[integer("layers", 1, 4)])),
    )
    [error] = errors(body, TUNING)
    assert error.path == "studySpec.parameters[0].conditionalParameterSpecs[0]"


def test_the_codelab_study_has_no_findings() -> None:
    assert findings(horses_or_humans(), TUNING, region="us-central1") == []


# ------------------------------------------------- TensorBoard and Vertex Experiments

TB_EU = "projects/p/locations/europe-west4/tensorboards/42"
EXPERIMENT = "projects/p/locations/europe-west4/metadataStores/default/contexts/horses"
RUN = "projects/p/locations/europe-west4/metadataStores/default/contexts/horses-lr-sweep"


def test_tensorboard_and_experiment_in_the_jobs_region_are_accepted() -> None:
    body = custom_job(pool(), tensorboard=TB_EU, experiment=EXPERIMENT, experimentRun=RUN)
    assert findings(body, region="europe-west4") == []


def test_a_tensorboard_in_another_region_names_the_field_and_the_region() -> None:
    [error] = errors(custom_job(pool(), tensorboard=TB_EU), region="us-central1")
    assert error.path == "jobSpec.tensorboard"
    assert "lives in 'europe-west4'" in error.message
    assert "job's region 'us-central1'" in error.message


def test_an_experiment_in_another_region_names_the_field_and_the_region() -> None:
    body = custom_job(pool(), experiment=EXPERIMENT, experimentRun=RUN)
    found = {f.path: f.message for f in errors(body, region="us-central1")}
    assert set(found) == {"jobSpec.experiment", "jobSpec.experimentRun"}
    assert "it must be in the job's region 'us-central1'" in found["jobSpec.experiment"]


def test_tensorboard_without_base_output_directory_is_refused() -> None:
    [error] = errors(custom_job(pool(), output=None, tensorboard=TB_EU))
    assert error.path == "jobSpec.baseOutputDirectory"
    assert "AIP_TENSORBOARD_LOG_DIR" in error.message


def test_an_experiment_run_without_its_experiment_is_refused() -> None:
    [error] = errors(custom_job(pool(), experimentRun=RUN))
    assert error.path == "jobSpec.experimentRun"
    assert "needs jobSpec.experiment" in error.message


def test_an_experiment_run_of_another_experiment_is_refused() -> None:
    other = EXPERIMENT.replace("/horses", "/cassava")
    [error] = errors(custom_job(pool(), experiment=other, experimentRun=RUN))
    assert error.path == "jobSpec.experimentRun"
    assert "not a run of the experiment 'cassava'" in error.message


@pytest.mark.parametrize(
    ("field", "value", "shape"),
    [
        ("tensorboard", "tb-42", "projects/P/locations/L/tensorboards/ID"),
        ("experiment", "horses", "metadataStores/default/contexts/NAME"),
    ],
)
def test_malformed_resource_names_show_the_shape(field: str, value: str, shape: str) -> None:
    [error] = errors(custom_job(pool(), **{field: value}), region="europe-west4")
    assert error.path == f"jobSpec.{field}"
    assert shape in error.message


def test_tuning_trials_are_checked_under_trial_job_spec() -> None:
    body = tuning_job(job_spec(pool(), tensorboard=TB_EU), study(double("x", 0, 1)))
    [error] = errors(body, TUNING, region="us-central1")
    assert error.path == "trialJobSpec.tensorboard"
