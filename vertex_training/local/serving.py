"""The local Vertex's ModelService, EndpointService and PredictionService: they read and
write Vertex's own messages in the store (``runners.registry``), each of Vertex's rules
(not found, already exists, a deployed version kept, the default alias, a split adding up
to 100) checked here, once, under the store's lock; a prediction goes to the endpoint's
prediction server (``predictor``)."""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, cast

import grpc
from google.api import httpbody_pb2
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import json_format

from vertex_training.local.names import Names, page, parse_label_filter, runs_here
from vertex_training.local.operations import Operations
from vertex_training.local.runners.registry import Registry
from vertex_training.local.runners.store import now_rfc3339
from vertex_training.local.wire import ServiceError
from vertex_training.serving.local_support import local_support

SERVER_GONE_SECONDS = 30.0
"""How long a prediction waits for its endpoint's server to be started again."""
METADATA = ("displayName", "description", "labels")
"""What an update changes of a model version or an endpoint."""
_ids = itertools.count(int(time.time() * 1000))


def _message(message_type: Any, body: Mapping[str, Any]) -> Any:
    message = message_type()
    json_format.ParseDict(dict(body), message_type.pb(message), ignore_unknown_fields=True)
    return message


def _dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(type(message).pb(message))


def _labelled(messages: list[Any], request: Any) -> tuple[Any, str]:
    """The page of ``messages`` a list ``request`` asks for (its label filter, its page)."""
    wanted = parse_label_filter(request.filter).items()
    chosen = [m for m in messages if wanted <= dict(m.labels).items()]
    return page(chosen, request.page_size, request.page_token)


def _give(stored: Mapping[str, Any], version: dict[str, Any], alias: str) -> None:
    """``alias`` to ``version``: an alias names one version of the model (the default first)."""
    for other in stored["versions"]:
        with contextlib.suppress(ValueError):
            other.get("versionAliases", []).remove(alias)
    aliases = version.setdefault("versionAliases", [])
    aliases.insert(0 if alias == "default" else len(aliases), alias)


def _check_traffic(stored: Mapping[str, Any], split: Mapping[str, int], field: str) -> None:
    ids = {d["id"] for d in stored.get("deployedModels", [])}
    if split and (set(split) - ids or sum(split.values()) != 100):
        raise ServiceError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{field}: {dict(split)} must name deployed models ({sorted(ids)}) and add up to 100",
        )


class _Registry:
    """What the three services share: the names, the operations and the store."""

    def __init__(self, names: Names, operations: Operations, twin: Registry) -> None:
        self.names = names
        self.operations = operations
        self.twin = twin

    def stored_model(
        self, name: str, field: str = "name"
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """The id of the model ``name`` names, its record and the version it names
        (``@<id>``, ``@<alias>`` or the default)."""
        model_id = self.names.resource_id(name, "models", field).partition("@")[0]
        stored = self.twin.stored_model(model_id)
        if stored is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"{field}: model {name} not found")
        return model_id, stored, self.version(stored, name, field)

    @staticmethod
    def version(stored: Mapping[str, Any], name: str, field: str = "name") -> dict[str, Any]:
        wanted = name.partition("@")[2] or "default"
        for version in stored["versions"]:
            if wanted == version["versionId"] or wanted in version.get("versionAliases", ()):
                return cast(dict[str, Any], version)
        raise ServiceError(grpc.StatusCode.NOT_FOUND, f"{field}: model version {name} not found")

    def model(self, version: Mapping[str, Any]) -> v1.Model:
        deployed = self.twin.deployments(version["name"], version["versionId"])
        refs = [{"endpoint": endpoint, "deployedModelId": dm} for endpoint, dm in deployed]
        return _message(v1.Model, {**version, "deployedModels": refs})

    def stored_endpoint(self, name: str, field: str = "name") -> tuple[str, dict[str, Any]]:
        endpoint_id = self.names.resource_id(name, "endpoints", field)
        stored = self.twin.stored_endpoint(endpoint_id)
        if stored is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"{field}: {name} not found")
        return endpoint_id, stored


