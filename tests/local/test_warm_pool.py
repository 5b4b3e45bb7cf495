"""A local persistent resource: a warm pool of real worker processes (TensorFlow imported)
that jobs placed on it run their replicas in, one job per interpreter.

The pool is driven through its dynamic provider (create, diff, read, delete), as the engine
drives it; jobs through the local backend, as the job provider does."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bodies import custom_job, pool, study, tuning_job
from tests.fakes.faults import ended
from tests.local.conftest import pid_gone
from vertex_training._dynamic import BackendKind, BackendSettings
from vertex_training.capacity.local import WarmPoolProvider, slot_count
from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.warm import WORKER_FILE, cold_reason, pool_dir, workers

RESOURCE = "warm-pool-1"
PROBE = textwrap.dedent(
    """
    import json, os, sys
    tf = sys.modules.get("tensorflow")
    record = {
        "pid": os.getpid(),
        "tensorflow_imported": tf is not None,
        "seen_before": getattr(tf, "_probe_job", None),
        "cluster_spec": json.loads(os.environ["CLUSTER_SPEC"]),
        "tf_config": os.environ.get("TF_CONFIG"),
        "model_dir": os.environ.get("AIP_MODEL_DIR"),
        "argv": sys.argv[1:],
    }
    if tf is not None:
        tf._probe_job = os.environ["CLOUD_ML_JOB_ID"]  # what the next job must not see
    task = record["cluster_spec"]["task"]
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
    if trial:
        import hypertune
        hypertune.HyperTune().report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag="accuracy", metric_value=0.5, global_step=1)
    out = os.path.join(sys.argv[1], f"{trial}{task['type']}-{task['index']}.json")
    with open(out, "w") as handle:
        json.dump(record, handle)
    """
)


def _props(root: Path, replicas: int = 2) -> dict[str, Any]:
    backend = BackendSettings(
        BackendKind.LOCAL, project="local", location="us-central1", local_root=str(root)
    ).to_props()
    pools = [
        {"id": "cpu", "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": replicas}
    ]
    return {
        "spec": {"resourcePools": pools},
        "resource_id": RESOURCE,
        "backend": backend,
        "backend_target": backend,
        "identity": "project/local/pool",
        "provider_version": "1",
    }


def _worker_pids(root: Path) -> list[int]:
    return [
        int(json.loads((w / WORKER_FILE).read_text())["pid"])
        for w in workers(pool_dir(root.resolve(), RESOURCE))
        if (w / WORKER_FILE).exists()
    ]


def test_a_job_on_a_persistent_resource_that_has_no_pool_here_is_refused(tmp_path: Path) -> None:
    backend = JobRunner(str(tmp_path / "root"))
    body = custom_job(pool(), persistentResourceId="nowhere")
    with pytest.raises(JobRefusedError, match=r"jobSpec.persistentResourceId: no persistent "):
        backend.submit(JobKind.CUSTOM_JOB, body)
    assert not (tmp_path / "root" / "jobs").exists() or not list(
        (tmp_path / "root" / "jobs").iterdir()
    )


def test_a_pool_without_replicas_is_refused_at_check(tmp_path: Path) -> None:
    result = WarmPoolProvider().check({}, _props(tmp_path / "root", replicas=0))
    assert [f.reason for f in result.failures] == [
        "resourcePools: no replica in any pool; valid: a replicaCount of 1 or more"
    ]


def test_a_pool_has_one_slot_per_replica_as_the_engine_hands_the_counts_over() -> None:
    pools = [
        {"replicaCount": "2"},  # int64 as REST writes it
        {"replicaCount": 1.0},  # a number through the engine
        {"autoscalingSpec": {"minReplicaCount": 1, "maxReplicaCount": 3}},
    ]
    assert slot_count(pools) == 4


@pytest.mark.parametrize(
    ("command", "env", "reason"),
    [
        (["/other/python", "-m", "trainer.task"], {}, "is not the pool's interpreter"),
        (["PY", "-c", "print(1)"], {}, "not `python -m <module>` or `python <script>` but '-c'"),
        (["PY", "-m", "trainer.task"], {"TF_USE_LEGACY_KERAS": "0"}, "TF_USE_LEGACY_KERAS='0'"),
        (["PY", "-m", "trainer.task"], {"TF_USE_LEGACY_KERAS": "1"}, ""),
        (["PY", "script.py", "--x=1"], {"TF_USE_LEGACY_KERAS": "1"}, ""),
    ],
)
def test_a_replica_runs_warm_only_where_the_pools_interpreter_read_what_it_would(
    command: list[str], env: dict[str, str], reason: str
) -> None:
    pool_info = {"python": "PY", "environment": {"TF_USE_LEGACY_KERAS": "1"}}
    said = cold_reason(pool_info, command, env)
    assert (reason in said) if reason else said == ""


@pytest.fixture(scope="module")
def warm_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The local root of a pool of two slots, created as ``up`` creates it (warm when
    ``create`` returns); deleted at the end whatever happened."""
    root = tmp_path_factory.mktemp("warm") / "root"
    props = _props(root)
    provider = WarmPoolProvider()
    created = provider.create(props)
    try:
        yield root
    finally:
        provider.delete(created.id, props)


