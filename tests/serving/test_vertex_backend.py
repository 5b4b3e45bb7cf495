"""The Vertex serving backend: the real ModelServiceClient / EndpointServiceClient against
the local Vertex, with failures injected around it."""

from __future__ import annotations

import grpc
import pytest
from google.api_core import exceptions as api_exceptions

from tests.fakes.faults import FaultyVertex
from tests.fakes.settings import PARENT, vertex_settings
from tests.serving.conftest import artifact, versions
from vertex_training.serving.backends.base import (
    ModelInUseError,
    ServingNotFoundError,
    ServingRefusedError,
)
from vertex_training.serving.backends.vertex import VertexServingBackend

IMAGE = "us-docker.pkg.dev/p/r/serving@sha256:" + "a" * 64


def backend() -> VertexServingBackend:
    return VertexServingBackend(vertex_settings(retry_timeout_seconds=2))


def body(
    vertex: FaultyVertex, uri: str = "gs://b/jobs/train/model", key: str = "k1"
) -> dict[str, object]:
    return {
        "displayName": "horses",
        "artifactUri": artifact(vertex, uri),
        "containerSpec": {"imageUri": IMAGE},
        "labels": {"pulumi-job-key": key},
    }


def deployed(deployed_id: str, version_name: str) -> dict[str, object]:
    """A ``DeployedModel`` body: one small machine serving ``version_name``."""
    return {
        "id": deployed_id,
        "model": version_name,
        "dedicatedResources": {
            "machineSpec": {"machineType": "n1-standard-2"},
            "minReplicaCount": 1,
            "maxReplicaCount": 1,
        },
    }


def test_upload_makes_the_model_then_versions_of_it(vertex: FaultyVertex) -> None:
    serving = backend()
    # A slow upload: the operation is answered unfinished, its result read once polled.
    vertex.inject("UploadModel", unfinished=True)
    first = serving.upload("horses-1", body(vertex))
    assert vertex.calls["GetOperation"] >= 1
    assert (first.model, first.version_id) == (f"{PARENT}/models/horses-1", "1")
    assert first.aliases == ("default",)
    second = serving.upload("horses-1", body(vertex, "gs://b/jobs/train2/model", "k2"))
    assert second.version_id == "2" and second.version_name == f"{PARENT}/models/horses-1@2"
    assert vertex.calls["UploadModel"] == 2
    assert serving.find_version("horses-1", {"pulumi-job-key": "k2"}) == second
    assert serving.find_version("horses-1", {"pulumi-job-key": "k3"}) is None
    assert serving.find_version("no-such-model", {"pulumi-job-key": "k1"}) is None


def test_aliases_move_to_the_new_version(vertex: FaultyVertex) -> None:
    serving = backend()
    first = serving.upload("m", body(vertex))
    serving.move_aliases(first.model, "1", ["default", "production"])
    second = serving.upload("m", body(vertex, key="k2"))
    serving.move_aliases(second.model, "2", ["default", "production"])
    assert serving.get_version(first.model, "1").aliases == ()
    assert set(serving.get_version(first.model, "2").aliases) == {"default", "production"}


def test_a_version_is_updated_in_place(vertex: FaultyVertex) -> None:
    serving = backend()
    first = serving.upload("m", body(vertex))
    serving.update_version(first.model, "1", {"displayName": "renamed", "labels": {"a": "b"}})
    (stored,) = versions(vertex, first.model)
    assert (stored.display_name, stored.description, dict(stored.labels)) == (
        "renamed",
        "",
        {"a": "b"},
    )
    assert vertex.calls["UpdateModel"] == 1 and vertex.calls.get("UploadModel") == 1