class ModelService(_Registry):
    def upload_model(self, request: v1.UploadModelRequest) -> Any:
        self.names.check_parent(request.parent)
        if request.parent_model:
            model_id, _, _ = self.stored_model(request.parent_model, "parent_model")
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
        source = self.twin.local_path(str(body.get("artifactUri", "")))

        def upload() -> v1.UploadModelResponse:
            if not any((source / n).is_file() for n in ("saved_model.pb", "saved_model.pbtxt")):
                raise ServiceError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"model.artifact_uri: no SavedModel at {body.get('artifactUri')!r} (looked "
                    f"in {source}); a model is uploaded from a job that wrote one",
                )
            name = self.names.name("models", model_id)
            with self.twin.locked():
                stored = self.twin.stored_model(model_id) or {"nextVersion": 1, "versions": []}
                version_id = str(stored["nextVersion"])
                shutil.rmtree(self.twin.version_dir(model_id, version_id), ignore_errors=True)
                shutil.copytree(source, self.twin.version_dir(model_id, version_id))
                now = now_rfc3339()
                version = body | {"name": name, "versionId": version_id, "versionAliases": []}
                version |= {"createTime": now, "versionCreateTime": now}
                version["supportedDeploymentResourcesTypes"] = ["DEDICATED_RESOURCES"]
                stored["versions"].append(version)
                first = ["default"] if len(stored["versions"]) == 1 else []
                for alias in dict.fromkeys([*first, *body.get("versionAliases", [])]):
                    _give(stored, version, alias)
                stored["nextVersion"] = int(version_id) + 1
                self.twin.write_model(model_id, stored)
            return v1.UploadModelResponse(model=name, model_version_id=version_id)

        return self.operations.run(upload, v1.UploadModelOperationMetadata())

    def get_model(self, request: v1.GetModelRequest) -> v1.Model:
        return self.model(self.stored_model(request.name)[2])

    def list_model_versions(self, request: v1.ListModelVersionsRequest) -> Any:
        _, stored, _ = self.stored_model(request.name)
        found, token = _labelled([self.model(v) for v in stored["versions"]], request)
        return v1.ListModelVersionsResponse(models=found, next_page_token=token)

    def list_models(self, request: v1.ListModelsRequest) -> Any:
        self.names.check_parent(request.parent)
        stored = filter(None, map(self.twin.stored_model, self.twin.stored_models()))
        found, token = _labelled([self.model(self.version(s, "")) for s in stored], request)
        return v1.ListModelsResponse(models=found, next_page_token=token)

    def update_model(self, request: v1.UpdateModelRequest) -> v1.Model:
        given = _dict(request.model)
        with self.twin.locked():
            model_id, stored, version = self.stored_model(request.model.name, "model.name")
            version.update({k: given[k] for k in METADATA if k in given})
            self.twin.write_model(model_id, stored)
        return self.model(version)

    def merge_version_aliases(self, request: v1.MergeVersionAliasesRequest) -> v1.Model:
        with self.twin.locked():
            model_id, stored, version = self.stored_model(request.name)
            aliases = version.setdefault("versionAliases", [])
            for alias in request.version_aliases:
                if alias == "-default":
                    raise ServiceError(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "version_aliases: the default alias moves by being given to another "
                        "version, never removed",
                    )
                if alias.startswith("-"):
                    with contextlib.suppress(ValueError):
                        aliases.remove(alias[1:])
                elif alias not in aliases:
                    _give(stored, version, alias)
            self.twin.write_model(model_id, stored)
        return self.model(version)

    def _delete(self, name: str, default_kept: bool) -> Any:
        """Delete the version ``name`` names (``default_kept``: not the default one), or
        every version of the model; none may still be deployed."""
        with self.twin.locked():
            model_id, stored, version = self.stored_model(name)
            gone = [version] if default_kept else stored["versions"]
            if default_kept and "default" in gone[0].get("versionAliases", ()):
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"name: {name} is the model's default version: give the default alias "
                    "to another version first, or delete the model",
                )
            for version in gone:
                if deployed := self.twin.deployments(version["name"], version["versionId"]):
                    raise ServiceError(
                        grpc.StatusCode.FAILED_PRECONDITION,
                        f"name: {version['name']}@{version['versionId']} is deployed to "
                        f"{deployed[0][0]}: undeploy it first",
                    )
            stored["versions"] = [v for v in stored["versions"] if v not in gone]
            self.twin.write_model(model_id, stored)
        return self.operations.run(lambda: None, v1.DeleteOperationMetadata())

    def delete_model(self, request: v1.DeleteModelRequest) -> Any:
        return self._delete(request.name.partition("@")[0], default_kept=False)

    def delete_model_version(self, request: v1.DeleteModelVersionRequest) -> Any:
        return self._delete(request.name, default_kept=True)


