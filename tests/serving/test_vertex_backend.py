"""The Vertex serving backend: the real ModelServiceClient / EndpointServiceClient against
a fake speaking the real protos, with failures injected."""

from __future__ import annotations

import grpc
import pytest
from google.api_core import exceptions as api_exceptions

from tests.fakes.settings import PARENT, vertex_settings
from tests.fakes.vertex_serving_service import FakeServingService
from vertex_training.serving.backends.base import (
    ModelInUseError,
    ServingNotFoundError,
    ServingRefusedError,
)
from vertex_training.serving.backends.vertex import VertexServingBackend

IMAGE = "us-docker.pkg.dev/p/r/serving@sha256:" + "a" * 64


def backend() -> VertexServingBackend:
    return VertexServingBackend(vertex_settings(retry_timeout_seconds=2))


def body(uri: str = "gs://b/jobs/train/model", key: str = "k1") -> dict[str, object]:
    return {
        "displayName": "horses",
        "artifactUri": uri,
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


def test_upload_makes_the_model_then_versions_of_it(fake: FakeServingService) -> None:
    vertex = backend()
    first = vertex.upload("horses-1", body())
    assert (first.model, first.version_id) == (f"{PARENT}/models/horses-1", "1")
    assert first.aliases == ("default",)
    second = vertex.upload("horses-1", body("gs://b/jobs/train2/model", "k2"))
    assert second.version_id == "2" and second.version_name == f"{PARENT}/models/horses-1@2"
    assert fake.calls["UploadModel"] == 2
    assert vertex.find_version("horses-1", {"pulumi-job-key": "k2"}) == second
    assert vertex.find_version("horses-1", {"pulumi-job-key": "k3"}) is None
    assert vertex.find_version("no-such-model", {"pulumi-job-key": "k1"}) is None


def test_aliases_move_to_the_new_version(fake: FakeServingService) -> None:
    vertex = backend()
    first = vertex.upload("m", body())
    vertex.move_aliases(first.model, "1", ["default", "production"])
    second = vertex.upload("m", body(key="k2"))
    vertex.move_aliases(second.model, "2", ["default", "production"])
    assert vertex.get_version(first.model, "1").aliases == ()
    assert set(vertex.get_version(first.model, "2").aliases) == {"default", "production"}


def test_a_version_is_updated_in_place(fake: FakeServingService) -> None:
    vertex = backend()
    first = vertex.upload("m", body())
    vertex.update_version(first.model, "1", {"displayName": "renamed", "labels": {"a": "b"}})
    (stored,) = fake.versions(first.model)
    assert (stored.display_name, stored.description, dict(stored.labels)) == (
        "renamed",
        "",
        {"a": "b"},
    )
    assert fake.calls["UpdateModel"] == 1 and fake.calls.get("UploadModel") == 1


def test_an_interrupted_upload_is_found_not_repeated(fake: FakeServingService) -> None:
    fake.inject("UploadModel", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    vertex = backend()
    with pytest.raises(api_exceptions.ServiceUnavailable):
        vertex.upload("m", body())
    found = vertex.find_version("m", {"pulumi-job-key": "k1"})
    assert found is not None and found.version_id == "1"
    assert fake.calls["UploadModel"] == 1  # not retried: the caller adopts


def test_a_deployed_version_is_not_deleted(fake: FakeServingService) -> None:
    vertex = backend()
    model = vertex.upload("m", body())
    endpoint = vertex.create_endpoint("123456789", {"displayName": "e"})
    vertex.deploy(endpoint.name, deployed("1000000001", model.version_name), {"1000000001": 100})
    with pytest.raises(ModelInUseError) as refused:
        vertex.delete_version(model.model, "1")
    assert str(refused.value) == (
        f"model version {model.model}@1 is still deployed to {PARENT}/endpoints/123456789 "
        "(deployed model 1000000001): undeploy it there first (remove the deployment from "
        "that endpoint, or destroy it), then delete the model"
    )
    assert fake.calls["DeleteModel"] == fake.calls["DeleteModelVersion"] == 0


def test_delete_takes_the_version_then_the_model_with_its_last(fake: FakeServingService) -> None:
    vertex = backend()
    vertex.upload("m", body())
    second = vertex.upload("m", body(key="k2"))
    vertex.move_aliases(second.model, "2", ["default"])
    vertex.delete_version(second.model, "1")
    assert [m.version_id for m in fake.versions(second.model)] == ["2"]
    vertex.delete_version(second.model, "2")
    assert second.model not in fake.models
    vertex.delete_version(second.model, "2")  # already gone: fine
    assert fake.calls["DeleteModelVersion"] == fake.calls["DeleteModel"] == 1


def test_endpoint_deploy_traffic_undeploy_delete(fake: FakeServingService) -> None:
    vertex = backend()
    v1 = vertex.upload("m", body())
    v2 = vertex.upload("m", body(key="k2"))
    name = vertex.create_endpoint("123456789", {"displayName": "e"}).name
    assert vertex.create_endpoint("123456789", {"displayName": "e"}).name == name  # adopted
    assert fake.calls["CreateEndpoint"] == 1
    vertex.deploy(name, deployed("1", v1.version_name), {"1": 100})
    vertex.deploy(name, deployed("2", v2.version_name), {"1": 100, "2": 0})
    vertex.set_traffic(name, {"1": 20, "2": 80})
    record = vertex.get_endpoint(name)
    assert record.traffic == {"1": 20, "2": 80}
    assert {(d.id, d.model_version_id) for d in record.deployed} == {("1", "1"), ("2", "2")}
    assert record.predict_url == f"https://us-central1-aiplatform.googleapis.com/v1/{name}:predict"
    vertex.undeploy(name, "1", {"2": 100})
    assert vertex.get_endpoint(name).traffic == {"2": 100}
    vertex.undeploy(name, "2", {})
    fake.undeploy_lag = 0
    vertex.delete_endpoint(name)
    with pytest.raises(ServingNotFoundError):
        vertex.get_endpoint(name)


def test_a_delete_refused_right_after_an_undeploy_is_retried(fake: FakeServingService) -> None:
    vertex = backend()
    model = vertex.upload("m", body())
    name = vertex.create_endpoint("123456789", {"displayName": "e"}).name
    vertex.deploy(name, deployed("1", model.version_name), {"1": 100})
    fake.undeploy_lag = 1  # the first delete after the undeploy is refused
    vertex.undeploy(name, "1", {})
    vertex.delete_endpoint(name)
    assert fake.calls["DeleteEndpoint"] == 2
    assert name not in fake.endpoints


def test_a_misspelled_field_is_refused_by_name_before_any_call(fake: FakeServingService) -> None:
    with pytest.raises(ServingRefusedError) as refused:
        backend().upload("m", {**body(), "artifactUrl": "gs://b/m"})
    assert "artifactUrl: Model has no field 'artifactUrl' (did you mean 'artifactUri'?)" in str(
        refused.value
    )
    assert fake.calls["UploadModel"] == 0