def _probe_pool(tmp: Path, replicas: int = 1, env: dict[str, str] | None = None) -> Any:
    """A pool body whose replicas run ``PROBE``, writing into ``tmp / "out"``."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "out").mkdir(exist_ok=True)
    script = tmp / "probe.py"
    script.write_text(PROBE)
    command = ("python", str(script))
    return pool(command=command, args=(str(tmp / "out"),), replicas=replicas, env=env or {})


def _run(root: Path, tmp: Path, kind: JobKind, body: dict[str, Any]) -> Any:
    """The job's record when it ended, its replicas' probes by name, its supervisor log."""
    backend = JobRunner(str(root))
    record = ended(backend, backend.submit(kind, body).name, timeout=300)
    job_dir = backend.jobs_dir / record.name.rsplit("/", 1)[-1]
    probes = {p.stem: json.loads(p.read_text()) for p in sorted((tmp / "out").glob("*.json"))}
    return record, probes, (job_dir / "supervisor.log").read_text()


def _probe_job(
    root: Path, tmp: Path, *, replicas: int = 1, env: dict[str, str] | None = None
) -> Any:
    pools = [_probe_pool(tmp, env=env)]
    if replicas > 1:
        pools.append(_probe_pool(tmp, replicas=replicas - 1))
    output = {"outputUriPrefix": str(tmp / "gcs")}
    body = custom_job(*pools, persistentResourceId=RESOURCE, baseOutputDirectory=output)
    return _run(root, tmp, JobKind.CUSTOM_JOB, body)


def _probe_alone(
    root: Path, tmp: Path, env: dict[str, str] | None = None
) -> tuple[set[int], dict[str, Any], str]:
    """The pool's waiting workers, then a one-replica job that succeeded: its probe and
    its supervisor log."""
    waiting = set(_worker_pids(root))
    record, probes, log = _probe_job(root, tmp, env=env)
    assert record.state is JobState.SUCCEEDED, record.error_message
    (probe,) = probes.values()
    return waiting, probe, log


@pytest.mark.slow
def test_a_job_runs_in_a_warm_worker_with_the_environment_vertex_gives(
    warm_root: Path, tmp_path: Path
) -> None:
    waiting, probe, log = _probe_alone(warm_root, tmp_path)
    assert probe["pid"] in waiting, "it ran in one of the pool's workers"
    assert probe["tensorflow_imported"] is True
    assert probe["cluster_spec"]["task"] == {"type": "workerpool0", "index": 0}
    assert probe["tf_config"] is None  # a single replica gets none, as on Vertex
    assert probe["model_dir"] == f"{tmp_path / 'gcs'}/model/"
    assert f"runs warm in worker {probe['pid']} of persistent resource {RESOURCE}" in log
    assert pid_gone(probe["pid"]), "a worker serves one job"
    # Its slot's next worker is a copy of it from before the job, warm without an import,
    # in a session of its own (a stop of a job's process group spares it).
    (successor,) = set(_worker_pids(warm_root)) - waiting
    slot_logs = "".join(
        log.read_text() for log in (pool_dir(warm_root.resolve(), RESOURCE) / "logs").glob("*.log")
    )
    assert f"worker {successor} of slot" in slot_logs
    assert f"forked warm from {probe['pid']}" in slot_logs
    assert os.getsid(successor) == successor


@pytest.mark.slow
def test_each_job_gets_a_fresh_interpreter_and_a_cluster_gets_one_worker_each(
    warm_root: Path, tmp_path: Path
) -> None:
    first, probes_1, _ = _probe_job(warm_root, tmp_path / "1")
    second, probes_2, log = _probe_job(warm_root, tmp_path / "2", replicas=2)
    assert first.state is JobState.SUCCEEDED and second.state is JobState.SUCCEEDED
    (one,) = probes_1.values()
    assert set(probes_2) == {"workerpool0-0", "workerpool1-0"}
    for probe in probes_2.values():
        assert probe["tensorflow_imported"] is True
        assert probe["seen_before"] is None, "no job sees what another left"
        assert probe["pid"] != one["pid"]
        assert json.loads(probe["tf_config"])["cluster"].keys() == {"chief", "worker"}
    assert log.count("runs warm") == 2


@pytest.mark.slow
def test_a_studys_trials_each_run_in_a_fresh_warm_worker(warm_root: Path, tmp_path: Path) -> None:
    trial = {"workerPoolSpecs": [_probe_pool(tmp_path)], "persistentResourceId": RESOURCE}
    parameter = {"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}
    body = tuning_job(trial, study(parameter, algorithm="RANDOM_SEARCH"), max_trials=3)
    record, probes, log = _run(warm_root, tmp_path, JobKind.HYPERPARAMETER_TUNING_JOB, body)
    assert record.state is JobState.SUCCEEDED, record.error_message
    assert len(probes) == 3 and len({p["pid"] for p in probes.values()}) == 3
    assert all(p["tensorflow_imported"] and p["seen_before"] is None for p in probes.values())
    assert log.count("runs warm") == 3


@pytest.mark.slow
def test_a_job_whose_environment_changes_what_tensorflow_read_runs_cold(
    warm_root: Path, tmp_path: Path
) -> None:
    pool_pids, probe, log = _probe_alone(warm_root, tmp_path, env={"TF_CPP_MIN_LOG_LEVEL": "3"})
    assert probe["pid"] not in pool_pids and probe["tensorflow_imported"] is False
    (line,) = [line for line in log.splitlines() if "runs cold" in line]
    assert "TF_CPP_MIN_LOG_LEVEL='3'" in line and RESOURCE in line
    assert set(_worker_pids(warm_root)) == pool_pids, "the pool's workers still wait"


@pytest.mark.slow
def test_the_local_vertex_replaces_a_dead_worker_and_delete_leaves_none(
    tmp_path: Path,
) -> None:
    """As Vertex keeps a persistent resource's machines: the local Vertex replaces a worker
    that died; with the local Vertex itself gone (the machine restarted), diff notices and
    the update starts it again."""
    root = tmp_path / "root"
    props = _props(root, replicas=1)
    provider = WarmPoolProvider()
    created = provider.create(props)
    olds = {**props, **created.outs}
    try:
        assert created.outs["healthy"] is True
        assert provider.diff(created.id, olds, props).changes is False
        (victim,) = _worker_pids(root)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not pid_gone(victim):
            assert time.monotonic() < deadline, "the killed worker did not end"
            time.sleep(0.05)
        deadline = time.monotonic() + 120
        while not (alive := [p for p in _worker_pids(root) if not pid_gone(p)]):
            assert time.monotonic() < deadline, "no worker took the dead one's place"
            time.sleep(0.2)
        (replacement,) = alive
        assert replacement != victim
        assert provider.read(created.id, olds).outs["healthy"] is True

        server = json.loads((root / "vertex.json").read_text())["pid"]
        os.kill(server, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not pid_gone(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert provider.diff(created.id, olds, props).changes is True
        assert provider.update(created.id, olds, props).outs["healthy"] is True
        assert provider.diff(created.id, olds, props).changes is False
    finally:
        provider.delete(created.id, props)
    assert pid_gone(replacement)
    assert not pool_dir(root.resolve(), RESOURCE).exists()