class EndpointService(_Registry):
    def create_endpoint(self, request: v1.CreateEndpointRequest) -> Any:
        self.names.check_parent(request.parent)
        endpoint_id = request.endpoint_id or str(next(_ids))
        name = self.names.name("endpoints", endpoint_id)
        with self.twin.locked():
            if self.twin.stored_endpoint(endpoint_id) is not None:
                raise ServiceError(grpc.StatusCode.ALREADY_EXISTS, f"endpoint_id: {name} exists")
            runs_here(request.endpoint, "endpoint", local_support())
            body = _dict(request.endpoint)
            stored = {k: body[k] for k in METADATA if k in body}
            stored |= {"name": name, "createTime": now_rfc3339()}
            self.twin.write_endpoint(endpoint_id, stored, stop=False)
        created = _message(v1.Endpoint, stored)
        return self.operations.run(lambda: created, v1.CreateEndpointOperationMetadata())

    def get_endpoint(self, request: v1.GetEndpointRequest) -> v1.Endpoint:
        return _message(v1.Endpoint, self.stored_endpoint(request.name)[1])

    def list_endpoints(self, request: v1.ListEndpointsRequest) -> Any:
        self.names.check_parent(request.parent)
        found, token = _labelled([_message(v1.Endpoint, e) for e in self.twin.endpoints()], request)
        return v1.ListEndpointsResponse(endpoints=found, next_page_token=token)

    def update_endpoint(self, request: v1.UpdateEndpointRequest) -> v1.Endpoint:
        paths = set(request.update_mask.paths)
        given = _dict(request.endpoint)
        split = dict(request.endpoint.traffic_split)
        with self.twin.locked():
            endpoint_id, stored = self.stored_endpoint(request.endpoint.name, "endpoint.name")
            if paths & {"display_name", "description", "labels", "displayName"}:
                stored.update({k: given[k] for k in METADATA if k in given})
            serves = bool(paths & {"traffic_split", "trafficSplit"})
            if serves:
                _check_traffic(stored, split, "endpoint.traffic_split")
                stored["trafficSplit"] = split
            self.twin.write_endpoint(endpoint_id, stored, stop=serves)
        if serves:
            self.twin.ensure_serving(stored["name"])
        return _message(v1.Endpoint, stored)

    def delete_endpoint(self, request: v1.DeleteEndpointRequest) -> Any:
        with self.twin.locked():
            endpoint_id, stored = self.stored_endpoint(request.name)
            if deployed := stored.get("deployedModels"):
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"name: {request.name} still has deployed models "
                    f"{[d['id'] for d in deployed]}: undeploy them first",
                )
            self.twin.delete_endpoint(endpoint_id, stored)
        return self.operations.run(lambda: None, v1.DeleteOperationMetadata())

    def _serve(self, name: str, response: Any, metadata: Any) -> Any:
        """An operation: the endpoint ``name`` serving what it now holds, then ``response``."""

        def serve() -> Any:
            self.twin.ensure_serving(name)
            return response

        return self.operations.run(serve, metadata)

    def deploy_model(self, request: v1.DeployModelRequest) -> Any:
        model = request.deployed_model.model
        with self.twin.locked():
            endpoint_id, stored = self.stored_endpoint(request.endpoint, "endpoint")
            runs_here(request.deployed_model, "deployed_model", local_support())
            _, _, version = self.stored_model(model, "deployed_model.model")
            deployed = _dict(request.deployed_model)
            deployed["id"] = deployed_id = deployed.get("id") or str(next(_ids))
            deployed |= {"model": version["name"], "modelVersionId": version["versionId"]}
            split = {(deployed_id if k == "0" else k): v for k, v in request.traffic_split.items()}
            others = [d for d in stored.get("deployedModels", []) if d["id"] != deployed_id]
            stored["deployedModels"] = [*others, deployed]
            split = split or stored.get("trafficSplit") or {deployed_id: 100}
            _check_traffic(stored, split, "traffic_split")
            stored["trafficSplit"] = split
            self.twin.write_endpoint(endpoint_id, stored, stop=True)
        response = v1.DeployModelResponse(deployed_model=_message(v1.DeployedModel, deployed))
        return self._serve(stored["name"], response, v1.DeployModelOperationMetadata())

    def undeploy_model(self, request: v1.UndeployModelRequest) -> Any:
        gone = request.deployed_model_id
        with self.twin.locked():
            endpoint_id, stored = self.stored_endpoint(request.endpoint, "endpoint")
            if gone not in {d["id"] for d in stored.get("deployedModels", [])}:
                raise ServiceError(
                    grpc.StatusCode.NOT_FOUND,
                    f"deployed_model_id: {gone} is not deployed to {request.endpoint}",
                )
            split = dict(request.traffic_split)
            if not split:  # the others' split, when it still adds up
                split = {k: v for k, v in stored.get("trafficSplit", {}).items() if k != gone}
                split = split if sum(split.values()) == 100 else {}
            self.twin.undeployed(stored, gone, split)
            _check_traffic(stored, split, "traffic_split")
            self.twin.write_endpoint(endpoint_id, stored, stop=True)
        response = v1.UndeployModelResponse()
        return self._serve(stored["name"], response, v1.UndeployModelOperationMetadata())

    def mutate_deployed_model(self, request: v1.MutateDeployedModelRequest) -> Any:
        given = _dict(request.deployed_model)
        mask = request.update_mask.ToJsonString().split(",") if request.update_mask.paths else []
        with self.twin.locked():
            endpoint_id, stored = self.stored_endpoint(request.endpoint, "endpoint")
            deployed = stored.get("deployedModels", [])
            entry = next((d for d in deployed if d["id"] == given.get("id")), None)
            if entry is None:
                raise ServiceError(
                    grpc.StatusCode.NOT_FOUND,
                    f"deployed_model.id: {given.get('id')!r} is not deployed to {request.endpoint}",
                )
            fixed = ("id", "model", "modelVersionId")
            entry.update(
                {k: v for k, v in given.items() if k not in fixed and (not mask or k in mask)}
            )
            self.twin.write_endpoint(endpoint_id, stored, stop=True)
        response = v1.MutateDeployedModelResponse(deployed_model=_message(v1.DeployedModel, entry))
        return self._serve(stored["name"], response, v1.MutateDeployedModelOperationMetadata())


