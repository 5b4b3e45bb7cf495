"""The installable package: the wheel holds ``vertex_training`` (typed) and nothing else, and
works installed by pip, imported from outside this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import PROJECT_ROOT, run_python

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the pinned setuptools of the lock builds it, offline.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(PROJECT_ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("vertex_training_iac-*.whl")
    return built


def test_the_wheel_holds_the_package_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"vertex_training", wheel.name.split("-")[0] + "-0.1.0.dist-info"}
    assert "vertex_training/py.typed" in names
    assert "vertex_training/jobs/rules/hardware_catalog.json" in names
    assert not [n for n in names if n.split("/")[0] in ("infra", "tests", "bench", "trainer")]


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into a directory of its own (without dependencies, as asked: the
    project's installed ones serve), which a program puts first on its path."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"),
            *("--target", str(site), str(wheel)),
        ],
        check=True,
        capture_output=True,
    )
    return site


def test_installed_from_the_wheel_the_public_names_import(site: Path, tmp_path: Path) -> None:
    program = (
        "import vertex_training as vt\n"
        "print(vt.__file__)\n"
        "for name in vt.__all__: getattr(vt, name)\n"
        "pool = vt.WorkerPool(machine_type='n1-standard-4',\n"
        "                     accelerator=vt.Accelerator('NVIDIA_TESLA_T4'))\n"
        "print(pool.with_replicas(2).replica_count)\n"
    )
    out = run_python("-c", program, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)})
    assert Path(out.split()[0]).is_relative_to(site), out
    assert out.split()[1] == "2"


def test_installed_from_the_wheel_it_reads_the_project_it_runs_in(
    site: Path, tmp_path: Path
) -> None:
    """``load_stack`` and ``python -m vertex_training.stack estimate --stack`` find the project
    (Pulumi.yaml, stacks/, docker/) from the working directory, not beside the package."""
    project = tmp_path / "my-project"
    (project / "stacks").mkdir(parents=True)
    (project / "docker").mkdir()
    for name in ("Pulumi.yaml", "stacks/Pulumi.dev.yaml", "stacks/Pulumi.local.yaml"):
        (project / name).write_text((PROJECT_ROOT / name).read_text())
    (project / "docker" / "trainer.Dockerfile").write_text("FROM scratch\n")
    (project / "sub").mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    program = (
        "import sys; from pathlib import Path\n"
        "import vertex_training as vt\n"
        "print(vt.__file__)\n"
        "stack = vt.load_stack(Path('../stacks/Pulumi.local.yaml'))\n"
        "print(stack.platform.local_root)\n"
        "stack = vt.load_stack(Path('../stacks/Pulumi.dev.yaml'))\n"
        "print(stack.platform.images['trainer'].context)\n"
    )
    # From a subdirectory too: the project is the nearest directory holding Pulumi.yaml.
    out = run_python("-c", program, cwd=project / "sub", env=env).split()
    assert Path(out[0]).is_relative_to(site), out[0]
    assert out[1:] == [str(project / ".local-vertex"), str(project)]
    estimate = run_python(
        "-m", "vertex_training.stack", "estimate", "--stack", "dev", cwd=project, env=env
    )
    assert estimate.startswith("stack dev (")
    assert "total: $" in estimate
