"""The prediction servers the local Vertex starts run the stand-in ``predictor``."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud.aiplatform_v1 import ModelServiceClient
from google.cloud.aiplatform_v1 import types as v1
from google.cloud.aiplatform_v1.services.model_service.transports.grpc import (
    ModelServiceGrpcTransport,
)

from tests.fakes.faults import FaultyVertex

STANDIN = Path(__file__).resolve().parent / "standin"
"""Holds a stand-in ``predictor`` package (no TensorFlow) for the local endpoint tests."""


@pytest.fixture
def vertex(vertex: FaultyVertex, monkeypatch: pytest.MonkeyPatch) -> FaultyVertex:
    """The local Vertex of ``tests/conftest.py``, the prediction servers it starts finding
    the stand-in ``predictor`` first."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(STANDIN), *([path] if path else [])]))
    return vertex


def saved_model(directory: Path) -> Path:
    """A directory the registry accepts as a SavedModel (the stand-in server never loads
    it: the tests that load one are the predictor's)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "saved_model.pb").write_bytes(b"\x08\x01")
    (directory / "variables").mkdir(exist_ok=True)
    return directory


def artifact(vertex: FaultyVertex, uri: str) -> str:
    """``uri`` (``gs://...``), holding a SavedModel where the local Vertex reads it."""
    saved_model(vertex.vertex.twin.local_path(uri))
    return uri


def versions(vertex: FaultyVertex, model: str) -> list[v1.Model]:
    """The versions of ``model`` as the service lists them (none once it is gone)."""
    channel = grpc.insecure_channel(vertex.address)
    models = ModelServiceClient(transport=ModelServiceGrpcTransport(channel=channel))
    try:
        return list(models.list_model_versions(name=model))
    except api_exceptions.NotFound:
        return []
