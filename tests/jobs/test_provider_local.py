"""The same job resources on the local backend: served by the real dynamic host."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pulumi.runtime.proto import provider_pb2

from tests.bodies import custom_job, pool
from tests.fakes.settings import PARENT, local_settings
from tests.jobs.provider_host import Engine, ProviderHost
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import PROVIDER_VERSION

pytestmark = pytest.mark.slow

STANDIN = str(Path(__file__).resolve().parents[1] / "local" / "standin.py")


@pytest.fixture(scope="module")
def host() -> Iterator[ProviderHost]:
    # No emulator: the local backend never talks to Vertex.
    provider_host = ProviderHost("127.0.0.1:9")
    yield provider_host
    provider_host.close()


def job(*args: str, workers: int = 1) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        return pool(
            "n1-standard-4",
            replicas=count,
            image="python:3.11-slim",
            command=("python", STANDIN),
            args=args,
        )

    return custom_job(
        replicas(1),
        replicas(workers),
        display_name="local-smoke",
        output="gs://local-bucket/jobs/smoke",
    )


def props(tmp_path: Path, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    backend = local_settings(str(tmp_path / "root"))
    return {
        "spec": spec,
        "backend": backend.to_props(),
        "identity": "vertex-training/local/jobs-smoke",
        "wait": True,
        "wait_timeout_seconds": 60,
        "poll_interval_seconds": 0.1,
        "delete_timeout_seconds": 60,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


def test_local_lifecycle(host: ProviderHost, tmp_path: Path) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB, "jobs-smoke")
    inputs, failures = engine.check(props(tmp_path, job()))
    assert failures == []
    job_id, outs = engine.create(inputs)
    assert job_id.startswith(f"{PARENT}/customJobs/")
    assert outs["state"] == "SUCCEEDED"
    # Its page: the local Vertex's own answer for the job.
    assert re.fullmatch(rf"http://127\.0\.0\.1:\d+/v1/{job_id}", outs["console_url"])
    read_id, refreshed = engine.read(job_id, outs, inputs)
    assert read_id == job_id and refreshed["state"] == "SUCCEEDED"
    again, _ = engine.check(props(tmp_path, job()), olds=outs)
    assert engine.diff(job_id, outs, again).changes == provider_pb2.DiffResponse.DIFF_NONE
    # Same spec, second create (as after a crash): adopts the finished job.
    adopted_id, _ = engine.create(inputs)
    assert adopted_id == job_id
    engine.delete(job_id, refreshed)
    gone_id, _ = engine.read(job_id, outs, inputs)
    assert gone_id == ""


def test_local_failure_fails_create(host: ProviderHost, tmp_path: Path) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB, "jobs-smoke")
    inputs, _ = engine.check(props(tmp_path, job("--exit-code", "3")))
    with pytest.raises(grpc.RpcError) as caught:
        engine.create(inputs)
    assert "ended FAILED" in caught.value.details()
    # What the user needs to fix it: the tail of the failing replica's log.
    assert "failing on purpose: boom" in caught.value.details()


def test_local_destroy_of_a_running_job_cancels_then_deletes(
    host: ProviderHost, tmp_path: Path
) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB, "jobs-smoke")
    inputs, _ = engine.check(props(tmp_path, job("--sleep", "60"), wait=False))
    job_id, outs = engine.create(inputs)
    assert outs["state"] in {"QUEUED", "PENDING", "RUNNING"}
    engine.delete(job_id, outs)
    gone_id, _ = engine.read(job_id, outs, inputs)
    assert gone_id == ""


def test_local_label_and_display_name_edits_are_recorded_in_the_state_only(
    host: ProviderHost, tmp_path: Path
) -> None:
    """As on Vertex, which has no call to relabel a job: no new run, the job as it was."""
    from vertex_training.local.runners.jobs import JobRunner

    engine = Engine(host, JobKind.CUSTOM_JOB, "jobs-smoke")
    inputs, _ = engine.check(props(tmp_path, job()))
    job_id, outs = engine.create(inputs)
    spec = {**job(), "labels": {"team": "vision"}, "displayName": "renamed"}
    edited, failures = engine.check(props(tmp_path, spec), olds=outs)
    assert failures == []
    diff = engine.diff(job_id, outs, edited)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    updated = engine.update(job_id, outs, edited)
    assert updated["job_name"] == job_id and updated["spec"]["labels"] == {"team": "vision"}
    body = JobRunner(str(tmp_path / "root"), parent=PARENT).job_body(job_id)
    assert body["displayName"] == "local-smoke"
    labels = body["labels"]
    assert "team" not in labels
    # Ours stay: the stack label, and the adoption label a crashed `up` finds it by.
    assert {"pulumi-stack", "pulumi-job-key"} <= set(labels)
    assert [p.name for p in (tmp_path / "root" / "jobs").iterdir()] == [job_id.rsplit("/", 1)[1]]
