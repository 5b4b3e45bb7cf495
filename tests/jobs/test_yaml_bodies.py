"""Stack YAML job entries -> Vertex REST bodies, in the one-model shape: defaults,
every option, tuning studies, ``extraFields``, and what a malformed entry is told.

These carry over the body and message checks the old declaration format had (its tests
went with it), each written in the new shape (the Args in camelCase)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bodies import categorical, integer
from tests.jobs.facts import IMAGE, SERVICE_ACCOUNT, handles
from vertex_training.jobs.api import resolve
from vertex_training.jobs.body import merge_fields
from vertex_training.jobs.declarations import JobDeclaration, read_job
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.job import JobSite, job_findings
from vertex_training.jobs.view import (
    CustomJobView,
    HyperparameterTuningJobView,
    MeasurementSelection,
    MetricGoal,
    ParameterSpec,
    SearchAlgorithm,
    read_view,
)

CHIEF = {"machineType": "n1-standard-4"}


def declare(**fields: Any) -> JobDeclaration:
    job, problems = read_job(fields, "jobs[0]")
    assert problems == [] and job is not None
    return job


def body_of(job: JobDeclaration, **labels: str) -> dict[str, Any]:
    body = resolve(job.args, job.name, handles(labels)).body
    parse_body(job.args.KIND, body)  # every body is one the real protos take
    return body


def no_findings(job: JobDeclaration, body: dict[str, Any]) -> None:
    view, unreadable = read_view(job.args.KIND, body)
    assert view is not None, unreadable
    assert job_findings(view, JobSite(remote=True, region="us-central1")) == []


def test_minimal_job_defaults() -> None:
    job = declare(name="tiny", chief={**CHIEF, "args": ["--workload", "cassava"]})
    body = body_of(job, stack="dev")
    assert body == {
        "displayName": "tiny",
        "labels": {"stack": "dev", "job": "tiny"},
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": "1",
                    "containerSpec": {"imageUri": IMAGE, "args": ["--workload", "cassava"]},
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://b/jobs/tiny"},
            "serviceAccount": SERVICE_ACCOUNT,
        },
    }
    no_findings(job, body)


def test_the_disk_spec_is_absent_unless_declared() -> None:
    # The service's default disk differs per machine family: never make one up.
    plain = body_of(declare(name="d", chief=CHIEF))
    assert "diskSpec" not in plain["jobSpec"]["workerPoolSpecs"][0]
    sized = body_of(declare(name="d", chief={**CHIEF, "bootDiskSizeGb": 200}))
    assert sized["jobSpec"]["workerPoolSpecs"][0]["diskSpec"] == {"bootDiskSizeGb": 200}
    typed = body_of(declare(name="d", chief={**CHIEF, "bootDiskType": "pd-ssd"}))
    assert typed["jobSpec"]["workerPoolSpecs"][0]["diskSpec"] == {"bootDiskType": "pd-ssd"}


@pytest.mark.parametrize(
    ("seconds", "duration"), [(1.5, "1.5s"), (3600, "3600s"), (0.000000001, "0.000000001s")]
)
def test_durations_keep_their_fractions(seconds: float, duration: str) -> None:
    scheduling = {"timeoutSeconds": seconds, "maxWaitSeconds": seconds}
    body = body_of(declare(name="t", chief=CHIEF, scheduling=scheduling))
    assert body["jobSpec"]["scheduling"] == {"timeout": duration, "maxWaitDuration": duration}


def test_a_zero_wait_is_kept() -> None:
    body = body_of(declare(name="t", chief=CHIEF, scheduling={"maxWaitSeconds": 0}))
    assert body["jobSpec"]["scheduling"] == {"maxWaitDuration": "0s"}


def test_pools_in_vertex_order_with_placeholders() -> None:
    job = declare(
        name="ps",
        chief={"machineType": "n1-highmem-8", "args": ["--x"], "env": {"A": "1"}},
        parameterServers={
            **CHIEF,
            "replicaCount": 2,
            "env": {"A": "1", "B": "2"},
            "args": ["--ps"],
        },
        evaluator={**CHIEF, "image": "other@sha256:" + "2" * 64, "command": ["python", "-m", "x"]},
    )
    body = body_of(job)
    view = CustomJobView.model_validate(body)
    assert isinstance(view, CustomJobView)
    chief, workers, servers, evaluator = view.trial_job.worker_pool_specs
    assert body["jobSpec"]["workerPoolSpecs"][1] == {}
    assert workers is None and chief is not None and servers is not None and evaluator is not None
    chief_run, server_run = chief.container_spec, servers.container_spec
    assert chief_run is not None and server_run is not None
    assert evaluator.container_spec is not None
    assert chief_run.args == ("--x",)
    assert [(e.name, e.value) for e in chief_run.env] == [("A", "1")]
    assert servers.replica_count == 2 and server_run.args == ("--ps",)
    assert [(e.name, e.value) for e in server_run.env] == [("A", "1"), ("B", "2")]
    assert evaluator.container_spec.image_uri.startswith("other@")
    assert evaluator.container_spec.command == ("python", "-m", "x")
    no_findings(job, body)


def test_every_custom_job_option() -> None:
    job = declare(
        name="all",
        chief=CHIEF,
        displayName="All Options",
        baseOutputDirectory="gs://elsewhere/out",
        serviceAccount="other@p.iam.gserviceaccount.com",
        network="projects/1/global/networks/vpc",
        labels={"team": "ml"},
        scheduling={
            "timeoutSeconds": 3600,
            "restartJobOnWorkerRestart": True,
            "strategy": "FLEX_START",
            "maxWaitSeconds": 600,
        },
        enableWebAccess=True,
        persistentResourceId="pool-1",
        tensorboard="projects/p/locations/us-central1/tensorboards/1",
        kmsKeyName="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
    )
    body = body_of(job, stack="dev")
    args = job.args
    assert body["displayName"] == "All Options"
    assert body["labels"] == {"stack": "dev", "job": "all", "team": "ml"}
    assert body["encryptionSpec"] == {"kmsKeyName": args.kms_key_name}
    spec = body["jobSpec"]
    assert spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://elsewhere/out"}
    assert spec["serviceAccount"] == "other@p.iam.gserviceaccount.com"
    assert spec["scheduling"] == {
        "timeout": "3600s",
        "restartJobOnWorkerRestart": True,
        "strategy": "FLEX_START",
        "maxWaitDuration": "600s",
    }
    assert spec["enableWebAccess"] is True
    assert spec["network"] == "projects/1/global/networks/vpc"
    assert spec["tensorboard"] == "projects/p/locations/us-central1/tensorboards/1"
    assert spec["persistentResourceId"] == "pool-1"
    no_findings(job, body)


def test_tuning_job_with_conditional_parameters_and_early_stopping() -> None:
    job = declare(
        name="tune",
        trial={"chief": {**CHIEF, "args": ["--workload", "horses_or_humans"]}},
        labels={"team": "ml"},
        maxTrialCount=8,
        parallelTrialCount=2,
        maxFailedTrialCount=1,
        study={
            "metrics": [{"metricId": "loss", "goal": "minimize"}],
            "algorithm": "random",
            "measurementSelection": "last",
            "earlyStopping": {"type": "ConvexStopping"},
            "parameters": [
                {
                    "type": "CategoricalParameter",
                    "parameterId": "optimizer",
                    "values": ["sgd", "adam"],
                    "conditional": {
                        "sgd": [
                            {
                                "type": "IntegerParameter",
                                "parameterId": "layers",
                                "minValue": 1,
                                "maxValue": 4,
                            }
                        ]
                    },
                }
            ],
        },
    )
    body = body_of(job, stack="dev")
    assert body["labels"] == {"stack": "dev", "job": "tune", "team": "ml"}
    assert "labels" not in body["trialJobSpec"]  # trials take the tuning job's labels
    view = HyperparameterTuningJobView.model_validate(body)
    assert isinstance(view, HyperparameterTuningJobView)
    study = view.study_spec
    assert study.metrics[0].goal is MetricGoal.MINIMIZE
    assert study.algorithm is SearchAlgorithm.RANDOM
    assert study.measurement_selection_type is MeasurementSelection.LAST
    assert study.early_stopping == "convexAutomatedStoppingSpec"
    assert study.parameters == (
        ParameterSpec.model_validate(
            categorical(
                "optimizer",
                ["sgd", "adam"],
                sgd=[integer("layers", 1, 4, "SCALE_TYPE_UNSPECIFIED")],
            )
        ),
    )
    assert (view.max_trial_count, view.parallel_trial_count, view.max_failed_trial_count) == (
        8,
        2,
        1,
    )
    no_findings(job, body)


def test_extra_fields_merge_into_the_body() -> None:
    job = declare(
        name="x",
        chief=CHIEF,
        scheduling={"timeoutSeconds": 60},
        extraFields={
            "jobSpec": {"scheduling": {"disableRetries": True}, "models": ["m"]},
            "labels": {"cost-center": "42"},
        },
    )
    body = resolve(job.args, job.name, handles({"stack": "dev"})).body
    assert body["jobSpec"]["models"] == ["m"]
    # Mappings merge key by key: the declared timeout stays beside the extra field.
    assert body["jobSpec"]["scheduling"] == {"timeout": "60s", "disableRetries": True}
    assert body["labels"] == {"stack": "dev", "job": "x", "cost-center": "42"}
    assert body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "n1-standard-4"


def test_extra_fields_reach_the_protos_unchanged() -> None:
    job = declare(
        name="x", chief=CHIEF, extraFields={"jobSpec": {"protectedArtifactLocationId": "l"}}
    )
    parsed = parse_body(JobKind.CUSTOM_JOB, body_of(job))
    assert parsed.job_spec.protected_artifact_location_id == "l"


def test_merge_fields_replaces_non_mappings() -> None:
    merged = merge_fields({"a": {"b": [1], "c": 1}, "d": 1}, {"a": {"b": [2]}, "d": {"e": 1}})
    assert merged == {"a": {"b": [2], "c": 1}, "d": {"e": 1}}


TUNING = {"trial": {"chief": CHIEF}, "maxTrialCount": 1, "parallelTrialCount": 1}


@pytest.mark.parametrize(
    ("entry", "path", "message"),
    [
        (
            {"chief": CHIEF, "maxTrialCount": 2},
            "jobs[0].maxTrialCount",
            "applies only to a tuning job, and this entry is a custom job (it has no trial or "
            "study)",
        ),
        (
            {"chief": CHIEF, "scheduling": {"strategy": "SPTO"}},
            "jobs[0].scheduling.strategy",
            "got 'SPTO' (did you mean 'SPOT'?)",
        ),
        ({"chief": {**CHIEF, "gpus": 1}}, "jobs[0].chief.gpus", "unknown key"),
        (
            {
                **TUNING,
                "study": {
                    "parameters": [{"type": "DoubleParameter", "parameterId": "p", "minValue": 0}]
                },
            },
            "jobs[0].study.parameters[0].maxValue",
            "missing",
        ),
        (
            {
                **TUNING,
                "study": {
                    "parameters": [
                        {"type": "DiscreteParameter", "parameterId": "p", "values": ["a"]}
                    ]
                },
            },
            "jobs[0].study.parameters[0].values[0]",
            "got 'a'",
        ),
        (
            {
                **TUNING,
                "study": {
                    "parameters": [
                        {
                            "type": "IntegerParameter",
                            "parameterId": "p",
                            "minValue": 0.5,
                            "maxValue": 2,
                        }
                    ]
                },
            },
            "jobs[0].study.parameters[0].minValue",
            "got the number 0.5",
        ),
        (
            {
                **TUNING,
                "study": {
                    "metrics": [{"goal": "maximise"}],
                    "parameters": [
                        {
                            "type": "IntegerParameter",
                            "parameterId": "p",
                            "minValue": 0,
                            "maxValue": 2,
                        }
                    ],
                },
            },
            "jobs[0].study.metrics[0].goal",
            "got 'maximise' (did you mean 'maximize'?)",
        ),
    ],
)
def test_malformed_entries_name_the_yaml_path(
    entry: dict[str, Any], path: str, message: str
) -> None:
    job, problems = read_job({"name": "x", **entry}, "jobs[0]")
    assert job is None
    assert [(p.caller, p.message) for p in problems] == [(path, message)]
