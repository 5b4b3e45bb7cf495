"""One fake Vertex ModelService + EndpointService per test module, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.vertex_serving_service import FakeServingService

STANDIN = Path(__file__).resolve().parent / "standin"
"""Holds a stand-in ``predictor`` package (no TensorFlow) for the local endpoint tests."""


@pytest.fixture(scope="module")
def serving_fake() -> Iterator[FakeServingService]:
    with FakeServingService() as service:
        yield service


@pytest.fixture
def fake(serving_fake: FakeServingService, monkeypatch: pytest.MonkeyPatch) -> FakeServingService:
    serving_fake.reset()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", serving_fake.address)
    return serving_fake


def saved_model(directory: Path) -> Path:
    """A directory the registry accepts as a SavedModel (the stand-in server never loads
    it: the tests that load one are the predictor's)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "saved_model.pb").write_bytes(b"\x08\x01")
    (directory / "variables").mkdir(exist_ok=True)
    return directory