class PredictionService(_Registry):
    """Predictions are answered by the endpoint's prediction server, as on Vertex."""

    def _answer(self, endpoint: str, data: bytes, content_type: str) -> tuple[str, bytes]:
        """The endpoint's prediction server's answer. A server that went away during the
        request (it died, its machine restarted) is started again and asked again, once it
        has gone: Vertex, too, keeps an endpoint's replicas answering."""
        _, stored = self.stored_endpoint(endpoint, "endpoint")
        deadline = time.monotonic() + SERVER_GONE_SECONDS
        while True:
            url = self.twin.ensure_serving(stored["name"])
            if not url:
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"endpoint: {endpoint} has no deployed model to answer predictions",
                )
            request = urllib.request.Request(url, data=data, headers={"Content-Type": content_type})
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    return response.headers.get_content_type(), response.read()
            except urllib.error.HTTPError as error:
                text = error.read().decode(errors="replace")
                with contextlib.suppress(ValueError, AttributeError):
                    text = str(json.loads(text).get("error", text))
                code = {429: grpc.StatusCode.RESOURCE_EXHAUSTED, 503: grpc.StatusCode.UNAVAILABLE}
                raise ServiceError(
                    code.get(error.code, grpc.StatusCode.INVALID_ARGUMENT), text
                ) from error
            except (urllib.error.URLError, ConnectionError) as gone:
                if time.monotonic() > deadline:
                    raise ServiceError(grpc.StatusCode.UNAVAILABLE, f"endpoint: {gone}") from gone
                time.sleep(0.1)

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
