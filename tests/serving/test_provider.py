"""Model and Endpoint providers through the real dynamic host: on the local Vertex in this
process as Vertex (with failures injected around it), and on a local stack's own."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pulumi.runtime.proto import provider_pb2

from tests.fakes.faults import FaultyVertex
from tests.fakes.settings import PARENT, local_settings, vertex_settings
from tests.serving.conftest import artifact, saved_model, versions
from tests.serving.provider_host import ServingEngine, ServingHost, up
from vertex_training.serving.resources import (
    PROVIDER_VERSION,
    EndpointProvider,
    ModelProvider,
    deployed_model_id,
    endpoint_id_for,
    model_id_for,
)

pytestmark = pytest.mark.slow

IMAGE = "us-docker.pkg.dev/p/r/serving@sha256:" + "a" * 64
MODEL_IDENTITY = "vertex-training/dev/horses"
ENDPOINT_IDENTITY = "vertex-training/dev/horses-endpoint"


@pytest.fixture(scope="module")
def host(vertex_server: FaultyVertex) -> Iterator[ServingHost]:
    provider_host = ServingHost(vertex_server.address)
    yield provider_host
    provider_host.close()


def vertex_backend() -> dict[str, Any]:
    return vertex_settings(retry_timeout_seconds=5).to_props()


def model_props(
    backend: dict[str, Any],
    uri: str,
    job: str = "jobs/1",
    aliases: tuple[str, ...] = ("production",),
) -> dict[str, Any]:
    return {
        "body": {
            "displayName": "horses",
            "artifactUri": uri,
            "containerSpec": {"imageUri": IMAGE},
            "labels": {"app": "vertex-training"},
        },
        "source_job": job,
        "model_id": model_id_for(MODEL_IDENTITY),
        "version_aliases": list(aliases),
        "backend": backend,
        "identity": MODEL_IDENTITY,
        "provider_version": PROVIDER_VERSION,
    }


def deployment(version_name: str) -> dict[str, Any]:
    return {
        "model": version_name,
        "displayName": "blue",
        "dedicatedResources": {
            "machineSpec": {"machineType": "n1-standard-2"},
            "minReplicaCount": 1,
            "maxReplicaCount": 2,
        },
    }


def endpoint_props(
    backend: dict[str, Any], deployments: dict[str, Any], traffic: dict[str, int]
) -> dict[str, Any]:
    return {
        "body": {"displayName": "horses", "labels": {"app": "vertex-training"}},
        "endpoint_id": endpoint_id_for(ENDPOINT_IDENTITY),
        "deployments": deployments,
        "traffic": traffic,
        "backend": backend,
        "identity": ENDPOINT_IDENTITY,
        "provider_version": PROVIDER_VERSION,
    }


def test_vertex_model_versions_and_endpoint(host: ServingHost, vertex: FaultyVertex) -> None:
    models = ServingEngine(host, ModelProvider(), "Model", "horses")
    endpoints = ServingEngine(host, EndpointProvider(), "Endpoint", "horses-endpoint")
    first_id, first = up(
        models, model_props(vertex_backend(), artifact(vertex, "gs://b/jobs/t/1/model"))
    )
    model = f"{PARENT}/models/{model_id_for(MODEL_IDENTITY)}"
    assert (first_id, first["version_id"]) == (f"{model}@1", "1")
    assert set(first["aliases"]) == {"default", "production"}
    # The job was replaced and trained again: the diff replaces, the new version comes
    # before the old one goes, the aliases move.
    retrained, _ = models.check(
        model_props(vertex_backend(), "gs://b/jobs/t/1/model", job="jobs/2"), olds=first
    )
    assert list(models.diff(first_id, first, retrained).replaces) == ["source_job"]
    second_id, second = models.create(retrained)
    assert second_id == f"{model}@2" and set(second["aliases"]) == {"default", "production"}
    models.delete(first_id, first)
    assert [(m.version_id, set(m.version_aliases)) for m in versions(vertex, model)] == [
        ("2", {"default", "production"})
    ]

    inputs, failures = endpoints.check(
        endpoint_props(vertex_backend(), {"blue": deployment(second_id)}, {"blue": 100})
    )
    assert failures == []
    endpoint_id, endpoint = endpoints.create(inputs)
    blue = deployed_model_id(ENDPOINT_IDENTITY, "blue", deployment(second_id))
    assert endpoint["deployed_model_ids"] == {"blue": blue}
    assert endpoint["predict_url"].endswith(f"/v1/{endpoint_id}:predict")
    assert traffic(vertex, endpoint_id) == {blue: 100}

    # A second deployment and a traffic change: in place.
    both, _ = endpoints.check(
        endpoint_props(
            vertex_backend(),
            {"blue": deployment(second_id), "green": deployment(f"{model}@2")},
            {"blue": 30, "green": 70},
        ),
        olds=endpoint,
    )
    diff = endpoints.diff(endpoint_id, endpoint, both)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    endpoint = endpoints.update(endpoint_id, endpoint, both)
    green = endpoint["deployed_model_ids"]["green"]
    assert traffic(vertex, endpoint_id) == {blue: 30, green: 70}

    # The version is still deployed: its delete is refused with a clear message.
    with pytest.raises(grpc.RpcError) as refused:
        models.delete(second_id, second)
    assert "is still deployed to" in str(refused.value.details())
    assert "undeploy it there first" in str(refused.value.details())

    # Vertex refuses a delete for a while after the last undeploy: the first one fails.
    vertex.inject("DeleteEndpoint", grpc.StatusCode.FAILED_PRECONDITION)
    endpoints.delete(endpoint_id, endpoint)
    assert vertex.vertex.twin.stored_endpoints() == [] and vertex.calls["DeleteEndpoint"] == 2
    models.delete(second_id, second)
    assert vertex.vertex.twin.stored_models() == []


def test_an_upload_interrupted_is_adopted(host: ServingHost, vertex: FaultyVertex) -> None:
    models = ServingEngine(host, ModelProvider(), "Model", "horses")
    uri = artifact(vertex, "gs://b/jobs/t/model")
    inputs, _ = models.check(model_props(vertex_backend(), uri))
    vertex.inject("UploadModel", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    with pytest.raises(grpc.RpcError):
        models.create(inputs)
    version_id, outs = models.create(inputs)
    assert outs["version_id"] == "1" and vertex.calls["UploadModel"] == 1
    assert set(outs["aliases"]) == {"default", "production"}
    again, _ = models.check(model_props(vertex_backend(), uri), olds=outs)
    assert models.diff(version_id, outs, again).changes == provider_pb2.DiffResponse.DIFF_NONE


def traffic(vertex: FaultyVertex, endpoint: str) -> dict[str, int]:
    stored = vertex.vertex.twin.stored_endpoint(endpoint.rsplit("/", 1)[1])
    return dict(stored["trafficSplit"])


def _predict(url: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps({"instances": [[0] * 4, [1] * 4]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _server(root: Path, endpoint_id: str) -> dict[str, Any]:
    """The endpoint's prediction server (pid, port) as the local Vertex records it."""
    endpoint = root / "serving/endpoints" / endpoint_id.rsplit("/", 1)[1] / "endpoint.json"
    server: dict[str, Any] = json.loads(endpoint.read_text())["server"]
    return server


