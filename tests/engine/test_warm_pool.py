"""A local persistent resource through the real engine: a program declares a warm pool
and a job placed on it. ``up`` starts the pool and the job runs in one of its warm
workers; a killed worker is noticed by the preview and replaced by the next ``up`` (the
job does not run again); ``destroy`` leaves no pool process.

Each stage is a module fixture that asks for the stages before it, so each test runs
alone and in any order."""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject, wait_for
from tests.engine.local_store import StoredJob, stored_jobs, succeeded

pytestmark = pytest.mark.slow

RESOURCE = "warm-1"
PROJECT = "name: warm-pool\nruntime: python\n"
PROBE = "import sys\nprint('tensorflow already imported:', 'tensorflow' in sys.modules)\n"
PROGRAM = textwrap.dedent(
    f"""
    from pathlib import Path

    import pulumi

    import vertex_training as vt
    from vertex_training.capacity.local import WarmPool, WarmPoolArgs

    platform = vt.TrainingPlatform(
        "ml", vt.TrainingPlatformArgs(environment="local", local_root=".local-vertex")
    )
    machine = {{"machineType": "n1-standard-4"}}
    pool = WarmPool(
        "capacity-pool",
        WarmPoolArgs(
            resource_id="{RESOURCE}",
            resource_pools=[{{"id": "cpu", "machineSpec": machine, "replicaCount": 1}}],
            local_root=str(platform.local_root),
            project=platform.project,
            location=platform.region,
        ),
    )
    vt.CustomJob(
        "on-pool",
        vt.CustomJobArgs(
            platform=platform,
            persistent_resource_id="{RESOURCE}",
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                image="local/trainer@sha256:" + "0" * 64,
                command=["python", str(Path("probe.py").resolve())],
            ),
            poll_interval_seconds=0.5,
        ),
        opts=pulumi.ResourceOptions(depends_on=[pool]),
    )
    """
)


def _pool_pids(project: PulumiProject) -> set[int]:
    slot = project.local_root / "capacity" / RESOURCE / "slots" / "0"
    return {int(w.name) for w in slot.iterdir()} if slot.is_dir() else set()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    program = {"Pulumi.yaml": PROJECT, "__main__.py": PROGRAM, "probe.py": PROBE}
    return new_project("warm-pool", {"config": {}}, program=program)


@pytest.fixture(scope="module")
def first_up(project: PulumiProject) -> tuple[dict[str, StoredJob], set[int], str]:
    """The jobs after the first up, the pool's live workers, the job's replica log."""
    project.up()
    stored = stored_jobs(project.local_root)
    (job,) = stored.values()
    log = (project.local_root / "jobs" / job.job_id / "logs" / "workerpool0-0.log").read_text()
    return stored, {p for p in _pool_pids(project) if _alive(p)}, log


@pytest.fixture(scope="module")
def replaced(
    project: PulumiProject, first_up: tuple[dict[str, StoredJob], set[int], str]
) -> tuple[dict[str, str], set[int], set[int], dict[str, StoredJob]]:
    """Kill the waiting worker: the local Vertex replaces it, as Vertex keeps a persistent
    resource's machines. The next preview's ops, the live workers before and after the
    next up, and the jobs after it."""
    (victim,) = first_up[1]
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: not _alive(victim), 10, "the killed worker to end")
    wait_for(lambda: any(_alive(p) for p in _pool_pids(project)), 180, "a worker in its place")
    ops = {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in project.preview_steps()}
    project.up()
    after = {p for p in _pool_pids(project) if _alive(p)}
    return ops, {victim}, after, stored_jobs(project.local_root)


@pytest.fixture(scope="module")
def destroyed(project: PulumiProject, replaced: object) -> tuple[list[str], bool, Any]:
    project.stack("destroy")
    resources = project.export()["deployment"].get("resources")
    pool = project.local_root / "capacity" / RESOURCE
    return project.processes(), pool.exists(), resources


def test_up_starts_the_pool_and_the_job_runs_in_a_warm_worker(
    first_up: tuple[dict[str, StoredJob], set[int], str],
) -> None:
    stored, workers, log = first_up
    (job,) = stored.values()
    assert succeeded(job.state), job
    assert "tensorflow already imported: True" in log
    assert len(workers) == 1, "the worker that ran the job was replaced by a fresh one"


def test_a_killed_worker_is_replaced_and_the_next_up_changes_nothing(
    first_up: tuple[dict[str, StoredJob], set[int], str],
    replaced: tuple[dict[str, str], set[int], set[int], dict[str, StoredJob]],
) -> None:
    ops, killed, after, stored = replaced
    assert set(ops.values()) <= {"same"}, ops
    assert len(after) == 1 and not after & killed
    assert set(stored) == set(first_up[0]), "the job did not run again"


def test_destroy_leaves_no_pool_process(destroyed: tuple[list[str], bool, Any]) -> None:
    processes, pool_left, resources = destroyed
    assert processes == []
    assert pool_left is False
    assert resources in (None, [])
