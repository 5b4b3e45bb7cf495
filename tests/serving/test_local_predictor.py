"""The local Vertex's services with the real prediction server (``python -m predictor``)
and a model the trainer exported: one probability per class for each instance, from the
version the registry holds, and nothing left after the endpoint is deleted."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as v1
from google.longrunning import operations_pb2
from google.protobuf import json_format

from tests.fakes.settings import LOCATION, PARENT, PROJECT
from vertex_training.local.server import LocalVertex

pytestmark = pytest.mark.slow


def _done(vertex: LocalVertex, operation: operations_pb2.Operation) -> None:
    """Wait for ``operation``; it must have succeeded."""
    request = operations_pb2.WaitOperationRequest(name=operation.name)
    operation = vertex.operations.wait_operation(request, 300)
    assert operation.done and not operation.HasField("error"), operation


def test_the_local_vertex_serves_an_exported_model(tmp_path: Path) -> None:
    from tests.trainer.test_export import export

    trained = tmp_path / "root" / "bucket" / "jobs" / "tuning" / "2" / "model"
    assert export(trained) == str(trained)
    vertex = LocalVertex(tmp_path / "root", PROJECT, LOCATION)
    models, endpoints = vertex.handlers["ModelService"], vertex.handlers["EndpointService"]
    model = v1.Model(display_name="horses", artifact_uri=str(trained))
    _done(
        vertex,
        models.upload_model(v1.UploadModelRequest(parent=PARENT, model=model, model_id="horses")),
    )
    endpoint = f"{PARENT}/endpoints/123456789"
    created = v1.CreateEndpointRequest(
        parent=PARENT, endpoint=v1.Endpoint(display_name="horses"), endpoint_id="123456789"
    )
    _done(vertex, endpoints.create_endpoint(created))
    deployed = v1.DeployedModel(id="1000000001", model=f"{PARENT}/models/horses@1")
    _done(
        vertex,
        endpoints.deploy_model(v1.DeployModelRequest(endpoint=endpoint, deployed_model=deployed)),
    )

    pixel: Any = [[[0, 128, 255]] * 32] * 32
    request = v1.PredictRequest()
    json_format.ParseDict({"endpoint": endpoint, "instances": [pixel, pixel]}, request._pb)
    answer = vertex.handlers["PredictionService"].predict(request)
    assert len(answer.predictions) == 2
    assert all(len(p) == 2 and abs(sum(p) - 1) < 1e-4 for p in answer.predictions)
    assert (answer.deployed_model_id, answer.model, answer.model_version_id) == (
        "1000000001",
        f"{PARENT}/models/horses",
        "1",
    )
    port = vertex.twin.stored_endpoint("123456789")["server"]["port"]  # type: ignore[index]
    undeploy = v1.UndeployModelRequest(endpoint=endpoint, deployed_model_id="1000000001")
    _done(vertex, endpoints.undeploy_model(undeploy))
    _done(vertex, endpoints.delete_endpoint(v1.DeleteEndpointRequest(name=endpoint)))
    _done(vertex, models.delete_model(v1.DeleteModelRequest(name=f"{PARENT}/models/horses")))
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    assert not any((tmp_path / "root" / "serving" / "registry").iterdir())
