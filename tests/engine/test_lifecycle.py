"""The repository's ``local`` stack through the real engine: preview, up, an idempotent
second up, refresh, the state's contents, destroy. Its jobs train for real (the
two-replica MWMS cluster and the study: the one real training of each through the
engine), as shipped but for two things: the cluster trains the small CNN, not ResNet-50
(what is tested is two replicas in one cluster, which the network does not change; the
trainer builds ResNet-50 in tests/trainer/test_train_step_bench.py), and the study is one
round of two trials, not three (six trials two at a time run with a stand-in in
tests/local/test_tuning_job.py). What serves the study's model is test_serving.py's, so
it is left out here.

Training the stack takes minutes, so its lifecycle runs once per module, one stage per
fixture: each stage asks for the stages it follows and records what its test looks at,
right after it ran. A test asks for its stage alone, so it runs alone
(``pytest path::name`` runs the stages before it) and in any order, and a failure shows at
the stage that broke.
"""

from __future__ import annotations

import base64
import json
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject, repo_stack_config
from tests.engine.local_store import StoredJob, job_logs, stored_jobs, succeeded

pytestmark = pytest.mark.slow

CUSTOM_JOB = "cassava-mwms"
TUNING_JOB = "horses-humans-tuning"
JOBS = {CUSTOM_JOB, TUNING_JOB}
JOB_TYPES = {
    "pulumi-python:dynamic/vertex:CustomJob",
    "pulumi-python:dynamic/vertex:HyperparameterTuningJob",
}
TRIALS = 2
# What must never reach the state: tokens, keys, passwords (the provider holds no client).
CREDENTIAL_PATTERNS = (
    r"ya29\.",  # a Google OAuth access token
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r'"(access_token|refresh_token|private_key|client_secret|password)"',
    r"AIza[0-9A-Za-z_-]{20}",  # a Google API key
)


@dataclass(frozen=True)
class Seen:
    """What one stage left, read right after it ran."""

    stored: dict[str, StoredJob]
    processes: list[str]
    update: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    bucket_files: tuple[Path, ...] = ()
    custom_job_logs: dict[str, str] | None = None


def _bucket_files(project: PulumiProject) -> tuple[Path, ...]:
    bucket_jobs = project.local_root / "bucket" / "jobs"
    return tuple(sorted(p.relative_to(bucket_jobs) for p in bucket_jobs.rglob("*")))


def jobs_stack_config() -> dict[str, Any]:
    """The repository's local stack without the model and the endpoint that serve its
    study, the cluster on the small CNN, the study one round long, each job looked at every
    second."""
    config = repo_stack_config()
    for key in ("vertex-training:models", "vertex-training:endpoints"):
        config["config"].pop(key)
    for job in config["config"]["vertex-training:jobs"]:
        job["pollIntervalSeconds"] = 1
        if job["name"] == CUSTOM_JOB:
            for role in ("chief", "workers"):
                args = job[role]["args"] = list(job[role]["args"])
                assert args[args.index("--workload") + 1] == "cassava", args
                args[args.index("--workload") + 1] = "horses_or_humans"
        if job["name"] == TUNING_JOB:
            assert job["parallelTrialCount"] == TRIALS, job
            job["maxTrialCount"] = TRIALS
    return config


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    return new_project("lifecycle", jobs_stack_config())


@pytest.fixture(scope="module")
def previewed(project: PulumiProject) -> tuple[list[dict[str, Any]], Seen]:
    steps = project.preview_steps()
    return steps, Seen(stored_jobs(project.local_root), project.processes())


@pytest.fixture(scope="module")
def first_up(project: PulumiProject, previewed: object) -> Seen:
    project.up()
    stored = stored_jobs(project.local_root)
    custom = [job for job in stored.values() if job.declared_name == CUSTOM_JOB]
    return Seen(
        stored,
        project.processes(),
        outputs=project.output("jobs"),
        state=project.export(),
        bucket_files=_bucket_files(project),
        custom_job_logs=job_logs(project.local_root, custom[0].job_id) if custom else None,
    )


@pytest.fixture(scope="module")
def second_up(project: PulumiProject, first_up: Seen) -> Seen:
    project.up()
    return Seen(stored_jobs(project.local_root), project.processes(), project.last_update())


@pytest.fixture(scope="module")
def refreshed(project: PulumiProject, second_up: Seen) -> Seen:
    project.stack("refresh")
    return Seen(stored_jobs(project.local_root), project.processes(), project.last_update())


