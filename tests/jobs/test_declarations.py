"""Job declarations (stack config) -> specs: defaults, overrides, every spec feature."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vertex_training.jobs.declarations import JobDeclaration, job_problems, parse_jobs
from vertex_training.jobs.spec import (
    CategoricalParameterSpec,
    ConditionalParameterSpec,
    CustomJobSpec,
    EarlyStopping,
    IntegerParameterSpec,
    MeasurementSelection,
    MetricGoal,
    SchedulingStrategy,
    SearchAlgorithm,
    TuningJobSpec,
    spec_issues,
)

IMAGE = "r/trainer@sha256:" + "1" * 64
ENV = {"image": IMAGE, "bucket_url": "gs://b", "service_account": "sa@p.iam.gserviceaccount.com"}


def test_minimal_job_defaults() -> None:
    [job] = parse_jobs([{"name": "tiny", "workload": "cassava"}])
    spec = job.to_spec(**ENV, labels={"stack": "dev"})
    assert isinstance(spec, CustomJobSpec)
    (chief,) = spec.worker_pools
    assert chief is not None
    assert chief.machine.machine_type == "n1-standard-4" and chief.replica_count == 1
    assert chief.container.image_uri == IMAGE
    assert chief.container.args == ("--workload", "cassava")
    assert spec.base_output_directory == "gs://b/jobs/tiny"
    assert spec.service_account == ENV["service_account"]
    assert spec.labels == (("stack", "dev"),)
    assert spec.display_name == "tiny"
    assert spec_issues(spec, region="us-central1") == []


def test_pools_in_vertex_order_with_placeholders() -> None:
    job = JobDeclaration.model_validate(
        {
            "name": "ps",
            "args": ["--x"],
            "env": {"A": "1"},
            "chief": {"machineType": "n1-highmem-8"},
            "parameterServers": {"replicaCount": 2, "env": {"B": "2"}, "args": ["--ps"]},
            "evaluator": {"image": "other@sha256:" + "2" * 64, "command": ["python", "-m", "x"]},
        }
    )
    spec = job.to_spec(**ENV)
    assert isinstance(spec, CustomJobSpec)
    chief, workers, servers, evaluator = spec.worker_pools
    assert workers is None and chief is not None and servers is not None and evaluator is not None
    assert chief.container.args == ("--x",) and chief.container.env == (("A", "1"),)
    assert servers.replica_count == 2 and servers.container.args == ("--ps",)
    assert servers.container.env == (("A", "1"), ("B", "2"))
    assert evaluator.container.image_uri.startswith("other@")
    assert evaluator.container.command == ("python", "-m", "x")
    assert spec_issues(spec, region="us-central1") == []


def test_every_custom_job_option() -> None:
    job = JobDeclaration.model_validate(
        {
            "name": "all",
            "displayName": "All Options",
            "outputDir": "gs://elsewhere/out",
            "serviceAccount": "other@p.iam.gserviceaccount.com",
            "network": "projects/1/global/networks/vpc",
            "labels": {"team": "ml"},
            "timeoutSeconds": 3600,
            "restartJobOnWorkerRestart": True,
            "schedulingStrategy": "flex_start",
            "maxWaitSeconds": 600,
            "enableWebAccess": True,
            "tensorboard": "projects/p/locations/us-central1/tensorboards/1",
            "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
        }
    )
    spec = job.to_spec(**ENV, labels={"stack": "dev"})
    assert isinstance(spec, CustomJobSpec)
    assert spec.display_name == "All Options"
    assert spec.base_output_directory == "gs://elsewhere/out"
    assert spec.service_account == "other@p.iam.gserviceaccount.com"
    assert dict(spec.labels) == {"stack": "dev", "team": "ml"}
    assert spec.scheduling_strategy is SchedulingStrategy.FLEX_START
    assert (spec.timeout_seconds, spec.max_wait_seconds) == (3600, 600)
    assert spec.restart_job_on_worker_restart and spec.enable_web_access
    assert spec.kms_key_name and spec.tensorboard and spec.network
    assert spec_issues(spec, region="us-central1") == []


def test_tuning_job_with_conditional_parameters_and_early_stopping() -> None:
    job = JobDeclaration.model_validate(
        {
            "name": "tune",
            "kind": "tuning",
            "workload": "horses_or_humans",
            "labels": {"team": "ml"},
            "maxTrialCount": 8,
            "parallelTrialCount": 2,
            "maxFailedTrialCount": 1,
            "study": {
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
        }
    )
    spec = job.to_spec(**ENV, labels={"stack": "dev"})
    assert isinstance(spec, TuningJobSpec)
    assert dict(spec.labels) == {"stack": "dev", "team": "ml"}
    assert spec.trial_job.labels == ()  # trials take the tuning job's labels
    assert spec.study.metrics[0].goal is MetricGoal.MINIMIZE
    assert spec.study.algorithm is SearchAlgorithm.RANDOM
    assert spec.study.measurement_selection is MeasurementSelection.LAST
    assert spec.study.early_stopping is EarlyStopping.CONVEX
    assert spec.study.parameters == (
        CategoricalParameterSpec(
            "optimizer",
            ("sgd", "adam"),
            (ConditionalParameterSpec(IntegerParameterSpec("layers", 1, 4), ("sgd",)),),
        ),
    )
    assert (spec.max_trial_count, spec.parallel_trial_count, spec.max_failed_trial_count) == (
        8,
        2,
        1,
    )
    assert spec_issues(spec, region="us-central1") == []


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


def test_parse_jobs_shapes() -> None:
    assert parse_jobs(None) == () and parse_jobs([]) == ()
    with pytest.raises(ValueError, match="list of job mappings"):
        parse_jobs({"name": "x"})


def test_job_problems_are_local_aware() -> None:
    jobs = parse_jobs([{"name": "x", "outputDir": "/tmp/out"}])
    assert job_problems(jobs, region=None, remote=False) == []
    [problem] = job_problems(jobs, region="us-central1", remote=True)
    assert problem.startswith("jobs[0] (x): base_output_directory:")
