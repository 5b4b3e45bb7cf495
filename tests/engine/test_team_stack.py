"""A platform team's own stack through the real engine: two platforms in one stack, jobs
whose image is an Output (as when the stack builds it), then a label and display-name edit.
The names of the two platforms do not collide, and the edit is an in-place update that
starts no new training run.

Each stage (up, the edit, destroy) is a module fixture that asks for the stages before it
and records what its test reads, so each test runs alone and in any order."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject
from tests.engine.local_store import StoredJob, stored_jobs, succeeded

pytestmark = pytest.mark.slow

PROJECT = "name: team-stack\nruntime: python\n"
PROGRAM = textwrap.dedent(
    """
    import sys

    import pulumi

    import vertex_training as vt

    config = pulumi.Config()
    team = config.require("team")
    # An image known only once the engine resolves it, as one the stack builds would be.
    image = pulumi.Output.from_input("local/trainer@sha256:" + "0" * 64).apply(lambda i: i)
    for name in ("research", "prod-like"):
        platform = vt.TrainingPlatform(
            name, vt.TrainingPlatformArgs(environment="local", local_root=".local-vertex")
        )
        vt.CustomJob(
            f"{name}-train",
            vt.CustomJobArgs(
                platform=platform,
                display_name=f"{name} training ({team})",
                labels={"team": team},
                chief=vt.WorkerPool(
                    machine_type="n1-standard-4",
                    image=image,
                    command=[sys.executable, "-c", "print('trained')"],
                ),
                poll_interval_seconds=0.5,
            ),
        )
    """
)
JOBS = {"research-train", "prod-like-train"}


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    config = {"config": {"team-stack:team": "vision"}}
    return new_project(
        "team-stack", config, program={"Pulumi.yaml": PROJECT, "__main__.py": PROGRAM}
    )


def _stored(project: PulumiProject) -> dict[str, StoredJob]:
    return stored_jobs(project.dir / ".local-vertex")


def _ops(steps: list[dict[str, Any]]) -> dict[str, str]:
    return {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in steps if ":dynamic/vertex:" in s["urn"]}


@pytest.fixture(scope="module")
def first_up(project: PulumiProject) -> tuple[dict[str, str], dict[str, StoredJob]]:
    """The preview's ops of a fresh stack, and the jobs its up left."""
    ops = _ops(project.preview_steps())
    project.up()
    return ops, _stored(project)


@pytest.fixture(scope="module")
def edited(
    project: PulumiProject, first_up: object
) -> tuple[dict[str, str], dict[str, StoredJob], dict[str, int]]:
    """The preview's ops of the team's label edit, the jobs after its up, and its changes."""
    project.write_config({"config": {"team-stack:team": "speech"}})
    ops = _ops(project.preview_steps())
    project.up()
    return ops, _stored(project), project.last_update()["resourceChanges"]


@pytest.fixture(scope="module")
def destroyed(
    project: PulumiProject, edited: object
) -> tuple[dict[str, StoredJob], Any, list[str]]:
    project.stack("destroy")
    resources = project.export()["deployment"].get("resources")
    return _stored(project), resources, project.processes()


def test_two_platforms_preview_and_up_cleanly(
    first_up: tuple[dict[str, str], dict[str, StoredJob]],
) -> None:
    ops, stored = first_up
    assert ops == dict.fromkeys(JOBS, "create"), ops
    assert len(stored) == 2, stored
    assert all(succeeded(job.state) for job in stored.values()), stored
    assert {job.labels["team"] for job in stored.values()} == {"vision"}


def test_a_label_and_display_name_edit_updates_in_place(
    first_up: tuple[dict[str, str], dict[str, StoredJob]],
    edited: tuple[dict[str, str], dict[str, StoredJob], dict[str, int]],
) -> None:
    """In the state only: Vertex cannot relabel a submitted job, nor can the local Vertex;
    the new labels go with the job's next run."""
    _, before = first_up
    ops, after, changes = edited
    assert ops == dict.fromkeys(JOBS, "update"), ops
    assert set(after) == set(before), "no new training run"
    assert {job.labels["team"] for job in after.values()} == {"vision"}
    assert changes.get("update") == 2 and "create" not in changes and "replace" not in changes


def test_destroy_leaves_nothing(
    first_up: tuple[dict[str, str], dict[str, StoredJob]],
    destroyed: tuple[dict[str, StoredJob], Any, list[str]],
) -> None:
    assert first_up[1]
    stored, resources, processes = destroyed
    assert stored == {}
    assert resources in (None, [])
    assert processes == []
