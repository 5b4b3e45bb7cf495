"""The job provider's check, called directly: rules on values known only at deployment."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.runtime.rpc import UNKNOWN

from tests.bodies import cassava, horses_or_humans
from tests.fakes.settings import local_settings
from vertex_training._dynamic import BackendKind, BackendSettings
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import PROVIDER_VERSION, JobProvider

TAG = "us-central1-docker.pkg.dev/p/training/trainer:v1"
VERTEX = BackendSettings(BackendKind.VERTEX, project="p-1", location="us-central1")
LOCAL = local_settings("/tmp/local-root")


def props(spec: Any, backend: BackendSettings = VERTEX) -> dict[str, Any]:
    return {
        "spec": spec,
        "backend": backend.to_props(),
        "identity": "vertex-training/dev/job",
        "provider_version": PROVIDER_VERSION,
        "wait": True,
        "wait_timeout_seconds": 3600.0,
        "poll_interval_seconds": 30.0,
        "delete_timeout_seconds": 1800.0,
    }


def pools(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return (spec.get("jobSpec") or spec["trialJobSpec"])["workerPoolSpecs"]


def failures(kind: JobKind, spec: Any, backend: BackendSettings = VERTEX) -> list[tuple[str, str]]:
    result = JobProvider(kind).check({}, props(spec, backend))
    return [(f.property, f.reason) for f in result.failures or []]


@pytest.mark.parametrize(
    "kind, spec, path",
    [
        (JobKind.CUSTOM_JOB, cassava(), "jobSpec.workerPoolSpecs[0]"),
        (JobKind.HYPERPARAMETER_TUNING_JOB, horses_or_humans(), "trialJobSpec.workerPoolSpecs[0]"),
    ],
    ids=["custom", "tuning"],
)
def test_a_resolved_image_by_tag_is_refused_on_vertex(
    kind: JobKind, spec: dict[str, Any], path: str
) -> None:
    pools(spec)[0]["containerSpec"]["imageUri"] = TAG
    assert failures(kind, spec) == [
        (
            "spec",
            f"{path}.containerSpec.imageUri: {TAG!r} is not an image by digest (a tag can "
            "move while a job runs); valid: REGISTRY/PATH@sha256:<64 hex digits>, "
            'e.g. platform.image("trainer")',
        )
    ]


def test_an_image_not_known_yet_is_judged_when_it_is() -> None:
    spec = cassava()
    for pool in pools(spec):
        pool["containerSpec"]["imageUri"] = UNKNOWN
    assert failures(JobKind.CUSTOM_JOB, spec) == []


def test_a_local_job_may_run_a_tag() -> None:
    spec = cassava(accelerator=None)
    for pool in pools(spec):
        pool["containerSpec"]["imageUri"] = "trainer:local"
    assert failures(JobKind.CUSTOM_JOB, spec, LOCAL) == []
