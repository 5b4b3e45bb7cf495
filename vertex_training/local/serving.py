"""The local Vertex's ModelService, EndpointService and PredictionService: the local
registry and endpoints (``serving.backends.local``) answered in Vertex's own messages; a
prediction goes to the endpoint's prediction server (``predictor``)."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import grpc
from google.api import httpbody_pb2
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import empty_pb2, json_format

from vertex_training.local.names import Names, page, parse_label_filter, runs_here
from vertex_training.local.operations import Operations
from vertex_training.local.runners.registry import Registry
from vertex_training.local.wire import ServiceError
from vertex_training.serving.backends import base
from vertex_training.serving.local_support import local_support

SERVER_GONE_SECONDS = 30.0
"""How long a prediction waits for its endpoint's server to be started again."""
_STORE_ONLY = ("localDir", "nextVersion")
_ids = itertools.count(int(time.time() * 1000))


def _message(message_type: Any, body: Mapping[str, Any]) -> Any:
    message = message_type()
    json_format.ParseDict(dict(body), message_type.pb(message), ignore_unknown_fields=True)
    return message


def _dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(type(message).pb(message))


def _refused(error: Exception) -> ServiceError:
    code = {
        base.ServingNotFoundError: grpc.StatusCode.NOT_FOUND,
        base.ModelInUseError: grpc.StatusCode.FAILED_PRECONDITION,
    }.get(type(error), grpc.StatusCode.INVALID_ARGUMENT)
    return ServiceError(code, str(error))


def _listed(messages: list[Any], request: Any) -> tuple[Any, str]:
    """The page of ``messages`` a list ``request`` asks for (its label filter, its page)."""
    labels = parse_label_filter(request.filter)
    chosen = [m for m in messages if labels.items() <= dict(m.labels).items()]
    return page(chosen, request.page_size, request.page_token)


class _Registry:
    """What the three services share: the names, the operations and the local twin."""

    def __init__(self, names: Names, operations: Operations, twin: Registry) -> None:
        self.names = names
        self.operations = operations
        self.twin = twin

    def checked(self, name: str, collection: str, field: str = "name") -> tuple[str, str]:
        """``name`` without its ``@version``, and the version (empty where none is given)."""
        resource_id, _, version = self.names.resource_id(name, collection, field).partition("@")
        return self.names.name(collection, resource_id), version

    # -- models ---------------------------------------------------------------------

    def versions(self, name: str) -> tuple[str, list[dict[str, Any]]]:
        store, _ = self.checked(name, "models")
        stored = self.twin.stored_model(store.rsplit("/", 1)[-1])
        if stored is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"name: model {name} not found")
        return store, stored["versions"]

    def version(self, name: str) -> tuple[str, dict[str, Any]]:
        """The stored version ``name`` names (``@<id>``, ``@<alias>`` or the default)."""
        store, versions = self.versions(name)
        wanted = name.partition("@")[2] or "default"
        for version in versions:
            if wanted == version["versionId"] or wanted in version.get("versionAliases", ()):
                return store, version
        raise ServiceError(grpc.StatusCode.NOT_FOUND, f"name: model version {name} not found")

    def model(self, store: str, version: Mapping[str, Any]) -> v1.Model:
        deployed = [
            {"endpoint": endpoint, "deployedModelId": dm}
            for endpoint, dm in self.twin._deployed_to(store, version["versionId"])
        ]
        body = {k: v for k, v in version.items() if k not in _STORE_ONLY}
        return _message(
            v1.Model,
            {**body, "name": store, "deployedModels": deployed}
            | {"supportedDeploymentResourcesTypes": ["DEDICATED_RESOURCES"]}
            | {"versionCreateTime": version.get("createTime")},
        )

    # -- endpoints ------------------------------------------------------------------

    def endpoint(self, name: str, field: str = "name") -> tuple[str, dict[str, Any]]:
        store, _ = self.checked(name, "endpoints", field)
        try:
            return store, self.twin.stored_endpoint(store.rsplit("/", 1)[-1])
        except base.ServingNotFoundError as error:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"{field}: {name} not found") from error

    def endpoint_message(self, store: str, stored: Mapping[str, Any]) -> v1.Endpoint:
        deployed = [
            {
                **d["body"],
                "id": d["id"],
                "model": d["model"],
                "modelVersionId": d["modelVersionId"],
            }
            for d in stored.get("deployed", [])
        ]
        keep = ("displayName", "description", "labels", "createTime")
        return _message(
            v1.Endpoint,
            {k: stored[k] for k in keep if k in stored}
            | {
                "name": store,
                "deployedModels": deployed,
                "trafficSplit": stored.get("trafficSplit") or {},
            },
        )


