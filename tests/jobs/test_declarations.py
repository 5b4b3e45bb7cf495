"""Job declarations (stack config) -> Vertex REST bodies: defaults, overrides, every
declared feature, ``extraFields``, and config keys for the rules' API paths."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vertex_training.jobs.declarations import (
    JobDeclaration,
    config_path,
    job_problems,
    merge_fields,
)
from vertex_training.jobs.model import JobKind
from vertex_training.jobs.protos import canonical_json, parse_body
from vertex_training.jobs.rules.job import job_findings
from vertex_training.jobs.view import (
    CategoricalParameterSpec,
    ConditionalParameterSpec,
    CustomJobView,
    EarlyStoppingKind,
    IntegerParameterSpec,
    MeasurementSelection,
    MetricGoal,
    ScaleType,
    SearchAlgorithm,
    TuningJobView,
    view_of,
)

IMAGE = "r/trainer@sha256:" + "1" * 64
ENV = {"image": IMAGE, "bucket_url": "gs://b", "service_account": "sa@p.iam.gserviceaccount.com"}


def declare(**fields: Any) -> JobDeclaration:
    return JobDeclaration.model_validate(fields)


def body_of(job: JobDeclaration, **labels: str) -> dict[str, Any]:
    body = job.to_body(**ENV, labels=labels or None)
    parse_body(job.job_kind, body)  # every body is one the real protos take
    return body


def no_findings(job: JobDeclaration, body: dict[str, Any]) -> None:
    view = view_of(job.job_kind, body)
    assert job_findings(view, region="us-central1", remote=True) == []


def test_minimal_job_defaults() -> None:
    job = declare(name="tiny", workload="cassava")
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
            "serviceAccount": ENV["service_account"],
        },
    }
    no_findings(job, body)


def test_the_disk_spec_is_absent_unless_declared() -> None:
    # The service's default disk differs per machine family: never make one up.
    plain = body_of(declare(name="d"))
    assert "diskSpec" not in plain["jobSpec"]["workerPoolSpecs"][0]
    sized = body_of(declare(name="d", chief={"bootDiskSizeGb": 200}))
    assert sized["jobSpec"]["workerPoolSpecs"][0]["diskSpec"] == {"bootDiskSizeGb": 200}
    typed = body_of(declare(name="d", chief={"bootDiskType": "pd-ssd"}))
    assert typed["jobSpec"]["workerPoolSpecs"][0]["diskSpec"] == {"bootDiskType": "pd-ssd"}


@pytest.mark.parametrize(
    ("seconds", "duration"), [(1.5, "1.5s"), (3600, "3600s"), (0.000000001, "0.000000001s")]
)
def test_durations_keep_their_fractions(seconds: float, duration: str) -> None:
    body = body_of(declare(name="t", timeoutSeconds=seconds, maxWaitSeconds=seconds))
    assert body["jobSpec"]["scheduling"] == {"timeout": duration, "maxWaitDuration": duration}


def test_a_zero_wait_is_kept() -> None:
    body = body_of(declare(name="t", maxWaitSeconds=0))
    assert body["jobSpec"]["scheduling"] == {"maxWaitDuration": "0s"}


def test_pools_in_vertex_order_with_placeholders() -> None:
    job = declare(
        name="ps",
        args=["--x"],
        env={"A": "1"},
        chief={"machineType": "n1-highmem-8"},
        parameterServers={"replicaCount": 2, "env": {"B": "2"}, "args": ["--ps"]},
        evaluator={"image": "other@sha256:" + "2" * 64, "command": ["python", "-m", "x"]},
    )
    body = body_of(job)
    view = view_of(JobKind.CUSTOM_JOB, body)
    assert isinstance(view, CustomJobView)
    chief, workers, servers, evaluator = view.trial_job.worker_pools
    assert body["jobSpec"]["workerPoolSpecs"][1] == {}
    assert workers is None and chief is not None and servers is not None and evaluator is not None
    assert chief.container is not None and servers.container is not None
    assert evaluator.container is not None
    assert chief.container.args == ("--x",) and chief.container.env == (("A", "1"),)
    assert servers.replica_count == 2 and servers.container.args == ("--ps",)
    assert servers.container.env == (("A", "1"), ("B", "2"))
    assert evaluator.container.image_uri.startswith("other@")
    assert evaluator.container.command == ("python", "-m", "x")
    no_findings(job, body)


def test_every_custom_job_option() -> None:
    job = declare(
        name="all",
        displayName="All Options",
        outputDir="gs://elsewhere/out",
        serviceAccount="other@p.iam.gserviceaccount.com",
        network="projects/1/global/networks/vpc",
        labels={"team": "ml"},
        timeoutSeconds=3600,
        restartJobOnWorkerRestart=True,
        schedulingStrategy="flex_start",
        maxWaitSeconds=600,
        enableWebAccess=True,
        persistentResourceId="pool-1",
        tensorboard="projects/p/locations/us-central1/tensorboards/1",
        kmsKeyName="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
    )
    body = body_of(job, stack="dev")
    assert body["displayName"] == "All Options"
    assert body["labels"] == {"stack": "dev", "job": "all", "team": "ml"}
    assert body["encryptionSpec"] == {"kmsKeyName": job.kms_key_name}
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
    assert spec["network"] == job.network and spec["tensorboard"] == job.tensorboard
    assert spec["persistentResourceId"] == "pool-1"
    no_findings(job, body)


def test_tuning_job_with_conditional_parameters_and_early_stopping() -> None:
    job = declare(
        name="tune",
        kind="tuning",
        workload="horses_or_humans",
        labels={"team": "ml"},
        maxTrialCount=8,
        parallelTrialCount=2,
        maxFailedTrialCount=1,
        study={
            "metric": "loss",
            "goal": "minimize",
            "algorithm": "random",
            "measurementSelection": "last",
            "earlyStopping": "convex",
            "parameters": [
                {
                    "parameterId": "optimizer",
                    "type": "categorical",
                    "values": ["sgd", "adam"],
                    "conditional": [
                        {
                            "parentValues": ["sgd"],
                            "parameter": {
                                "parameterId": "layers",
                                "type": "integer",
                                "min": 1,
                                "max": 4,
                            },
                        }
                    ],
                }
            ],
        },
    )
    body = body_of(job, stack="dev")
    assert body["labels"] == {"stack": "dev", "job": "tune", "team": "ml"}
    assert "labels" not in body["trialJobSpec"]  # trials take the tuning job's labels
    view = view_of(JobKind.HYPERPARAMETER_TUNING_JOB, body)
    assert isinstance(view, TuningJobView)
    assert view.study.metrics[0].goal is MetricGoal.MINIMIZE
    assert view.study.algorithm is SearchAlgorithm.RANDOM
    assert view.study.measurement_selection is MeasurementSelection.LAST
    assert view.study.early_stopping is EarlyStoppingKind.CONVEX
    assert view.study.parameters == (
        CategoricalParameterSpec(
            "optimizer",
            ("sgd", "adam"),
            (
                ConditionalParameterSpec(
                    IntegerParameterSpec("layers", 1, 4, ScaleType.LINEAR),
                    ("sgd",),
                ),
            ),
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
        timeoutSeconds=60,
        extraFields={
            "jobSpec": {
                "enableDashboardAccess": True,
                "scheduling": {"disableRetries": True},
                "reservedIpRanges": ["r1"],
            },
            "labels": {"cost-center": "42"},
        },
    )
    body = body_of(job, stack="dev")
    assert body["jobSpec"]["enableDashboardAccess"] is True
    assert body["jobSpec"]["reservedIpRanges"] == ["r1"]
    # Mappings merge key by key: the declared timeout stays beside the extra field.
    assert body["jobSpec"]["scheduling"] == {"timeout": "60s", "disableRetries": True}
    assert body["labels"] == {"stack": "dev", "job": "x", "cost-center": "42"}
    assert body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "n1-standard-4"


def test_extra_fields_reach_the_protos_unchanged() -> None:
    job = declare(name="x", extraFields={"jobSpec": {"experiment": "e", "experimentRun": "r"}})
    text = canonical_json(JobKind.CUSTOM_JOB, body_of(job))
    assert '"experiment": "e"' in text and '"experimentRun": "r"' in text


def test_merge_fields_replaces_non_mappings() -> None:
    merged = merge_fields({"a": {"b": [1], "c": 1}, "d": 1}, {"a": {"b": [2]}, "d": {"e": 1}})
    assert merged == {"a": {"b": [2], "c": 1}, "d": {"e": 1}}


@pytest.mark.parametrize(
    ("api_path", "key"),
    [
        ("jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount", "chief.acceleratorCount"),
        ("trialJobSpec.workerPoolSpecs[1].machineSpec.machineType", "workers.machineType"),
        ("jobSpec.workerPoolSpecs[2].containerSpec.env[1].name", "parameterServers.env"),
        ("jobSpec.workerPoolSpecs[3].diskSpec.bootDiskSizeGb", "evaluator.bootDiskSizeGb"),
        ("jobSpec.workerPoolSpecs[3]", "evaluator"),
        ("jobSpec.workerPoolSpecs[0].containerSpec.imageUri", "chief.image"),
        ("jobSpec.scheduling.timeout", "timeoutSeconds"),
        ("trialJobSpec.scheduling.maxWaitDuration", "maxWaitSeconds"),
        ("jobSpec.baseOutputDirectory.outputUriPrefix", "outputDir"),
        ("jobSpec.serviceAccount", "serviceAccount"),
        ("studySpec.metrics[0].metricId", "study.metric"),
        ("studySpec.parameters[1]", "study.parameters[1]"),
        ("encryptionSpec.kmsKeyName", "kmsKeyName"),
        ("maxTrialCount", "maxTrialCount"),
        ("displayName", "displayName"),
        ("", None),
    ],
)
def test_config_path(api_path: str, key: str | None) -> None:
    assert config_path(api_path) == key


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"name": "x", "kind": "custom", "maxTrialCount": 2}, "only apply to kind: tuning"),
        ({"name": "x", "workload": "mnist"}, "Input should be 'cassava' or 'horses_or_humans'"),
        ({"name": "x", "chief": {"gpus": 1}}, "Extra inputs are not permitted"),
        ({"name": "x", "waitTimeoutSeconds": 0}, "greater than 0"),
        (
            {
                "name": "x",
                "kind": "tuning",
                "maxTrialCount": 1,
                "parallelTrialCount": 1,
                "study": {"parameters": [{"parameterId": "p", "type": "double", "min": 0}]},
            },
            "type double needs min and max",
        ),
        (
            {
                "name": "x",
                "kind": "tuning",
                "maxTrialCount": 1,
                "parallelTrialCount": 1,
                "study": {
                    "parameters": [{"parameterId": "p", "type": "discrete", "values": ["a"]}]
                },
            },
            "use type categorical for strings",
        ),
        (
            {
                "name": "x",
                "kind": "tuning",
                "maxTrialCount": 1,
                "parallelTrialCount": 1,
                "study": {
                    "parameters": [{"parameterId": "p", "type": "integer", "min": 0.5, "max": 2}]
                },
            },
            "whole numbers",
        ),
    ],
)
def test_malformed_declarations(declaration: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        JobDeclaration.model_validate(declaration)


def test_job_problems_are_local_aware_and_name_config_keys() -> None:
    jobs = (declare(name="x", outputDir="/tmp/out"),)
    assert job_problems(jobs, region=None, remote=False) == []
    [(key, finding)] = job_problems(jobs, region="us-central1", remote=True)
    assert key == "jobs[0].outputDir"
    assert finding.path == "jobSpec.baseOutputDirectory.outputUriPrefix"
    assert "gs://" in finding.message and finding.severity == "error"


def test_job_problems_map_hardware_to_the_pool_key() -> None:
    jobs = (
        declare(name="a"),
        declare(name="a", workers={"machineType": "n1-standard-5"}),
    )
    found = {key: f for key, f in job_problems(jobs, region="us-central1", remote=True)}
    assert "repeats" in found["jobs[1].name"].message
    assert found["jobs[1].workers.machineType"].path == (
        "jobSpec.workerPoolSpecs[1].machineSpec.machineType"
    )


def test_an_unlisted_size_of_a_partial_family_warns_strict_or_not() -> None:
    # An unlisted size of a family the catalog lists partially: unknown, not known wrong,
    # so strict mode (which refuses only names the catalog never heard of) warns too.
    jobs = (declare(name="g", chief={"machineType": "c2d-standard-3"}),)
    for strict in (False, True):
        [(key, warning)] = job_problems(jobs, region="us-central1", remote=True, strict=strict)
        assert key == "jobs[0].chief.machineType" and warning.severity == "warning"


def test_a_machine_of_no_family_is_refused_strict_or_not() -> None:
    jobs = (declare(name="g", chief={"machineType": "gpu-large"}),)
    [(key, error)] = job_problems(jobs, region="us-central1", remote=True)
    assert key == "jobs[0].chief.machineType" and error.severity == "error"
