"""Stack YAML jobs are the typed Args in camelCase: every Args field can be given from
YAML (walked from the types, not listed), the YAML and Python routes build the same body,
messages name YAML paths, and a stack file in the old shape is refused with what to write."""

from __future__ import annotations

import dataclasses
import itertools
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.jobs.facts import handles, platform_facts
from vertex_training._checks import alternatives, arguments, field_types
from vertex_training.findings import render
from vertex_training.jobs import api
from vertex_training.jobs.api import PlatformFacts
from vertex_training.jobs.body import camel
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.declarations import JobDeclaration, job_problems, read_job
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def _sample(expected: object, name: str, depth: int) -> Any:
    """A YAML value of type ``expected`` (every field of a dataclass set)."""
    options = [o for o in alternatives(expected) if o is not type(None)]
    classes = [o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)]
    if classes:
        chosen = max(classes, key=lambda c: len(dataclasses.fields(c)))
        body = _sample_of(chosen, depth)
        return {"type": chosen.__name__, **body} if len(classes) > 1 else body
    option = options[0]
    origin = typing.get_origin(option)
    if origin is typing.Literal:
        return typing.get_args(option)[0]
    if origin in (Sequence, list, tuple):
        (inner,) = typing.get_args(option)
        members = [o for o in alternatives(inner) if dataclasses.is_dataclass(o)]
        if len(members) > 1:  # one of each kind: every parameter class is readable
            return [{"type": m.__name__, **_sample_of(m, depth)} for m in members]  # type: ignore[arg-type]
        return [_sample(inner, name, depth)]
    if origin in (Mapping, dict):
        key_type, value_type = typing.get_args(option)
        if depth > 0 and name == "conditional":
            return {}
        # A parent value the parent has (its sampled values, from its minimum).
        key = {int: 1, float: 1.5}.get(key_type, "v_values")  # type: ignore[call-overload]
        return {key: _sample(value_type, name, depth + 1)}
    if name in _VALID:  # a value the rules where the part is built take
        return _VALID[name]
    if name in ("parameter_id", "metric_id"):  # unique in a study
        return f"{name}_{next(_IDS)}"
    if name in ("min_value", "max_value"):
        return {int: 1, float: 0.5}[option] if name == "min_value" else {int: 9, float: 9.5}[option]  # type: ignore[index]
    return {str: f"v_{name}", int: 2, float: 1.5, bool: True}.get(option, "any")  # type: ignore[call-overload]


_IDS = itertools.count()
_VALID = {
    "boot_disk_type": "pd-ssd",
    "boot_disk_size_gb": 100,
    # A machine the catalog knows, with GPUs it takes (a pool is judged where it is built).
    "machine_type": "n1-standard-8",
    "type": "NVIDIA_TESLA_V100",
    "tpu_topology": None,
}


def _sample_of(cls: type, depth: int = 0) -> dict[str, Any]:
    types_of = field_types(cls)
    return {
        camel(f.name): _sample(types_of[f.name], f.name, depth)
        for f in arguments(cls)
        if f.name != "platform"
    }


def _same(value: Any, given: Any, path: str) -> None:
    """``value`` (read into the Args) holds everything ``given`` (YAML) said."""
    if isinstance(given, Mapping) and dataclasses.is_dataclass(value):
        names = {camel(f.name): f.name for f in dataclasses.fields(value)}
        if "type" not in names:  # a union member, chosen by its class name
            assert given.get("type", type(value).__name__) == type(value).__name__, path
        for key, item in given.items():
            if key in names:
                _same(getattr(value, names[key]), item, f"{path}.{key}")
    elif isinstance(given, list):
        assert len(value) == len(given), path
        for index, (a, b) in enumerate(zip(value, given, strict=True)):
            _same(a, b, f"{path}[{index}]")
    elif isinstance(given, Mapping):
        assert set(value) == set(given), path
        for key, item in given.items():
            _same(value[key], item, f"{path}.{key}")
    else:
        assert value == given, path