class ModelService(_Registry):
    def upload_model(self, request: v1.UploadModelRequest) -> Any:
        self.names.check_parent(request.parent)
        if request.parent_model:
            store, _ = self.versions(request.parent_model)
            model_id = store.rsplit("/", 1)[-1]
        else:
            model_id = request.model_id or str(next(_ids))
            if self.twin.stored_model(model_id) is not None:
                raise ServiceError(
                    grpc.StatusCode.ALREADY_EXISTS,
                    f"model_id: model {self.names.name('models', model_id)} exists; upload a "
                    "new version with parent_model",
                )
        runs_here(request.model, "model", local_support())
        body = _dict(request.model)

        def upload() -> v1.UploadModelResponse:
            try:
                record = self.twin.upload(model_id, body)
            except base.ServingRefusedError as error:
                raise _refused(error) from error
            return v1.UploadModelResponse(model=record.model, model_version_id=record.version_id)

        return self.operations.run(upload, v1.UploadModelOperationMetadata())

    def get_model(self, request: v1.GetModelRequest) -> v1.Model:
        return self.model(*self.version(request.name))

    def list_model_versions(self, request: v1.ListModelVersionsRequest) -> Any:
        store, versions = self.versions(request.name)
        labels = parse_label_filter(request.filter)
        chosen = [v for v in versions if labels.items() <= (v.get("labels") or {}).items()]
        found, token = page(chosen, request.page_size, request.page_token)
        return v1.ListModelVersionsResponse(
            models=[self.model(store, v) for v in found], next_page_token=token
        )

    def list_models(self, request: v1.ListModelsRequest) -> Any:
        self.names.check_parent(request.parent)
        models = [
            self.model(*self.version(self.names.name("models", model_id)))
            for model_id in self.twin.stored_models()
        ]
        found, token = _listed(models, request)
        return v1.ListModelsResponse(models=found, next_page_token=token)

    def update_model(self, request: v1.UpdateModelRequest) -> v1.Model:
        store, version = self.version(request.model.name)
        body = {**version, **_dict(request.model)}
        self.twin.update_version(store, version["versionId"], body)
        return self.model(*self.version(request.model.name))

    def merge_version_aliases(self, request: v1.MergeVersionAliasesRequest) -> v1.Model:
        store, version = self.version(request.name)
        aliases = list(version.get("versionAliases") or ())
        for alias in request.version_aliases:
            if alias.startswith("-"):
                if alias[1:] == "default":
                    raise ServiceError(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "version_aliases: the default alias moves by being given to another "
                        "version, never removed",
                    )
                aliases = [a for a in aliases if a != alias[1:]]
            elif alias not in aliases:
                aliases.append(alias)
        self.twin.move_aliases(store, version["versionId"], aliases)
        return self.model(*self.version(f"{request.name.partition('@')[0]}@{version['versionId']}"))

    def _delete(self, name: str, versions: list[dict[str, Any]], store: str) -> Any:
        for version in versions:
            deployed = list(self.twin._deployed_to(store, version["versionId"]))
            if deployed:
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"name: {name}@{version['versionId']} is deployed to "
                    f"{deployed[0][0]}: undeploy it first",
                )

        def delete() -> empty_pb2.Empty:
            for version in versions:
                self.twin.delete_version(store, version["versionId"])
            return empty_pb2.Empty()

        return self.operations.run(delete, v1.DeleteOperationMetadata())

    def delete_model(self, request: v1.DeleteModelRequest) -> Any:
        store, versions = self.versions(request.name)
        return self._delete(request.name, versions, store)

    def delete_model_version(self, request: v1.DeleteModelVersionRequest) -> Any:
        store, version = self.version(request.name)
        if "default" in (version.get("versionAliases") or ()):
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"name: {request.name} is the model's default version: give the default alias "
                "to another version first, or delete the model",
            )
        return self._delete(request.name, [version], store)


