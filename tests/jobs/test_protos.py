"""Bodies through the real ``aiplatform_v1`` protos: unknown fields refused by their API
path with a suggestion, one canonical text per meaning."""

from __future__ import annotations

import pytest

from tests.bodies import cassava, horses_or_humans
from vertex_training.jobs.protos import BodyParseError, parse_body
from vertex_training.jobs.records import JobKind

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def test_an_unknown_field_is_named_with_a_suggestion() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["acceleratorTyp"] = "NVIDIA_TESLA_T4"
    with pytest.raises(BodyParseError) as caught:
        parse_body(CUSTOM, body)
    text = str(caught.value)
    assert "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorTyp: MachineSpec has no" in text
    assert "did you mean 'acceleratorType'?" in text


def test_the_unknown_field_is_a_finding_at_its_path_with_what_is_valid() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] = [{"name": "A", "valu": "1"}]
    with pytest.raises(BodyParseError) as caught:
        parse_body(CUSTOM, body)
    finding = caught.value.finding
    assert finding.path == "jobSpec.workerPoolSpecs[0].containerSpec.env[0].valu"
    assert finding.message == "EnvVar has no field 'valu' (did you mean 'value'?)"
    assert finding.valid == "name, value"


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("replicaCount", "abc", "'abc' is not an integer"),
        ("replicaCount", 2.5, "2.5 is not an integer"),
        ("machineSpec", "n1", "'n1' is not a MachineSpec in its JSON form"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_by_its_path(
    where: str, value: object, message: str
) -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][0][where] = value
    with pytest.raises(BodyParseError) as caught:
        parse_body(CUSTOM, body)
    finding = caught.value.finding
    assert (finding.path, finding.message) == (f"jobSpec.workerPoolSpecs[0].{where}", message)
    assert str(caught.value) == f"not a valid CustomJob body: {finding}"


def test_a_list_given_as_an_object_and_a_duration_as_a_number() -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"] = {"chief": {}}
    with pytest.raises(BodyParseError) as caught:
        parse_body(CUSTOM, body)
    assert caught.value.finding.path == "jobSpec.workerPoolSpecs"
    assert "is not a list, each a WorkerPoolSpec" in caught.value.finding.message
    body = cassava()
    body["jobSpec"]["scheduling"] = {"timeout": 600}
    with pytest.raises(BodyParseError) as caught:
        parse_body(CUSTOM, body)
    assert caught.value.finding.path == "jobSpec.scheduling.timeout"
    assert caught.value.finding.message == "600 is not a duration in seconds ('600s', '0.5s')"


def test_a_top_level_unknown_field() -> None:
    body = horses_or_humans()
    body["maxTrials"] = 3
    with pytest.raises(BodyParseError, match="did you mean 'maxTrialCount'"):
        parse_body(TUNING, body)


def test_a_bad_enum_name_is_refused() -> None:
    body = horses_or_humans()
    body["studySpec"]["metrics"][0]["goal"] = "MAXIMISE"
    with pytest.raises(BodyParseError, match="MAXIMISE") as caught:
        parse_body(TUNING, body)
    assert caught.value.finding.path == "studySpec.metrics[0].goal"
    assert caught.value.finding.valid == "GOAL_TYPE_UNSPECIFIED, MAXIMIZE, MINIMIZE"


def test_the_catalog_names_every_accelerator_type_of_the_api() -> None:
    # The rules refuse an accelerator the catalog does not name: it must name them all.
    from google.cloud.aiplatform_v1 import types as v1

    from vertex_training.jobs.rules.catalog import catalog

    api = {e.name for e in v1.AcceleratorType} - {"ACCELERATOR_TYPE_UNSPECIFIED"}
    assert set(catalog().accelerators) == api


def test_the_view_enums_are_the_api_enums() -> None:
    from google.cloud.aiplatform_v1 import types as v1

    from vertex_training.jobs import view

    pairs = {
        view.SchedulingStrategy: v1.Scheduling.Strategy,
        view.SearchAlgorithm: v1.StudySpec.Algorithm,
        view.ScaleType: v1.StudySpec.ParameterSpec.ScaleType,
        view.MetricGoal: v1.StudySpec.MetricSpec.GoalType,
        view.MeasurementSelection: v1.StudySpec.MeasurementSelectionType,
    }
    assert set(pairs) == set(view.ProtoEnum.__subclasses__())
    for ours, theirs in pairs.items():
        mine = [(m.value, m.number) for m in ours]
        assert mine == [(e.name, e.value) for e in theirs], ours.__name__


def test_an_enum_given_by_number_reads_as_its_name() -> None:
    from tests.bodies import double, job_spec, pool, study, tuning_job
    from vertex_training.jobs.view import HyperparameterTuningJobView, SearchAlgorithm

    body = tuning_job(job_spec(pool()), study(double("x", 0, 1), algorithm=2))
    view = HyperparameterTuningJobView.model_validate(body)
    assert isinstance(view, HyperparameterTuningJobView)
    assert view.study_spec.algorithm is SearchAlgorithm.GRID  # GRID_SEARCH is 2, not 1
    assert parse_body(TUNING, body).study_spec.algorithm.name == "GRID_SEARCH"
