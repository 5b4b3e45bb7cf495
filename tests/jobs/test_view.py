"""The read-only view of a body: what it reads, in which spelling, and every field it
cannot read reported at its API path (the view goes on reading after the first)."""

from __future__ import annotations

from tests import modules_loaded_by
from tests.bodies import cassava, categorical, horses_or_humans, integer, job_spec, pool, study
from tests.bodies import tuning_job as tuning_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.view import (
    CustomJobView,
    HyperparameterTuningJobView,
    MetricGoal,
    ParameterSpec,
    ScaleType,
    SearchAlgorithm,
    read_view,
)

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def test_a_custom_job() -> None:
    view = CustomJobView.model_validate(cassava())
    assert isinstance(view, CustomJobView) and view.trial_job is view.job_spec
    assert view.display_name == "multiworker-cassava"
    assert view.labels == {"codelab": "cassava"}
    chief, workers = view.job_spec.worker_pool_specs
    assert chief is not None and workers is not None
    assert (chief.machine_spec.machine_type, chief.machine_spec.accelerator_type) == (
        "n1-standard-8",
        "NVIDIA_TESLA_V100",
    )
    assert chief.machine_spec.accelerator_count == 1 and chief.replica_count == 1
    assert chief.container_spec is not None
    assert chief.container_spec.args[:2] == ("--workload", "cassava")
    assert chief.disk_spec is None  # not declared: the service's default
    assert view.job_spec.base_output_directory.output_uri_prefix == "gs://p-bucket/jobs/cassava"
    assert view.job_spec.service_account == "training@p.iam.gserviceaccount.com"


def test_a_tuning_job() -> None:
    view = HyperparameterTuningJobView.model_validate(horses_or_humans())
    assert isinstance(view, HyperparameterTuningJobView)
    assert (view.max_trial_count, view.parallel_trial_count) == (6, 2)
    assert view.study_spec.algorithm is SearchAlgorithm.BAYESIAN
    assert view.study_spec.metrics[0].goal is MetricGoal.MAXIMIZE
    learning_rate, momentum, units = view.study_spec.parameters
    assert learning_rate.double_value_spec is not None
    assert (learning_rate.double_value_spec.min_value, learning_rate.scale_type) == (
        0.001,
        ScaleType.LOG,
    )
    assert (momentum.domain, momentum.scale_type) == ("doubleValueSpec", ScaleType.LINEAR)
    assert units.discrete_value_spec is not None
    assert units.discrete_value_spec.values == (64.0, 128.0, 512.0)
    assert view.study_spec.early_stopping is None


def test_conditional_parameters_and_early_stopping() -> None:
    body = tuning_body(
        job_spec(pool()),
        study(
            categorical("opt", ["sgd", "adam"], sgd=[integer("layers", 1, 4)]),
            medianAutomatedStoppingSpec={"useElapsedDuration": True},
        ),
    )
    view = HyperparameterTuningJobView.model_validate(body)
    assert isinstance(view, HyperparameterTuningJobView)
    [opt] = view.study_spec.parameters
    [child] = opt.conditional_parameter_specs
    assert child.parameter_spec == ParameterSpec.model_validate(integer("layers", 1, 4))
    assert child.parent_values == ("sgd",)
    assert view.study_spec.early_stopping == "medianAutomatedStoppingSpec"


def test_a_parameter_has_exactly_one_domain() -> None:
    body = horses_or_humans()
    del body["studySpec"]["parameters"][0]["doubleValueSpec"]
    _, unreadable = read_view(TUNING, body)
    [finding] = unreadable
    assert finding.path == "studySpec.parameters[0]"
    assert finding.message.startswith("a parameter needs exactly one of doubleValueSpec")


def test_numbers_as_the_engine_hands_them_and_snake_case_keys() -> None:
    body = cassava()
    chief = body["jobSpec"]["workerPoolSpecs"][0]
    chief["replica_count"] = 1.0
    del chief["replicaCount"]
    chief["machineSpec"]["acceleratorCount"] = 1.0
    view = CustomJobView.model_validate(body)
    first = view.trial_job.worker_pool_specs[0]
    assert first is not None and first.replica_count == 1
    assert first.machine_spec.accelerator_count == 1


def test_an_empty_pool_holds_a_place() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][1] = {}
    assert CustomJobView.model_validate(body).trial_job.worker_pool_specs[1] is None


def test_durations_keep_fractions_and_zero() -> None:
    body = cassava()
    body["jobSpec"]["scheduling"] = {"timeout": "1.5s", "maxWaitDuration": "0s"}
    scheduling = CustomJobView.model_validate(body).trial_job.scheduling
    assert (scheduling.timeout, scheduling.max_wait_duration) == (1.5, 0.0)


def test_an_unspecified_accelerator_reads_as_none() -> None:
    body = cassava(accelerator=None)
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = (
        "ACCELERATOR_TYPE_UNSPECIFIED"
    )
    chief = CustomJobView.model_validate(body).trial_job.worker_pool_specs[0]
    assert chief is not None and chief.machine_spec.accelerator_type is None
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = 0
    chief = CustomJobView.model_validate(body).trial_job.worker_pool_specs[0]
    assert chief is not None and chief.machine_spec.accelerator_type is None


def test_every_unreadable_field_is_reported_at_its_path() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][0]["replica_count"] = "two"
    del body["jobSpec"]["workerPoolSpecs"][0]["replicaCount"]
    body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["machineType"] = 8
    body["jobSpec"]["scheduling"] = {"timeout": "1h"}
    body["labels"] = {"team_name": 3}
    _, unreadable = read_view(CUSTOM, body)
    assert {f.path: f.message for f in unreadable} == {
        "jobSpec.workerPoolSpecs[0].replicaCount": "must be an integer, got 'two'",
        "jobSpec.workerPoolSpecs[1].machineSpec.machineType": "must be a string, got 8",
        "jobSpec.scheduling.timeout": "must be a duration like '3600s' or '1.5s', got '1h'",
        "labels.team_name": "must be a string, got 3",  # a label key keeps its spelling
    }
    assert all(f.severity == "error" for f in unreadable)


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


def test_the_view_does_not_import_the_protos() -> None:
    # The program reads views at preview time; aiplatform_v1 costs a second to import.
    code = "import vertex_training.jobs.view, vertex_training.jobs.rules.job"
    assert modules_loaded_by(code, ("google.cloud.aiplatform_v1",)) == []