class EndpointService(_Registry):
    def create_endpoint(self, request: v1.CreateEndpointRequest) -> Any:
        self.names.check_parent(request.parent)
        endpoint_id = request.endpoint_id or str(next(_ids))
        if endpoint_id in self.twin.stored_endpoints():
            raise ServiceError(
                grpc.StatusCode.ALREADY_EXISTS,
                f"endpoint_id: {self.names.name('endpoints', endpoint_id)} exists",
            )
        runs_here(request.endpoint, "endpoint", local_support())
        body = _dict(request.endpoint)

        def create() -> v1.Endpoint:
            record = self.twin.create_endpoint(endpoint_id, body)
            return self.endpoint_message(*self.endpoint(record.name))

        return self.operations.run(create, v1.CreateEndpointOperationMetadata())

    def get_endpoint(self, request: v1.GetEndpointRequest) -> v1.Endpoint:
        return self.endpoint_message(*self.endpoint(request.name))

    def list_endpoints(self, request: v1.ListEndpointsRequest) -> Any:
        self.names.check_parent(request.parent)
        endpoints = [
            self.endpoint_message(*self.endpoint(self.names.name("endpoints", endpoint_id)))
            for endpoint_id in self.twin.stored_endpoints()
        ]
        found, token = _listed(endpoints, request)
        return v1.ListEndpointsResponse(endpoints=found, next_page_token=token)

    def update_endpoint(self, request: v1.UpdateEndpointRequest) -> v1.Endpoint:
        store, stored = self.endpoint(request.endpoint.name, "endpoint.name")
        paths = set(request.update_mask.paths)
        given = _dict(request.endpoint)
        if paths & {"display_name", "description", "labels", "displayName"}:
            self.twin.update_endpoint(store, {**stored, **given})
        if paths & {"traffic_split", "trafficSplit"}:
            self._traffic(stored, dict(request.endpoint.traffic_split), "endpoint.traffic_split")
            self.twin.set_traffic(store, dict(request.endpoint.traffic_split))
            self.twin.ensure_serving(store)
        return self.endpoint_message(*self.endpoint(request.endpoint.name))

    @staticmethod
    def _traffic(stored: Mapping[str, Any], split: Mapping[str, int], field: str) -> None:
        ids = {d["id"] for d in stored.get("deployed", [])}
        if split and (set(split) - ids or sum(split.values()) != 100):
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{field}: {dict(split)} must name deployed models ({sorted(ids)}) and add up "
                "to 100",
            )

    def delete_endpoint(self, request: v1.DeleteEndpointRequest) -> Any:
        store, stored = self.endpoint(request.name)
        if stored.get("deployed"):
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"name: {request.name} still has deployed models "
                f"{[d['id'] for d in stored['deployed']]}: undeploy them first",
            )
        return self.operations.run(
            lambda: self.twin.delete_endpoint(store),
            v1.DeleteOperationMetadata(),
        )

    def deploy_model(self, request: v1.DeployModelRequest) -> Any:
        store, stored = self.endpoint(request.endpoint, "endpoint")
        runs_here(request.deployed_model, "deployed_model", local_support())
        deployed = _dict(request.deployed_model)
        model_store, version = self.version(request.deployed_model.model)
        deployed_id = deployed.get("id") or str(next(_ids))
        split = {(deployed_id if k == "0" else k): int(v) for k, v in request.traffic_split.items()}
        if not split:
            split = dict(stored.get("trafficSplit") or {}) or {deployed_id: 100}
        after = {**stored, "deployed": [*stored.get("deployed", []), {"id": deployed_id}]}
        self._traffic(after, split, "traffic_split")
        deployed |= {"id": deployed_id, "model": f"{model_store}@{version['versionId']}"}

        def deploy() -> v1.DeployModelResponse:
            self.twin.deploy(store, deployed, split)
            self.twin.ensure_serving(store)
            _, now = self.endpoint(request.endpoint, "endpoint")
            message = self.endpoint_message(store, now)
            mine = next(d for d in message.deployed_models if d.id == deployed_id)
            return v1.DeployModelResponse(deployed_model=mine)

        return self.operations.run(deploy, v1.DeployModelOperationMetadata())

    def undeploy_model(self, request: v1.UndeployModelRequest) -> Any:
        store, stored = self.endpoint(request.endpoint, "endpoint")
        if request.deployed_model_id not in {d["id"] for d in stored.get("deployed", [])}:
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND,
                f"deployed_model_id: {request.deployed_model_id} is not deployed to "
                f"{request.endpoint}",
            )
        split = dict(request.traffic_split)
        left = {
            **stored,
            "deployed": [d for d in stored["deployed"] if d["id"] != request.deployed_model_id],
        }
        if left["deployed"] and not split:
            old = {
                k: v for k, v in stored["trafficSplit"].items() if k != request.deployed_model_id
            }
            split = old if sum(old.values()) == 100 else {}
        self._traffic(left, split, "traffic_split")

        def undeploy() -> v1.UndeployModelResponse:
            self.twin.undeploy(store, request.deployed_model_id, split)
            self.twin.ensure_serving(store)
            return v1.UndeployModelResponse()

        return self.operations.run(undeploy, v1.UndeployModelOperationMetadata())

    def mutate_deployed_model(self, request: v1.MutateDeployedModelRequest) -> Any:
        store, stored = self.endpoint(request.endpoint, "endpoint")
        given = _dict(request.deployed_model)
        entry = next((d for d in stored.get("deployed", []) if d["id"] == given.get("id")), None)
        if entry is None:
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND,
                f"deployed_model.id: {given.get('id')!r} is not deployed to {request.endpoint}",
            )
        mask = request.update_mask.ToJsonString().split(",") if request.update_mask.paths else []
        changed = {k: v for k, v in given.items() if k != "id" and (not mask or k in mask)}

        def mutate() -> v1.MutateDeployedModelResponse:
            body = {**entry["body"], **changed, "id": entry["id"]}
            body["model"] = f"{entry['model']}@{entry['modelVersionId']}"
            self.twin.deploy(store, body, stored["trafficSplit"])
            self.twin.ensure_serving(store)
            _, now = self.endpoint(request.endpoint, "endpoint")
            message = self.endpoint_message(store, now)
            mine = next(d for d in message.deployed_models if d.id == entry["id"])
            return v1.MutateDeployedModelResponse(deployed_model=mine)

        return self.operations.run(mutate, v1.MutateDeployedModelOperationMetadata())


