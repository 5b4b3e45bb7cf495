"""``pulumi preview --policy-pack policy`` on the local stack: it passes, and a violating
variant (the advisory label policy made mandatory for the run) fails. Needs the real CLI
(skips, saying why, without one) and the pack's environment (``make policy-venv``)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import REPO_ROOT, PulumiProject, make_project, repo_stack_config

pytestmark = pytest.mark.slow

POLICY_VENV = REPO_ROOT / "policy" / "venv"


@pytest.fixture
def project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[PulumiProject]:
    if not (POLICY_VENV / "bin" / "python").is_file():
        pytest.skip("no policy/venv for the pack (its pins clash with the lock): make policy-venv")
    for project in make_project(
        tmp_path_factory, pulumi_bin_dir, copy.deepcopy(repo_stack_config()), "policy"
    ):
        shutil.copytree(
            REPO_ROOT / "policy",
            project.dir / "policy",
            ignore=shutil.ignore_patterns("__pycache__", "venv"),
        )
        (project.dir / "policy" / "venv").symlink_to(POLICY_VENV.resolve())
        yield project


def test_local_stack_passes_the_pack(project: PulumiProject) -> None:
    done = project.pulumi("preview", "--policy-pack", "policy", check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "vertex-training" in done.stdout  # the pack ran and reported


def test_a_violating_variant_fails(project: PulumiProject) -> None:
    config = project.dir / "policy-config.json"
    config.write_text(json.dumps({"required-labels": {"enforcementLevel": "mandatory"}}))
    done = project.pulumi(
        "preview", "--policy-pack", "policy", "--policy-pack-config", str(config), check=False
    )
    assert done.returncode != 0
    assert "missing label(s) team, cost-center" in done.stdout + done.stderr
