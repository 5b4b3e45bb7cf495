"""What the engine shows for a stack that cannot run: one clear message, no traceback,
nothing created. A config error comes from the program; a missing provider plugin (the
dev stack's pulumi-gcp, which cannot be had offline) from the engine."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.engine.conftest import REPO_ROOT, PulumiProject, make_project, repo_stack_config
from tests.engine.local_store import stored_jobs

pytestmark = pytest.mark.slow


@pytest.fixture
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    config = copy.deepcopy(repo_stack_config())
    config["config"]["vertex-training:regoin"] = "us-central1"
    yield from make_project(tmp_path_factory, pulumi_bin_dir, config, "config-error")


def _resources(project: PulumiProject) -> list[str]:
    """What the stack's state holds besides the stack itself (which the engine records
    before the program runs)."""
    resources = project.export()["deployment"].get("resources") or []
    return [r["urn"] for r in resources if r["type"] != "pulumi:pulumi:Stack"]


@pytest.mark.parametrize("command", ["preview", "up"])
def test_config_error_is_the_message_alone_and_nothing_is_created(
    project: PulumiProject, command: str
) -> None:
    done = project.stack(command, check=False)

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "vertex-training:regoin" in output
    assert "did you mean 'region'" in output
    assert "Traceback" not in output
    assert _resources(project) == []
    assert stored_jobs(project.local_root) == {}


@pytest.fixture
def dev_project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    config = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    for project in make_project(tmp_path_factory, pulumi_bin_dir, config, "dev-no-plugin"):
        # What a machine without the plugin has; where one is installed, this test's
        # PULUMI_HOME still has none. No download is attempted.
        project.env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
        yield project


def test_dev_without_the_gcp_plugin_ends_with_one_clear_message(dev_project: PulumiProject) -> None:
    done = dev_project.stack("preview", check=False)

    output = done.stdout + done.stderr
    assert done.returncode != 0
    last_line = output.strip().splitlines()[-1]
    # Every plugin the program needs and the machine lacks (the dev stack's docker-build
    # too), each with its command.
    assert last_line.startswith("error: the stack needs the Pulumi provider plugin"), output
    assert "`gcp` " in last_line
    assert "pulumi plugin install resource gcp" in last_line
    assert "Traceback" not in output