@pytest.mark.parametrize("cls", [vt.CustomJobArgs, vt.HyperparameterTuningJobArgs])
def test_every_field_of_the_python_args_can_be_given_from_yaml(cls: type) -> None:
    entry = _sample_of(cls)
    assert len(entry) >= 15  # the walk reached the fields (not an empty mapping)
    job, problems = read_job({"name": "every-field", **entry}, "jobs[0]")
    assert problems == [] and job is not None
    assert type(job.args) is cls
    labels = dict(entry["labels"])
    _same(job.args, {**entry, "labels": {"job": "every-field", **labels}}, "jobs[0]")


def test_union_members_are_chosen_by_their_class_name() -> None:
    for stopping in ("MedianStopping", "DecayCurveStopping", "ConvexStopping"):
        entry = _tuning({"earlyStopping": {"type": stopping, "useElapsedDuration": True}})
        job, problems = read_job(entry, "jobs[0]")
        assert problems == [] and job is not None
        assert type(job.args.study.early_stopping).__name__ == stopping  # type: ignore[union-attr]
    _, problems = read_job(_tuning({"earlyStopping": {"type": "Median"}}), "jobs[0]")
    [problem] = problems
    assert problem.caller == "jobs[0].study.earlyStopping.type"
    assert problem.valid == "one of MedianStopping, DecayCurveStopping, ConvexStopping"


def _tuning(study: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "t",
        "trial": {"chief": {"machineType": "n1-standard-4"}},
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "study": {
            "parameters": [
                {"type": "DoubleParameter", "parameterId": "lr", "minValue": 0.1, "maxValue": 1}
            ],
            **study,
        },
    }


def test_the_yaml_and_python_routes_build_the_same_body() -> None:
    text = """
    name: tuned
    trial:
      chief: {machineType: n1-standard-4, accelerator: {type: NVIDIA_TESLA_T4, count: 1},
              args: [--workload, horses_or_humans], env: {A: b}}
      scheduling: {strategy: SPOT, timeoutSeconds: 3600}
      network: false
    maxTrialCount: 6
    parallelTrialCount: 2
    study:
      metrics: [{metricId: accuracy, goal: maximize}]
      algorithm: random
      parameters:
        - {type: DoubleParameter, parameterId: lr, minValue: 0.001, maxValue: 1, scale: log}
        - {type: CategoricalParameter, parameterId: opt, values: [sgd, adam],
           conditional: {sgd: [{type: DoubleParameter, parameterId: m, minValue: 0, maxValue: 1}]}}
      earlyStopping: {type: MedianStopping}
    """
    declared, problems = read_job(yaml.safe_load(text), "jobs[0]")
    assert problems == [] and declared is not None
    python = vt.HyperparameterTuningJobArgs(
        trial=vt.TrialJob(
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 1),
                args=["--workload", "horses_or_humans"],
                env={"A": "b"},
            ),
            scheduling=vt.Scheduling(strategy="SPOT", timeout_seconds=3600),
            network=False,
        ),
        max_trial_count=6,
        parallel_trial_count=2,
        study=vt.Study(
            metrics=[vt.Metric("accuracy", "maximize")],
            algorithm="random",
            parameters=[
                vt.DoubleParameter("lr", 0.001, 1, scale="log"),
                vt.CategoricalParameter(
                    "opt", ["sgd", "adam"], conditional={"sgd": [vt.DoubleParameter("m", 0, 1)]}
                ),
            ],
            early_stopping=vt.MedianStopping(),
        ),
        labels={"job": "tuned"},
    )
    body = api.resolve(declared.args, declared.name, handles()).body
    assert body == api.resolve(python, declared.name, handles()).body
    parse_body(TUNING, body)
    assert "network" not in body["trialJobSpec"]


