"""CustomJob on the local backend, with real processes running the stand-in script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.bodies import custom_job, pool
from tests.fakes.faults import ended
from tests.local.conftest import STANDIN, PoolFactory, pid_gone
from trainer.config import CACHE_DIR_ENV, CACHE_MAX_BYTES_ENV
from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners import environment
from vertex_training.local.runners.environment import LOCAL_DECODED_CACHE_MAX_BYTES
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import LocalJobState

# Every test here starts real processes (supervisors, replicas).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

CUSTOM = JobKind.CUSTOM_JOB


def _job(
    pools: tuple[dict[str, Any], ...],
    *,
    base_output_directory: str | None = None,
    labels: tuple[tuple[str, str], ...] = (),
    **spec: Any,
) -> dict[str, Any]:
    """A CustomJob body; ``{}`` is an empty placeholder pool."""
    return custom_job(
        *pools,
        display_name="local-test",
        labels=dict(labels) or None,
        output=base_output_directory,
        **spec,
    )


def _submit(backend: JobRunner, body: dict[str, Any]) -> LocalJobState:
    return backend.submit(CUSTOM, body)


class TestEnvironmentConformance:
    """Every Vertex variable, read back from the processes that actually ran."""

    @pytest.fixture(scope="class")
    def ran(self, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict], str, str]:
        tmp = tmp_path_factory.mktemp("conformance")
        backend = JobRunner(str(tmp / "root"))
        dump = str(tmp / "env")

        def standin(replicas: int, *extra: str) -> dict[str, Any]:
            return pool(
                image="python:3.11-slim",
                command=("python", STANDIN),
                args=(f"--dump-env={dump}", *extra),
                env=(("STANDIN_EXTRA", "from-spec"),),
                replicas=replicas,
            )

        # The chief waits for all five environments: the parameter server and evaluator
        # (which never exit by themselves) have written theirs before the job ends.
        spec = _job(
            (
                standin(1, "--await-dumps=5"),
                standin(2),
                standin(1, "--sleep=60"),
                standin(1, "--sleep=60"),
            ),
            base_output_directory="gs://bucket/run1",
        )
        record = ended(backend, _submit(backend, spec).name, timeout=60)
        assert record.state is JobState.SUCCEEDED, record.error_message
        envs = {p.stem: json.loads(p.read_text()) for p in Path(dump).glob("*.json")}
        return envs, record.name.rsplit("/", 1)[-1], str(backend.root)

    @pytest.mark.parametrize(
        ("replica", "tf_type", "tf_index"),
        [
            ("workerpool0-0", "chief", 0),
            ("workerpool1-0", "worker", 0),
            ("workerpool1-1", "worker", 1),
            ("workerpool2-0", "ps", 0),
            ("workerpool3-0", "evaluator", 0),
        ],
    )
    def test_table(self, ran, replica: str, tf_type: str, tf_index: int) -> None:
        envs, job_id, root = ran
        env = envs[replica]
        tf_config = json.loads(env["TF_CONFIG"])
        cluster_spec = json.loads(env["CLUSTER_SPEC"])
        pool, index = replica.split("-")
        base = f"{root}/gcs/bucket/run1"
        table = {
            "TF_CONFIG.task": (tf_config["task"], {"type": tf_type, "index": tf_index}),
            "TF_CONFIG.cluster keys": (sorted(tf_config["cluster"]), ["chief", "ps", "worker"]),
            "TF_CONFIG.environment": (tf_config["environment"], "cloud"),
            "CLUSTER_SPEC.task": (cluster_spec["task"], {"type": pool, "index": int(index)}),
            "CLUSTER_SPEC.cluster keys": (
                sorted(cluster_spec["cluster"]),
                ["workerpool0", "workerpool1", "workerpool2", "workerpool3"],
            ),
            "AIP_MODEL_DIR": (env["AIP_MODEL_DIR"], f"{base}/model/"),
            "AIP_CHECKPOINT_DIR": (env["AIP_CHECKPOINT_DIR"], f"{base}/checkpoints/"),
            "AIP_TENSORBOARD_LOG_DIR": (env["AIP_TENSORBOARD_LOG_DIR"], f"{base}/logs/"),
            "CLOUD_ML_JOB_ID": (env["CLOUD_ML_JOB_ID"], job_id),
            "CLOUD_ML_TRIAL_ID": (env["CLOUD_ML_TRIAL_ID"], None),
            "CLOUD_ML_PROJECT_ID": (env["CLOUD_ML_PROJECT_ID"], "local"),
            "CLOUD_ML_REGION": (env["CLOUD_ML_REGION"], "local"),
            "pool env": (env["STANDIN_EXTRA"], "from-spec"),
            "args": (env["argv"][0].startswith("--dump-env="), True),
        }
        wrong = {k: got for k, (got, want) in table.items() if got != want}
        assert not wrong, wrong

    def test_all_replicas_share_one_cluster_with_distinct_ports(self, ran) -> None:
        envs = ran[0]
        assert len(envs) == 5
        clusters = {json.dumps(json.loads(e["CLUSTER_SPEC"])["cluster"]) for e in envs.values()}
        assert len(clusters) == 1
        cluster = json.loads(clusters.pop())
        addresses = [a for pool in cluster.values() for a in pool]
        assert len(set(addresses)) == 5
        assert all(a.startswith("localhost:") for a in addresses)
        tf_cluster = json.loads(envs["workerpool0-0"]["TF_CONFIG"])["cluster"]
        assert tf_cluster["chief"] == cluster["workerpool0"]
        assert tf_cluster["worker"] == cluster["workerpool1"]
        assert tf_cluster["ps"] == cluster["workerpool2"]

    def test_every_replica_shares_the_roots_one_bounded_decoded_cache(self, ran) -> None:
        envs, _, root = ran
        dirs = {e["TRAINER_CACHE_DIR"] for e in envs.values()}
        assert dirs == {f"{root}/decoded-cache"}
        assert {int(e["TRAINER_CACHE_MAX_BYTES"]) for e in envs.values()} == {
            LOCAL_DECODED_CACHE_MAX_BYTES
        }
        # The names the trainer reads (trainer/ imports nothing from the library).
        assert (environment.CACHE_DIR_ENV, environment.CACHE_MAX_BYTES_ENV) == (
            CACHE_DIR_ENV,
            CACHE_MAX_BYTES_ENV,
        )

    def test_metric_files_are_per_replica(self, ran) -> None:
        files = [e["CLOUD_ML_HP_METRIC_FILE"] for e in ran[0].values()]
        assert len(set(files)) == 5

    def test_job_entry_is_the_custom_job_spec(self, ran) -> None:
        job = json.loads(ran[0]["workerpool1-1"]["CLUSTER_SPEC"])["job"]
        assert [p["replica_count"] for p in job["worker_pool_specs"]] == ["1", "2", "1", "1"]
        assert job["base_output_directory"] == {"output_uri_prefix": "gs://bucket/run1"}


def test_submit_returns_at_once_and_the_job_moves_through_vertex_states(
    backend: JobRunner, standin_pool: PoolFactory
) -> None:
    record = _submit(backend, _job((standin_pool(["--sleep=1"]),)))
    # Returned before the job ran (a wall-clock bound would only measure machine load).
    assert record.state in (JobState.QUEUED, JobState.PENDING)
    assert record.name.startswith("projects/local/locations/local/customJobs/")
    seen: set[JobState] = {record.state}
    while not (record := backend.get(record.name)).state.is_terminal:
        seen.add(record.state)
        time.sleep(0.02)
    assert JobState.RUNNING in seen
    assert record.state is JobState.SUCCEEDED
    assert record.create_time and record.start_time and record.end_time


def test_failing_replica_fails_the_job_with_its_log_tail(
    backend: JobRunner, standin_pool: PoolFactory
) -> None:
    spec = _job(
        (
            standin_pool(["--sleep=30"]),
            standin_pool(["--exit-code=3", "--fail-only=workerpool1-1"], replicas=2),
        )
    )
    record = ended(backend, _submit(backend, spec).name, timeout=60)
    assert record.state is JobState.FAILED
    message = record.error_message or ""
    assert "The replica workerpool1-1 exited with a non-zero status of 3. " in message
    assert "failing on purpose: boom" in message
    assert "noise line 0" not in message  # only the tail
    replicas = {(r.pool, r.index): r for r in backend.get(record.name).replicas}
    assert replicas[1, 1].state == "FAILED"  # workerpool1-1
    assert replicas[0, 0].state == "KILLED"
    assert all(pid_gone(r.pid) for r in replicas.values() if r.pid)
    logs = (backend.jobs_dir / record.name.rsplit("/", 1)[-1] / "logs").glob("workerpool*.log")
    assert len(list(logs)) == 3


def test_cancel_leaves_no_process_behind(
    backend: JobRunner, standin_pool: PoolFactory, tmp_path: Path
) -> None:
    pids_dir = tmp_path / "pids"
    spec = _job(
        (
            standin_pool([f"--spawn-child={pids_dir}", "--sleep=300"]),
            standin_pool([f"--spawn-child={pids_dir}", "--sleep=300"], replicas=2),
        )
    )
    record = _submit(backend, spec)
    deadline = time.monotonic() + 30
    while len(list(pids_dir.glob("*.pids"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p) for f in pids_dir.glob("*.pids") for p in f.read_text().split()]
    assert len(pids) == 6  # three replicas, each with a child of its own
    supervisor = backend.get(record.name).supervisor_pid
    assert supervisor is not None

    backend.cancel(record.name)
    assert backend.get(record.name).state in (JobState.CANCELLING, JobState.CANCELLED)
    final = ended(backend, record.name, timeout=30)
    assert final.state is JobState.CANCELLED
    deadline = time.monotonic() + 10
    while not all(pid_gone(p) for p in [*pids, supervisor]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in [*pids, supervisor] if not pid_gone(p)] == []
    backend.cancel(record.name)  # cancelling a terminal job is fine
    assert backend.get(record.name).state is JobState.CANCELLED


def test_timeout_fails_the_job(backend: JobRunner, standin_pool: PoolFactory) -> None:
    record = _submit(backend, _job((standin_pool(["--sleep=60"]),), timeout_seconds=1))
    final = ended(backend, record.name, timeout=30)
    assert final.state is JobState.FAILED
    assert "timeout of 1s" in (final.error_message or "")


def test_the_decoded_cache_goes_with_the_roots_last_job(
    backend: JobRunner, standin_pool: PoolFactory
) -> None:
    first, second = (
        ended(backend, _submit(backend, _job((standin_pool(),))).name, timeout=30) for _ in range(2)
    )
    cache = backend.root / "decoded-cache"
    (cache / "cassava-224px").mkdir(parents=True)  # as a trainer leaves it
    backend.delete(first.name)
    assert cache.is_dir()  # the other job (a rerun of it would) may still read it
    backend.delete(second.name)
    assert not cache.exists()


def test_delete_removes_the_job_and_unknown_names_raise(
    backend: JobRunner, standin_pool: PoolFactory
) -> None:
    record = ended(backend, _submit(backend, _job((standin_pool(),))).name, timeout=30)
    backend.delete(record.name)
    with pytest.raises(JobNotFoundError):
        backend.get(record.name)
    with pytest.raises(JobNotFoundError):
        backend.cancel(record.name)
    with pytest.raises(JobNotFoundError, match="no local job"):
        backend.get("projects/p/locations/us-central1/customJobs/1")
    tuning_name = record.name.replace("customJobs", "hyperparameterTuningJobs")
    with pytest.raises(JobNotFoundError):
        backend.get(tuning_name)


_OTHER_PROCESS = """
import sys, json
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import LocalJobState
backend = JobRunner(sys.argv[1])
if sys.argv[2] == "cancel":
    backend.cancel(sys.argv[3])
