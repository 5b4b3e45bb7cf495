"""The dev stack's two codelab jobs are, field by field, what the Vertex SDK
(``google.cloud.aiplatform``) builds from the codelabs' own code: nothing added that the
user left unset (issue 26 item 10). The SDK's objects are built offline (anonymous
credentials, no call to the API) and read through their proto.

Aside, as this repo provides them: the images and their arguments (one trainer image
whose arguments choose the workload, where each codelab bakes its own), the output
directory, labels, service account, scheduling and the stack's TensorBoard; and the
cassava job's display name (the codelab's notebook names its SDK run
``multiworker-cassava-sdk``, apart from the console run ``multiworker-cassava`` the dev
stack repeats)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.jobs.facts import body_of
from tests.pulumi_mocks import run_program, stack_file_config
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind

ASIDE_RUN = ("baseOutputDirectory", "serviceAccount", "scheduling", "tensorboard")


def _without_aside(body: dict[str, Any], run_key: str) -> dict[str, Any]:
    body = {k: v for k, v in body.items() if k != "labels"}
    run = {k: v for k, v in body[run_key].items() if k not in ASIDE_RUN}
    run["workerPoolSpecs"] = [
        {k: v for k, v in pool.items() if k != "containerSpec"} for pool in run["workerPoolSpecs"]
    ]
    return {**body, run_key: run}


@pytest.fixture(scope="module")
def dev_bodies() -> dict[str, dict[str, Any]]:
    run = run_program("dev", stack_file_config(PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"))
    return {
        r.name: r.inputs["spec"]
        for r in run.registrations
        if r.type.endswith((":CustomJob", ":HyperparameterTuningJob"))
    }


def _sdk() -> Any:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform
    from google.cloud.aiplatform import hyperparameter_tuning as hpt

    return (
        aiplatform,
        hpt,
        {
            "project": "p",
            "location": "us-central1",
            "credentials": AnonymousCredentials(),
        },
    )


def _canonical(kind: JobKind, body: dict[str, Any]) -> dict[str, Any]:
    return body_of(parse_body(kind, body))


def test_the_cassava_job_is_what_the_sdk_builds(dev_bodies: dict[str, dict[str, Any]]) -> None:
    aiplatform, _, where = _sdk()
    # Codelab "Multi-worker training and transfer learning with TensorFlow", SDK section.
    # The codelab spells the chief and the worker out, the same spec twice.
    v100_worker = {
        "replica_count": 1,
        "machine_spec": {
            "machine_type": "n1-standard-8",
            "accelerator_type": "NVIDIA_TESLA_V100",
            "accelerator_count": 1,
        },
        "container_spec": {"image_uri": "gcr.io/{YOUR-PROJECT-ID}/multiworker:cassava"},
    }
    worker_pool_specs = [v100_worker, dict(v100_worker)]
    job = aiplatform.CustomJob(
        display_name="multiworker-cassava-sdk",
        worker_pool_specs=worker_pool_specs,
        staging_bucket="gs://{YOUR_BUCKET}",
        **where,
    )
    sdk = body_of(job._gca_resource)
    ours = _canonical(JobKind.CUSTOM_JOB, dev_bodies["cassava-mwms"])
    sdk.pop("displayName")
    assert ours.pop("displayName") == "multiworker-cassava"
    assert _without_aside(ours, "jobSpec") == _without_aside(sdk, "jobSpec")


def test_the_tuning_job_is_what_the_sdk_builds(dev_bodies: dict[str, dict[str, Any]]) -> None:
    aiplatform, hpt, where = _sdk()
    # Codelab "Hyperparameter tuning with Vertex AI" (horses or humans), its SDK code.
    worker_pool_specs = [
        {
            "machine_spec": {
                "machine_type": "n1-standard-4",
                "accelerator_type": "NVIDIA_TESLA_V100",
                "accelerator_count": 2,
            },
            "replica_count": 1,
            "container_spec": {"image_uri": "gcr.io/{PROJECT_ID}/horse-human-codelab:latest"},
        }
    ]
    parameter_spec = {
        "learning_rate": hpt.DoubleParameterSpec(min=0.001, max=1, scale="log"),
        "momentum": hpt.DoubleParameterSpec(min=0, max=1, scale="linear"),
        "num_units": hpt.DiscreteParameterSpec(values=[64, 128, 512], scale=None),
    }
    metric_spec = {"accuracy": "maximize"}
    my_custom_job = aiplatform.CustomJob(
        display_name="horses-humans",
        worker_pool_specs=worker_pool_specs,
        staging_bucket="gs://{YOUR_BUCKET}",
        **where,
    )
    hp_job = aiplatform.HyperparameterTuningJob(
        display_name="horses-humans",
        custom_job=my_custom_job,
        metric_spec=metric_spec,
        parameter_spec=parameter_spec,
        max_trial_count=6,
        parallel_trial_count=2,
        search_algorithm=None,
        **where,
    )
    sdk = body_of(hp_job._gca_resource)
    ours = _canonical(JobKind.HYPERPARAMETER_TUNING_JOB, dev_bodies["horses-humans-tuning"])
    assert "scaleType" not in ours["studySpec"]["parameters"][2]  # num_units: unset
    assert _without_aside(ours, "trialJobSpec") == _without_aside(sdk, "trialJobSpec")