def test_an_interrupted_upload_is_found_not_repeated(vertex: FaultyVertex) -> None:
    vertex.inject("UploadModel", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    serving = backend()
    with pytest.raises(api_exceptions.ServiceUnavailable):
        serving.upload("m", body(vertex))
    found = serving.find_version("m", {"pulumi-job-key": "k1"})
    assert found is not None and found.version_id == "1"
    assert vertex.calls["UploadModel"] == 1  # not retried: the caller adopts


def test_a_deployed_version_is_not_deleted(vertex: FaultyVertex) -> None:
    serving = backend()
    model = serving.upload("m", body(vertex))
    endpoint = serving.create_endpoint("123456789", {"displayName": "e"})
    serving.deploy(endpoint.name, deployed("1000000001", model.version_name), {"1000000001": 100})
    with pytest.raises(ModelInUseError) as refused:
        serving.delete_version(model.model, "1")
    assert str(refused.value) == (
        f"model version {model.model}@1 is still deployed to {PARENT}/endpoints/123456789 "
        "(deployed model 1000000001): undeploy it there first (remove the deployment from "
        "that endpoint, or destroy it), then delete the model"
    )
    assert vertex.calls["DeleteModel"] == vertex.calls["DeleteModelVersion"] == 0


def test_delete_takes_the_version_then_the_model_with_its_last(vertex: FaultyVertex) -> None:
    serving = backend()
    serving.upload("m", body(vertex))
    second = serving.upload("m", body(vertex, key="k2"))
    serving.move_aliases(second.model, "2", ["default"])
    serving.delete_version(second.model, "1")
    assert [m.version_id for m in versions(vertex, second.model)] == ["2"]
    serving.delete_version(second.model, "2")
    assert versions(vertex, second.model) == []
    serving.delete_version(second.model, "2")  # already gone: fine
    assert vertex.calls["DeleteModelVersion"] == vertex.calls["DeleteModel"] == 1


@pytest.mark.slow
def test_endpoint_deploy_traffic_undeploy_delete(vertex: FaultyVertex) -> None:
    serving = backend()
    v1 = serving.upload("m", body(vertex))
    v2 = serving.upload("m", body(vertex, key="k2"))
    name = serving.create_endpoint("123456789", {"displayName": "e"}).name
    assert serving.create_endpoint("123456789", {"displayName": "e"}).name == name  # adopted
    assert vertex.calls["CreateEndpoint"] == 1
    serving.deploy(name, deployed("1", v1.version_name), {"1": 100})
    serving.deploy(name, deployed("2", v2.version_name), {"1": 100, "2": 0})
    serving.set_traffic(name, {"1": 20, "2": 80})
    record = serving.get_endpoint(name)
    assert record.traffic == {"1": 20, "2": 80}
    assert {(d.id, d.model_version_id) for d in record.deployed} == {("1", "1"), ("2", "2")}
    assert record.predict_url == f"https://us-central1-aiplatform.googleapis.com/v1/{name}:predict"
    serving.undeploy(name, "1", {"2": 100})
    assert serving.get_endpoint(name).traffic == {"2": 100}
    serving.undeploy(name, "2", {})
    serving.delete_endpoint(name)
    with pytest.raises(ServingNotFoundError):
        serving.get_endpoint(name)


def test_a_delete_refused_right_after_an_undeploy_is_retried(vertex: FaultyVertex) -> None:
    serving = backend()
    model = serving.upload("m", body(vertex))
    name = serving.create_endpoint("123456789", {"displayName": "e"}).name
    serving.deploy(name, deployed("1", model.version_name), {"1": 100})
    serving.undeploy(name, "1", {})
    # Vertex refuses a delete for a while after an undeploy.
    vertex.inject("DeleteEndpoint", grpc.StatusCode.FAILED_PRECONDITION)
    serving.delete_endpoint(name)
    assert vertex.calls["DeleteEndpoint"] == 2
    with pytest.raises(ServingNotFoundError):
        serving.get_endpoint(name)


def test_a_misspelled_field_is_refused_by_name_before_any_call(vertex: FaultyVertex) -> None:
    with pytest.raises(ServingRefusedError) as refused:
        backend().upload("m", {**body(vertex), "artifactUrl": "gs://b/m"})
    assert "artifactUrl: Model has no field 'artifactUrl' (did you mean 'artifactUri'?)" in str(
        refused.value
    )
    assert vertex.calls["UploadModel"] == 0
