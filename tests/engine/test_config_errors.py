"""What the engine shows for a stack that cannot run: one clear message, no traceback,
nothing created. A config error comes from the program; a missing provider plugin (the
dev stack's pulumi-gcp, which cannot be had offline) from the engine."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.engine.conftest import REPO_ROOT, ProjectMaker, PulumiProject, repo_stack_config
from tests.engine.local_store import stored_jobs

pytestmark = pytest.mark.slow


@pytest.fixture
def project(new_project: ProjectMaker) -> PulumiProject:
    config = copy.deepcopy(repo_stack_config())
    config["config"]["vertex-training:regoin"] = "us-central1"
    return new_project("config-error", config)


def _resources(project: PulumiProject) -> list[str]:
    """What the stack's state holds besides the stack itself (which the engine records
    before the program runs)."""
    resources = project.export()["deployment"].get("resources") or []
    return [r["urn"] for r in resources if r["type"] != "pulumi:pulumi:Stack"]


@pytest.mark.parametrize("command", ["preview", "up"])
def test_config_error_is_the_message_alone_and_nothing_is_created(
    project: PulumiProject, command: str
) -> None:
    output = project.refused(command)

    assert "vertex-training:regoin" in output
    assert "did you mean 'region'" in output
    assert _resources(project) == []
    assert stored_jobs(project.local_root) == {}


@pytest.fixture
def dev_project(new_project: ProjectMaker) -> PulumiProject:
    # What a machine without the plugin has: where one is installed, this project's
    # PULUMI_HOME still has none, and no download is attempted (PulumiProject.env).
    config = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    return new_project("dev-no-plugin", config)


def test_dev_without_the_gcp_plugin_ends_with_one_clear_message(dev_project: PulumiProject) -> None:
    output = dev_project.refused("preview")

    last_line = output.strip().splitlines()[-1]
    # Every plugin the program needs and the machine lacks (the dev stack's docker-build
    # too), each with its command.
    assert last_line.startswith("error: the stack needs the Pulumi provider plugin"), output
    assert "`gcp` " in last_line
    assert "pulumi plugin install resource gcp" in last_line
