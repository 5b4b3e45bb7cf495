"""Through the real engine: a dev stack whose job wants more replicas than the persistent
resource it names can hold ends its preview with one message naming both sides, no
traceback and nothing created (the stack reader refuses it before any registration, so
the gcp plugin this machine lacks is never asked for)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.engine.conftest import REPO_ROOT, PulumiProject, make_project

pytestmark = pytest.mark.slow


@pytest.fixture
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    config = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    (job,) = [
        j for j in config["config"]["vertex-training:jobs"] if j["name"] == "cassava-mwms-cpu"
    ]
    job["workers"] = {**job["workers"], "replicaCount": 3}
    for made in make_project(tmp_path_factory, pulumi_bin_dir, config, "capacity-unfit"):
        made.env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
        yield made


def test_a_job_too_big_for_its_resource_is_refused_and_nothing_is_created(
    project: PulumiProject,
) -> None:
    done = project.stack("preview", check=False)

    output = done.stdout + done.stderr
    assert done.returncode != 0
    # One problem (the engine repeats the program's error under "unhandled error").
    (line,) = {x.strip() for x in output.splitlines() if "holds at most" in x}
    assert "jobs[1].workers.replicaCount: 3 replicas of n1-standard-8" in line
    assert "persistent resource 'warm-cpu' holds at most 2" in line
    assert "Traceback" not in output
    resources = project.export()["deployment"].get("resources") or []
    assert [r["urn"] for r in resources if r["type"] != "pulumi:pulumi:Stack"] == []