class PredictionService(_Registry):
    """Predictions are answered by the endpoint's prediction server, as on Vertex."""

    def _post(self, endpoint: str, data: bytes, content_type: str) -> tuple[str, bytes]:
        """The endpoint's prediction server's answer. A server that went away during the
        request (it died, its machine restarted) is started again and asked again, once it
        has gone: Vertex, too, keeps an endpoint's replicas answering."""
        store, _ = self.endpoint(endpoint, "endpoint")
        deadline = time.monotonic() + SERVER_GONE_SECONDS
        while True:
            record = self.twin.ensure_serving(store)
            if not record.predict_url:
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"endpoint: {endpoint} has no deployed model to answer predictions",
                )
            request = urllib.request.Request(
                record.predict_url, data=data, headers={"Content-Type": content_type}
            )
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    return response.headers.get_content_type(), response.read()
            except urllib.error.HTTPError:
                raise
            except (urllib.error.URLError, ConnectionError) as gone:
                if time.monotonic() > deadline:
                    raise ServiceError(grpc.StatusCode.UNAVAILABLE, f"endpoint: {gone}") from gone
                time.sleep(0.1)

    def _answer(self, endpoint: str, data: bytes, content_type: str) -> tuple[str, bytes]:
        try:
            return self._post(endpoint, data, content_type)
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                text = str(json.loads(text).get("error", text))
            code = {429: grpc.StatusCode.RESOURCE_EXHAUSTED, 503: grpc.StatusCode.UNAVAILABLE}
            raise ServiceError(
                code.get(error.code, grpc.StatusCode.INVALID_ARGUMENT), text
            ) from error

    def predict(self, request: v1.PredictRequest) -> v1.PredictResponse:
        pb = v1.PredictRequest.pb(request)
        body = {"instances": [json_format.MessageToDict(v) for v in pb.instances]}
        if pb.HasField("parameters"):
            body["parameters"] = json_format.MessageToDict(pb.parameters)
        _, answer = self._answer(request.endpoint, json.dumps(body).encode(), "application/json")
        found = json.loads(answer)
        response = v1.PredictResponse(
            deployed_model_id=found.get("deployedModelId", ""),
            model=found.get("model", ""),
            model_version_id=found.get("modelVersionId", ""),
        )
        out = v1.PredictResponse.pb(response)
        for prediction in found.get("predictions", []):
            json_format.ParseDict(prediction, out.predictions.add())
        return response

    def raw_predict(self, request: Any) -> httpbody_pb2.HttpBody:
        pb = v1.RawPredictRequest.pb(request)
        content_type, answer = self._answer(
            pb.endpoint, pb.http_body.data, pb.http_body.content_type or "application/json"
        )
        return httpbody_pb2.HttpBody(content_type=content_type, data=answer)