DIFF_NONE = provider_pb2.DiffResponse.DIFF_NONE


def test_local_twin_lifecycle(host: ServingHost, tmp_path: Path) -> None:
    root = tmp_path / "root"
    backend = local_settings(str(root)).to_props()
    saved_model(root / "bucket" / "jobs" / "t" / "3" / "model")
    models = ServingEngine(host, ModelProvider(), "Model", "horses")
    endpoints = ServingEngine(host, EndpointProvider(), "Endpoint", "horses-endpoint")
    model_id, model = up(models, model_props(backend, str(root / "bucket/jobs/t/3/model")))
    assert model_id == f"{PARENT}/models/{model_id_for(MODEL_IDENTITY)}@1"
    registry = root / "serving" / "registry" / model_id_for(MODEL_IDENTITY)
    assert (registry / "versions" / "1" / "saved_model.pb").is_file()

    props = endpoint_props(backend, {"blue": deployment(model_id)}, {"blue": 100})
    endpoint_id, endpoint = up(endpoints, props)
    url = endpoint["predict_url"]
    assert url.startswith("http://127.0.0.1:") and url.endswith(f"/v1/{endpoint_id}:predict")
    answer = _predict(url)
    assert answer["predictions"] == [[0.25, 0.75], [0.25, 0.75]]
    assert (answer["modelVersionId"], answer["deployedModelId"]) == (
        "1",
        endpoint["deployed_model_ids"]["blue"],
    )
    inputs, _ = endpoints.check(props, olds=endpoint)
    assert (
        endpoints.diff(endpoint_id, endpoint, inputs).changes == provider_pb2.DiffResponse.DIFF_NONE
    )

    # The prediction server died: the local Vertex serves again, as Vertex keeps its
    # replicas running; nothing for `up` to do.
    os.killpg(_server(root, endpoint_id)["pid"], signal.SIGKILL)
    assert _predict(url)["modelVersionId"] == "1"
    assert endpoints.diff(endpoint_id, endpoint, inputs).changes == DIFF_NONE
    # The machine restarted (the local Vertex is gone too): the diff of the next `up`
    # sees it, and the update starts it, which serves again.
    os.killpg(_server(root, endpoint_id)["pid"], signal.SIGKILL)
    os.kill(json.loads((root / "vertex.json").read_text())["pid"], signal.SIGKILL)
    time.sleep(0.2)
    diff = endpoints.diff(endpoint_id, endpoint, inputs)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    endpoint = endpoints.update(endpoint_id, endpoint, inputs)
    assert _predict(endpoint["predict_url"])["modelVersionId"] == "1"

    # The model version is deployed: deleting it is refused, with what to do.
    with pytest.raises(grpc.RpcError) as refused:
        models.delete(model_id, model)
    assert f"is still deployed to {PARENT}/endpoints/" in str(refused.value.details())

    server = _server(root, endpoint_id)
    endpoints.delete(endpoint_id, endpoint)
    models.delete(model_id, model)
    assert not _listening(server["port"])
    assert not Path(f"/proc/{server['pid']}").exists()
    assert list((root / "serving" / "registry").iterdir()) == []
    assert list((root / "serving" / "endpoints").iterdir()) == []