print(json.dumps({"state": backend.get(sys.argv[3]).state.value}))
"""


def test_get_and_cancel_from_another_process(backend: JobRunner, standin_pool: PoolFactory) -> None:
    record = _submit(backend, _job((standin_pool(["--sleep=300"]),)))
    backend_process_env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}

    def other(action: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS, str(backend.root), action, record.name],
            capture_output=True,
            text=True,
            check=True,
            env=backend_process_env,
            timeout=60,
        )
        return json.loads(out.stdout)["state"]

    while backend.get(record.name).state is not JobState.RUNNING:
        time.sleep(0.05)
    assert other("get") == "RUNNING"
    assert other("cancel") in ("CANCELLING", "CANCELLED")
    assert ended(backend, record.name, timeout=30).state is JobState.CANCELLED
    assert other("get") == "CANCELLED"


def test_a_dead_supervisors_replicas_are_stopped_and_the_job_taken_over(
    backend: JobRunner, standin_pool: PoolFactory
) -> None:
    record = _submit(backend, _job((standin_pool(["--sleep=300"]),)))
    while backend.get(record.name).state is not JobState.RUNNING:
        time.sleep(0.05)
    details = backend.get(record.name)
    os.kill(details.supervisor_pid, 9)  # type: ignore[arg-type]
    replica_pid = details.replicas[0].pid
    deadline = time.monotonic() + 10
    while not pid_gone(details.supervisor_pid) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.05)
    taken_over = backend.get(record.name)
    assert taken_over.state is JobState.QUEUED
    assert taken_over.supervisor_pid not in (None, details.supervisor_pid)
    assert [r.state for r in taken_over.replicas] == ["KILLED"]
    deadline = time.monotonic() + 10
    while not pid_gone(replica_pid) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.05)
    assert pid_gone(replica_pid)  # type: ignore[arg-type]
    backend.cancel(record.name)
    assert ended(backend, record.name).state is JobState.CANCELLED


def test_gpus_are_split_between_replicas_by_accelerator_count(
    backend: JobRunner,
    standin_pool: PoolFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A machine with four GPUs, as nvidia-smi would list them.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_smi = bin_dir / "nvidia-smi"
    fake_smi.write_text("#!/bin/sh\nprintf '0\\n1\\n2\\n3\\n'\n")
    fake_smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    dump = tmp_path / "env"
    spec = _job(
        (
            standin_pool([f"--dump-env={dump}", "--await-dumps=4"], accelerators=2),
            standin_pool([f"--dump-env={dump}"], replicas=2, accelerators=1),
            {},
            standin_pool([f"--dump-env={dump}", "--sleep=60"]),
        )
    )
    record = ended(backend, _submit(backend, spec).name, timeout=60)
    assert record.state is JobState.SUCCEEDED, record.error_message
    visible = {
        p.stem: json.loads(p.read_text())["CUDA_VISIBLE_DEVICES"] for p in dump.glob("*.json")
    }
    assert visible == {
        "workerpool0-0": "0,1",
        "workerpool1-0": "2",
        "workerpool1-1": "3",
        "workerpool3-0": "",  # a CPU-only machine on Vertex sees no GPU
    }
