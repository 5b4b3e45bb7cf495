from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import PROJECT_ROOT

if TYPE_CHECKING:
    from tests.fakes.faults import FaultyVertex


@pytest.fixture(scope="module")
def vertex_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultyVertex]:
    """One local Vertex per test module, faults around it (imported here, where a test
    asks for it: most tests never start one)."""
    from tests.fakes.faults import FaultyVertex

    with FaultyVertex(tmp_path_factory.mktemp("vertex")) as server:
        yield server


@pytest.fixture
def vertex(
    vertex_server: FaultyVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> FaultyVertex:
    """The local Vertex on a fresh root, the Vertex clients of this process pointed at it."""
    vertex_server.reset(tmp_path / "vertex")
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", vertex_server.address)
    return vertex_server


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained horses_or_humans model, exported by the trainer (32 px, 2 classes):
    what the prediction server loads, and what the engine tests' stand-in trainer leaves
    where a trained model would be."""
    from tests.trainer.test_export import export

    path = tmp_path_factory.mktemp("served") / "model"
    assert export(path) == str(path)
    return path


@pytest.fixture(scope="session")
def ts_node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/ts-local's packages, installed once (``npm ci``, as its ``./run`` does) for
    every test that compiles TypeScript against the SDK; each copy of the example hard-links
    them (``copytree(..., symlinks=True, copy_function=os.link)``). The link to the
    generated SDK (``file:../../sdk/nodejs``) is relative: in a copy it is that copy's
    SDK. A test that asks for it checks first that npm is there."""
    root = tmp_path_factory.mktemp("ts-local-packages")
    shutil.copytree(
        PROJECT_ROOT / "sdk" / "nodejs",
        root / "sdk" / "nodejs",
        ignore=shutil.ignore_patterns("node_modules", "bin"),
    )
    example = root / "examples" / "ts-local"
    example.mkdir(parents=True)
    for file in ("package.json", "package-lock.json"):
        shutil.copy2(PROJECT_ROOT / "examples" / "ts-local" / file, example / file)
    npm = ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
    done = subprocess.run(npm, cwd=example, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return example / "node_modules"
