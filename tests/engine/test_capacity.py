"""Through the real engine: a dev stack whose job wants more replicas than the persistent
resource it names can hold ends its preview with one message naming both sides, no
traceback and nothing created (the stack reader refuses it before any registration, so
the gcp plugin this machine lacks is never asked for)."""

from __future__ import annotations

import pytest
import yaml

from tests.engine.conftest import REPO_ROOT, ProjectMaker, PulumiProject

pytestmark = pytest.mark.slow


@pytest.fixture
def project(new_project: ProjectMaker) -> PulumiProject:
    config = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    (job,) = [
        j for j in config["config"]["vertex-training:jobs"] if j["name"] == "cassava-mwms-cpu"
    ]
    job["workers"] = {**job["workers"], "replicaCount": 3}
    return new_project("capacity-unfit", config)


def test_a_job_too_big_for_its_resource_is_refused_and_nothing_is_created(
    project: PulumiProject,
) -> None:
    output = project.refused("preview")

    # One problem (the engine repeats the program's error under "unhandled error").
    (line,) = {x.strip() for x in output.splitlines() if "holds at most" in x}
    assert "jobs[1].workers.replicaCount: 3 replicas of n1-standard-8" in line
    assert "persistent resource 'warm-cpu' holds at most 2" in line
    resources = project.export()["deployment"].get("resources") or []
    assert [r["urn"] for r in resources if r["type"] != "pulumi:pulumi:Stack"] == []
