"""examples/local-study through the real engine, as its README runs it: a user's own
project (not this repository's program) that depends on the package by path. up runs the
study's trials on this machine, a second up starts nothing, destroy leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import REPO_ROOT, PulumiProject, make_project
from tests.engine.local_store import stored_jobs, succeeded

pytestmark = pytest.mark.slow

EXAMPLE = REPO_ROOT / "examples" / "local-study"


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    yield from make_project(tmp_path_factory, pulumi_bin_dir, {}, "local-study", source=EXAMPLE)


def test_up_runs_the_study(project: PulumiProject) -> None:
    done = project.up()

    trials = project.output("trials")
    assert len(trials) == 4, trials
    assert all(succeeded(t["state"]) for t in trials), trials
    best = project.output("bestTrial")
    assert best["final_metrics"]["score"] == max(t["final_metrics"]["score"] for t in trials)
    # The provider's progress lines reach the engine's output while it waits.
    assert "trials: 4 started" in done.stdout + done.stderr


def test_second_up_starts_nothing(project: PulumiProject) -> None:
    root = project.dir / ".local-vertex"
    before = stored_jobs(root)

    project.up()

    assert set(project.last_update()["resourceChanges"]) == {"same"}
    assert stored_jobs(root) == before


def test_destroy_leaves_nothing(project: PulumiProject) -> None:
    project.stack("destroy")

    assert stored_jobs(project.dir / ".local-vertex") == {}
    assert project.export()["deployment"].get("resources") in (None, [])
    assert project.processes() == []
