"""The repository's ``local`` stack through the real engine, in lifecycle order:
preview, up, an idempotent second up, refresh, the state's contents, destroy.

The tests of this module share one stack and run in file order, each from the state the
previous one left (a failure shows at the step that broke).
"""

from __future__ import annotations

import base64
import json
import pickle
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import PulumiProject, make_project, repo_stack_config
from tests.engine.local_store import stored_jobs, succeeded

pytestmark = pytest.mark.slow

CUSTOM_JOB = "cassava-mwms"
TUNING_JOB = "horses-humans-tuning"
JOBS = {CUSTOM_JOB, TUNING_JOB}
JOB_TYPES = {
    "pulumi-python:dynamic/vertex:CustomJob",
    "pulumi-python:dynamic/vertex:HyperparameterTuningJob",
}
# What must never reach the state: tokens, keys, passwords (the provider holds no client).
CREDENTIAL_PATTERNS = (
    r"ya29\.",  # a Google OAuth access token
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r'"(access_token|refresh_token|private_key|client_secret|password)"',
    r"AIza[0-9A-Za-z_-]{20}",  # a Google API key
)


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    yield from make_project(tmp_path_factory, pulumi_bin_dir, repo_stack_config(), "lifecycle")


def test_preview_lists_both_jobs_as_creates_and_starts_nothing(project: PulumiProject) -> None:
    steps = project.preview_steps()

    # The served model and endpoint are tests/engine/test_serving.py's.
    jobs = {s["urn"].rsplit("::", 1)[-1]: s for s in steps if any(t in s["urn"] for t in JOB_TYPES)}
    assert set(jobs) == JOBS
    assert {s["op"] for s in jobs.values()} == {"create"}
    assert {s["newState"]["type"] for s in jobs.values()} == JOB_TYPES
    assert stored_jobs(project.local_root) == {}
    assert project.processes() == []


def test_up_trains_both_jobs(project: PulumiProject) -> None:
    project.up()

    jobs = project.output("jobs")
    assert set(jobs) == JOBS
    assert all(succeeded(job["state"]) for job in jobs.values()), jobs
    best = jobs[TUNING_JOB]["bestTrial"]
    assert best, jobs[TUNING_JOB]
    assert succeeded(best["state"]), best
    stored = stored_jobs(project.local_root)
    assert sorted(job.declared_name for job in stored.values()) == sorted(JOBS)
    assert all(succeeded(job.state) for job in stored.values()), stored


def test_second_up_changes_and_submits_nothing(project: PulumiProject) -> None:
    before = stored_jobs(project.local_root)

    project.up()

    update = project.last_update()
    assert update["kind"] == "update"
    assert set(update["resourceChanges"]) == {"same"}, update["resourceChanges"]
    assert stored_jobs(project.local_root) == before


def test_refresh_finds_no_drift(project: PulumiProject) -> None:
    project.stack("refresh")

    refresh = project.last_update()
    assert refresh["kind"] == "refresh"
    assert set(refresh["resourceChanges"]) == {"same"}, refresh["resourceChanges"]


def test_state_holds_no_credential_and_the_provider_by_reference(project: PulumiProject) -> None:
    state = project.export()
    text = json.dumps(state)
    for pattern in CREDENTIAL_PATTERNS:
        assert not re.search(pattern, text), f"the state matches {pattern!r}"

    jobs = [r for r in state["deployment"]["resources"] if r["type"] in JOB_TYPES]
    assert len(jobs) == 2
    for job in jobs:
        pickled = base64.b64decode(job["outputs"]["__provider"])
        print(f"{job['type']}: __provider is {len(pickled)} bytes pickled")
        # A reference is a module path and a class name; dill would otherwise carry the
        # class's code (and whatever its closures reach) into every stack's state.
        assert b"_create_code" not in pickled
        assert b"_create_type" not in pickled
        assert len(pickled) < 1024, len(pickled)
        provider = pickle.loads(pickled)
        assert type(provider).__module__.startswith("vertex_training."), type(provider)


def test_destroy_deletes_every_job_and_keeps_the_bucket(project: PulumiProject) -> None:
    bucket_jobs = project.local_root / "bucket" / "jobs"
    outputs_before = sorted(p.relative_to(bucket_jobs) for p in bucket_jobs.rglob("*"))
    assert outputs_before

    project.stack("destroy")

    assert stored_jobs(project.local_root) == {}
    assert project.export()["deployment"].get("resources") in (None, [])
    assert project.processes() == []
    # Vertex keeps a job's bucket files when the job is deleted; so does the local stack.
    outputs_after = sorted(p.relative_to(bucket_jobs) for p in bucket_jobs.rglob("*"))
    assert outputs_after == outputs_before