def test_a_key_of_an_older_shape_is_an_unknown_key_with_what_was_meant() -> None:
    old = {
        "name": "horses",
        "kind": "tuning",
        "timeoutSeconds": 3600,
        "trial": {"chief": {"machineType": "n1-standard-4", "acceleratorType": "V100"}},
        "maxTrialCount": 6,
        "parallelTrialCount": 2,
        "study": {"parameters": [{"parameterId": "lr", "type": "DoubleParameter", "min": 0}]},
    }
    _, problems = read_job(old, "jobs[0]")
    found = {p.caller: p.message for p in problems}
    assert found["jobs[0].kind"] == "unknown key"
    assert found["jobs[0].timeoutSeconds"].startswith("unknown key")
    assert (
        found["jobs[0].trial.chief.acceleratorType"] == "unknown key (did you mean 'accelerator'?)"
    )
    assert found["jobs[0].study.parameters[0].min"].startswith("unknown key")


def test_the_repo_stack_files_are_in_the_new_shape() -> None:
    for stack in ("local", "dev"):
        raw = yaml.safe_load((PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        jobs = raw["config"]["vertex-training:jobs"]
        assert jobs
        for index, item in enumerate(jobs):
            job, problems = read_job(item, f"jobs[{index}]")
            assert problems == [] and job is not None, (stack, problems)


@pytest.mark.parametrize(
    ("kind", "api_path", "key"),
    [
        (
            CUSTOM,
            "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount",
            "chief.accelerator.count",
        ),
        (
            TUNING,
            "trialJobSpec.workerPoolSpecs[1].machineSpec.machineType",
            "trial.workers.machineType",
        ),
        (CUSTOM, "jobSpec.workerPoolSpecs[2].containerSpec.env[1].name", "parameterServers.env"),
        (CUSTOM, "jobSpec.workerPoolSpecs[3].diskSpec.bootDiskSizeGb", "evaluator.bootDiskSizeGb"),
        (CUSTOM, "jobSpec.workerPoolSpecs[3]", "evaluator"),
        (CUSTOM, "jobSpec.workerPoolSpecs[0].containerSpec.imageUri", "chief.image"),
        (CUSTOM, "jobSpec.scheduling.timeout", "scheduling.timeoutSeconds"),
        (CUSTOM, "jobSpec.baseOutputDirectory.outputUriPrefix", "baseOutputDirectory"),
        (CUSTOM, "jobSpec.serviceAccount", "serviceAccount"),
        (TUNING, "studySpec.metrics[0].metricId", "study.metrics[0].metricId"),
        (TUNING, "studySpec.parameters[1]", "study.parameters[1]"),
        (CUSTOM, "encryptionSpec.kmsKeyName", "kmsKeyName"),
        (TUNING, "maxTrialCount", "maxTrialCount"),
        (CUSTOM, "displayName", "displayName"),
        (CUSTOM, "labels.Team", "labels.Team"),
        (CUSTOM, "", ""),
    ],
)
def test_config_path(kind: JobKind, api_path: str, key: str) -> None:
    cls = api.CustomJobArgs if kind is CUSTOM else api.HyperparameterTuningJobArgs
    assert caller_path(cls, api_path, "yaml") == key


def _declare(**fields: Any) -> JobDeclaration:
    job, problems = read_job(
        {"name": "x", "chief": {"machineType": "n1-standard-4"}, **fields}, "jobs[0]"
    )
    assert problems == [] and job is not None
    return job


def _facts(environment: str = "dev", strict: bool = False) -> PlatformFacts:
    return platform_facts(environment, strict=strict, labels={"stack": "dev"})


def _problems(jobs: tuple[JobDeclaration, ...], facts: PlatformFacts) -> list[Any]:
    return job_problems(jobs, facts)[1]


def test_job_problems_are_local_aware_and_name_config_keys() -> None:
    jobs = (_declare(baseOutputDirectory="/tmp/out"),)
    assert _problems(jobs, _facts("local")) == []
    [(key, finding)] = _problems(jobs, _facts())
    assert key == "jobs[0].baseOutputDirectory"
    assert finding.path == "jobSpec.baseOutputDirectory.outputUriPrefix"
    assert "gs://" in finding.message and finding.severity == "error"


def test_job_problems_map_hardware_to_the_pool_key() -> None:
    jobs = (_declare(), _declare(workers={"machineType": "n1-standard-8"}))
    found = {key: f for key, f in _problems(jobs, _facts())}
    assert "repeats" in found["jobs[1].name"].message
    # A machine no family has is refused where the reader builds the pool, at its key.
    _, problems = read_job(
        {
            "name": "x",
            "chief": {"machineType": "n1-standard-4"},
            "workers": {"machineType": "n1-standard-5"},
        },
        "jobs[0]",
    )
    [problem] = problems
    assert problem.caller == "jobs[0].workers.machineType"
    assert render(problem, "stack").endswith(
        "(Vertex field jobSpec.workerPoolSpecs[1].machineSpec.machineType)"
    )


def test_an_unlisted_size_of_a_partial_family_warns_strict_or_not() -> None:
    jobs = (_declare(chief={"machineType": "c2d-standard-3"}),)
    for strict in (False, True):
        [(key, warning)] = _problems(jobs, _facts(strict=strict))
        assert key == "jobs[0].chief.machineType" and warning.severity == "warning"


def test_a_machine_of_no_family_is_refused_strict_or_not() -> None:
    _, problems = read_job({"name": "x", "chief": {"machineType": "gpu-large"}}, "jobs[0]")
    [problem] = problems
    assert problem.caller == "jobs[0].chief.machineType"
    assert "matches no Vertex machine family" in problem.message


def test_unknown_keys_and_wrong_types_name_the_yaml_path() -> None:
    _, problems = read_job(
        {"name": "x", "chief": {"machineType": 4, "replicaCnt": 2}, "waitTimeoutSecond": 1},
        "jobs[0]",
    )
    found = {p.caller: p for p in problems}
    assert "did you mean 'replicaCount'" in found["jobs[0].chief.replicaCnt"].message
    assert "did you mean 'waitTimeoutSeconds'" in found["jobs[0].waitTimeoutSecond"].message
    assert found["jobs[0].chief.machineType"].message == "got the number 4"


def test_a_tuning_key_in_a_custom_job_says_how_the_entry_becomes_a_tuning_job() -> None:
    _, problems = read_job(
        {
            "name": "x",
            "chief": {"machineType": "n1-standard-4"},
            "scheduling": {"timeoutSeconds": 60},
            "maxTrialCount": 4,
            "maxFailedTrialCount": 1,
        },
        "jobs[0]",
    )
    found = {p.caller: p for p in problems}
    assert set(found) == {"jobs[0].maxTrialCount", "jobs[0].maxFailedTrialCount"}
    problem = found["jobs[0].maxTrialCount"]
    assert problem.message == (
        "applies only to a tuning job, and this entry is a custom job (it has no trial or study)"
    )
    assert problem.valid == (
        "to tune, move chief, scheduling under trial: {...} and add study: {parameters: "
        "[...]} (a tuning job entry has trial, study, maxTrialCount, parallelTrialCount); "
        "else drop maxTrialCount"
    )


def test_a_run_key_at_the_top_of_a_tuning_job_says_it_belongs_to_each_trial() -> None:
    entry = _tuning({})
    _, problems = read_job({**entry, "scheduling": {"strategy": "SPOT"}}, "jobs[0]")
    [problem] = problems
    assert problem.caller == "jobs[0].scheduling"
    assert problem.message == "a tuning job sets it for each trial, under trial"
    assert problem.valid == "trial: {scheduling: ...}"


def test_a_real_typo_of_a_job_key_still_gets_a_did_you_mean() -> None:
    _, problems = read_job(
        {"name": "x", "chief": {"machineType": "n1-standard-4"}, "displayNme": "x"}, "jobs[0]"
    )
    [problem] = problems
    assert problem.message == "unknown key (did you mean 'displayName'?)"
    _, problems = read_job({**_tuning({}), "maxTrialCont": 3}, "jobs[0]")
    [problem] = problems
    assert problem.message == "unknown key (did you mean 'maxTrialCount'?)"


def test_the_reference_lists_the_yaml_keys() -> None:
    text = (PROJECT_ROOT / "docs" / "reference.md").read_text()
    assert "| `machine_type` | `machineType` |" in text
    assert Path(PROJECT_ROOT / "docs" / "reference.md").exists()


# ------------------------------------------------------------ words for YAML users


def _read(entry: dict[str, Any]) -> dict[str, tuple[str, str]]:
    _, problems = read_job(entry, "jobs[0]")
    return {p.caller: (p.message, p.valid) for p in problems}


def test_yaml_values_are_named_in_yaml_words() -> None:
    found = _read({"name": "x", "chief": None, "labels": [1], "displayName": 4})
    assert found["jobs[0].chief"] == ("got null", "a mapping (WorkerPool)")
    assert found["jobs[0].labels"][0] == "got a list"
    assert found["jobs[0].displayName"] == ("got the number 4", "text or null")
    assert not any("NoneType" in p or "dict" in v for p, v in found.values())


def test_a_number_out_of_range_is_a_message() -> None:
    # 1e400 reaches the program as infinity (JSON through Pulumi's config).
    found = _read(
        {
            "name": "x",
            "chief": {"machineType": "n1-standard-4"},
            "scheduling": {"timeoutSeconds": float("inf")},
        }
    )
    assert found["jobs[0].scheduling.timeoutSeconds"][0] == "inf is out of range"
    assert "315576000000" in found["jobs[0].scheduling.timeoutSeconds"][1]


def test_a_boot_disk_type_vertex_does_not_document_is_refused() -> None:
    found = _read(
        {"name": "x", "chief": {"machineType": "n1-standard-4", "bootDiskType": "pd-fast"}}
    )
    problem, valid = found["jobs[0].chief.bootDiskType"]
    assert "'pd-fast' is not a boot disk type Vertex documents" in problem
    assert valid == "pd-ssd, pd-standard, hyperdisk-balanced"
    assert (
        _read({"name": "x", "chief": {"machineType": "n1-standard-4", "bootDiskType": "pd-ssd"}})
        == {}
    )


@pytest.mark.parametrize("key", [64, "64"], ids=["yaml", "through-json"])
def test_conditional_parameters_under_a_numeric_parent_can_be_declared(key: object) -> None:
    child = {"type": "DoubleParameter", "parameterId": "dropout", "minValue": 0, "maxValue": 0.5}
    discrete = {"type": "DiscreteParameter", "parameterId": "num_units", "values": [64, 128]}
    integer = {"type": "IntegerParameter", "parameterId": "layers", "minValue": 1, "maxValue": 8}
    entry = _tuning(
        {
            "parameters": [
                {**discrete, "conditional": {key: [child]}},
                {**integer, "conditional": {str(key)[:1]: [{**child, "parameterId": "width"}]}},
            ]
        }
    )
    job, problems = read_job(entry, "jobs[0]")
    assert problems == [] and job is not None
    num_units, layers = job.args.study.parameters  # type: ignore[union-attr]
    assert num_units.conditional == {64.0: [vt.DoubleParameter("dropout", 0, 0.5)]}
    assert layers.conditional == {6: [vt.DoubleParameter("width", 0, 0.5)]}
    # A parent value the parent does not take is still refused.
    entry["study"]["parameters"][0]["conditional"] = {"65": [child]}
    assert (
        "[65.0] are not values of the parent"
        in _read(entry)["jobs[0].study.parameters[0].conditional"][0]
    )