@pytest.fixture(scope="module")
def destroyed(project: PulumiProject, refreshed: Seen) -> Seen:
    project.stack("destroy")
    return Seen(
        stored_jobs(project.local_root),
        project.processes(),
        state=project.export(),
        bucket_files=_bucket_files(project),
    )


def test_preview_lists_both_jobs_as_creates_and_starts_nothing(
    previewed: tuple[list[dict[str, Any]], Seen],
) -> None:
    steps, seen = previewed

    jobs = {s["urn"].rsplit("::", 1)[-1]: s for s in steps if any(t in s["urn"] for t in JOB_TYPES)}
    assert set(jobs) == JOBS
    assert {s["op"] for s in jobs.values()} == {"create"}
    assert {s["newState"]["type"] for s in jobs.values()} == JOB_TYPES
    assert seen.stored == {}
    assert seen.processes == []


def test_up_trains_both_jobs(first_up: Seen) -> None:
    jobs = first_up.outputs
    assert jobs is not None and set(jobs) == JOBS
    assert all(succeeded(job["state"]) for job in jobs.values()), jobs
    best = jobs[TUNING_JOB]["bestTrial"]
    assert best, jobs[TUNING_JOB]
    assert succeeded(best["state"]), best
    assert sorted(job.declared_name for job in first_up.stored.values()) == sorted(JOBS)
    assert all(succeeded(job.state) for job in first_up.stored.values()), first_up.stored


def test_the_mwms_job_trains_its_two_replicas_in_one_cluster(first_up: Seen) -> None:
    logs = first_up.custom_job_logs
    assert logs is not None
    # The chief and the worker, each a process with the TF_CONFIG Vertex would give it.
    assert "group_size = 2" in logs["workerpool0-0.log"]
    assert "group_size = 2" in logs["workerpool1-0.log"]


def test_up_leaves_each_model_in_the_bucket(first_up: Seen) -> None:
    files = {str(path) for path in first_up.bucket_files}
    models = sorted(f for f in files if f.endswith("saved_model.pb"))
    # One model from the two-replica MWMS job (the worker saves to a temporary dir), one
    # per trial of the study.
    assert models == [
        f"{CUSTOM_JOB}/model/saved_model.pb",
        *(f"{TUNING_JOB}/{t}/model/saved_model.pb" for t in range(1, TRIALS + 1)),
    ]


def test_second_up_changes_and_submits_nothing(first_up: Seen, second_up: Seen) -> None:
    assert second_up.update is not None
    assert second_up.update["kind"] == "update"
    assert set(second_up.update["resourceChanges"]) == {"same"}, second_up.update
    assert second_up.stored == first_up.stored


def test_refresh_finds_no_drift(second_up: Seen, refreshed: Seen) -> None:
    assert refreshed.update is not None
    assert refreshed.update["kind"] == "refresh"
    assert set(refreshed.update["resourceChanges"]) == {"same"}, refreshed.update
    assert refreshed.stored == second_up.stored


def test_state_holds_no_credential_and_the_provider_by_reference(first_up: Seen) -> None:
    assert first_up.state is not None
    text = json.dumps(first_up.state)
    for pattern in CREDENTIAL_PATTERNS:
        assert not re.search(pattern, text), f"the state matches {pattern!r}"

    jobs = [r for r in first_up.state["deployment"]["resources"] if r["type"] in JOB_TYPES]
    assert len(jobs) == 2
    for job in jobs:
        pickled = base64.b64decode(job["outputs"]["__provider"])
        # A reference is a module path and a class name; dill would otherwise carry the
        # class's code (and whatever its closures reach) into every stack's state.
        assert b"_create_code" not in pickled
        assert b"_create_type" not in pickled
        assert len(pickled) < 1024, len(pickled)
        provider = pickle.loads(pickled)
        assert type(provider).__module__.startswith("vertex_training."), type(provider)


def test_destroy_deletes_every_job_and_keeps_the_bucket(first_up: Seen, destroyed: Seen) -> None:
    assert first_up.bucket_files
    assert destroyed.stored == {}
    assert destroyed.state is not None
    assert destroyed.state["deployment"].get("resources") in (None, [])
    assert destroyed.processes == []
    # Vertex keeps a job's bucket files when the job is deleted; so does the local stack.
    assert destroyed.bucket_files == first_up.bucket_files
