"""What the real CLI shows for a stack config error: the message, not a traceback."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import PulumiProject, make_project, repo_stack_config

pytestmark = pytest.mark.slow


@pytest.fixture
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    config = copy.deepcopy(repo_stack_config())
    config["config"]["vertex-training:regoin"] = "us-central1"
    yield from make_project(tmp_path_factory, pulumi_bin_dir, config, "config-error")


def test_config_error_is_the_message_alone(project: PulumiProject) -> None:
    done = project.pulumi("preview", check=False)

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "vertex-training:regoin" in output
    assert "did you mean 'region'" in output
    assert "Traceback" not in output
