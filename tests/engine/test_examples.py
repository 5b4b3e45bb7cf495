"""examples/local-study through the real engine, as its README runs it: a user's own
project (not this repository's program) that depends on the package by path. up runs the
study's trials on this machine, a second up starts nothing, destroy leaves nothing.

Each stage is a module fixture that asks for the stages before it and records what its
test reads, so each test runs alone and in any order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.engine.conftest import REPO_ROOT, ProjectMaker, PulumiProject
from tests.engine.local_store import StoredJob, stored_jobs, succeeded

pytestmark = pytest.mark.slow

EXAMPLE = REPO_ROOT / "examples" / "local-study"


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    return new_project("local-study", {}, source=EXAMPLE)


@dataclass(frozen=True)
class Seen:
    """What one stage left, read right after it ran."""

    stored: dict[str, StoredJob]
    output: str = ""
    changes: dict[str, int] | None = None
    trials: list[dict[str, Any]] | None = None
    best: dict[str, Any] | None = None
    resources: Any = None
    processes: tuple[str, ...] = ()


def _stored(project: PulumiProject) -> dict[str, StoredJob]:
    return stored_jobs(project.dir / ".local-vertex")


@pytest.fixture(scope="module")
def first_up(project: PulumiProject) -> Seen:
    done = project.up()
    return Seen(
        _stored(project),
        output=done.stdout + done.stderr,
        trials=project.output("trials"),
        best=project.output("bestTrial"),
    )


@pytest.fixture(scope="module")
def second_up(project: PulumiProject, first_up: Seen) -> Seen:
    project.up()
    return Seen(_stored(project), changes=project.last_update()["resourceChanges"])


@pytest.fixture(scope="module")
def destroyed(project: PulumiProject, second_up: Seen) -> Seen:
    project.stack("destroy")
    return Seen(
        _stored(project),
        resources=project.export()["deployment"].get("resources"),
        processes=tuple(project.processes()),
    )


def test_up_runs_the_study(first_up: Seen) -> None:
    trials = first_up.trials
    assert trials is not None and len(trials) == 4, trials
    assert all(succeeded(t["state"]) for t in trials), trials
    assert first_up.best is not None
    best_score = first_up.best["final_metrics"]["score"]
    assert best_score == max(t["final_metrics"]["score"] for t in trials)
    # The provider's progress lines reach the engine's output while it waits.
    assert "trials: 4 started" in first_up.output


def test_second_up_starts_nothing(first_up: Seen, second_up: Seen) -> None:
    assert second_up.changes is not None
    assert set(second_up.changes) == {"same"}, second_up.changes
    assert second_up.stored == first_up.stored


def test_destroy_leaves_nothing(first_up: Seen, destroyed: Seen) -> None:
    assert first_up.stored
    assert destroyed.stored == {}
    assert destroyed.resources in (None, [])
    assert destroyed.processes == ()
