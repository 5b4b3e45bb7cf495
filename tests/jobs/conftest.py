"""One local Vertex per test module, faults around it, on a fresh root for each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.faults import FaultyVertex


@pytest.fixture(scope="module")
def vertex_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultyVertex]:
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
