"""``vt.PersistentResource`` on a local platform through the real engine: ``up`` creates its
warm pool and a job placed on the resource itself (not its id) runs in a warm worker;
``destroy`` leaves no pool process. Runs where the warm pool
(``vertex_training.capacity.local``) is part of the package."""

from __future__ import annotations

import textwrap

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject
from tests.engine.local_store import stored_jobs, succeeded

pytestmark = pytest.mark.slow

PROGRAM = textwrap.dedent(
    """
    from pathlib import Path

    import vertex_training as vt

    platform = vt.TrainingPlatform(
        "ml", vt.TrainingPlatformArgs(environment="local", local_root=".local-vertex")
    )
    warm = vt.PersistentResource(
        "warm-1",
        vt.PersistentResourceArgs(
            platform=platform, pools=[vt.ResourcePool(machine_type="n1-standard-4")]
        ),
    )
    vt.CustomJob(
        "on-warm",
        vt.CustomJobArgs(
            platform=platform,
            persistent_resource_id=warm,
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                image="local/trainer@sha256:" + "0" * 64,
                command=["python", str(Path("probe.py").resolve())],
            ),
            poll_interval_seconds=0.5,
        ),
    )
    """
)
PROBE = "import sys\nprint('tensorflow already imported:', 'tensorflow' in sys.modules)\n"


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    pytest.importorskip("vertex_training.capacity.local")
    program = {
        "Pulumi.yaml": "name: capacity-local\nruntime: python\n",
        "__main__.py": PROGRAM,
        "probe.py": PROBE,
    }
    return new_project("capacity", {"config": {}}, program=program)


def test_a_job_on_a_local_resource_runs_warm_and_destroy_leaves_nothing(
    project: PulumiProject,
) -> None:
    project.up()
    (job,) = stored_jobs(project.local_root).values()
    assert succeeded(job.state), job
    log = project.local_root / "jobs" / job.job_id / "logs" / "workerpool0-0.log"
    assert "tensorflow already imported: True" in log.read_text()
    assert (project.local_root / "capacity" / "warm-1").is_dir()

    project.stack("destroy")
    assert project.processes() == []
    assert not (project.local_root / "capacity" / "warm-1").exists()
