"""A fake Vertex AI ModelService and EndpointService at the wire: real ``aiplatform_v1``
protos over gRPC, long-running operations answered done.

Covers what the serving backend uses: upload (new model or new version of a parent), get
(``name`` or ``name@version``), list versions (``labels.key="value" AND ...`` filter),
update, merge version aliases (an alias names one version: taking one another version
holds is refused), delete model / version (refused while deployed, or for the default
version while others exist); endpoints: create (with our id), get, update (mask), deploy,
undeploy, delete (refused while models are deployed). Per-method call counts and
injectable faults (any status code, optionally after the call took effect).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import grpc
from google.cloud.aiplatform_v1 import types as v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from tests.fakes.vertex_job_service import FakeService

MODEL_SERVICE = "google.cloud.aiplatform.v1.ModelService"
ENDPOINT_SERVICE = "google.cloud.aiplatform.v1.EndpointService"
SERVED = {
    MODEL_SERVICE: (
        "UploadModel",
        "GetModel",
        "ListModelVersions",
        "UpdateModel",
        "MergeVersionAliases",
        "DeleteModel",
        "DeleteModelVersion",
    ),
    ENDPOINT_SERVICE: (
        "CreateEndpoint",
        "GetEndpoint",
        "UpdateEndpoint",
        "DeployModel",
        "UndeployModel",
        "DeleteEndpoint",
    ),
}
"""The methods served, by service; each by ``FakeServingService._<method in snake_case>``."""
_FILTER_TERM = re.compile(r'^labels\.([a-z0-9_-]+)\s*=\s*"([^"]*)"$')


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _done(name: str, response: Any | None = None) -> operations_pb2.Operation:
    packed = any_pb2.Any()
    packed.Pack(type(response).pb(response) if response is not None else empty_pb2.Empty())
    return operations_pb2.Operation(name=f"{name}/operations/1", done=True, response=packed)


class _RpcError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class FakeServingService(FakeService):
    def __init__(self, project: str = "test-project", location: str = "us-central1") -> None:
        super().__init__(project, location)
        self.models: dict[str, list[v1.Model]] = {}
        self.endpoints: dict[str, v1.Endpoint] = {}
        self.undeploy_lag = 0
        """DeleteEndpoint calls refused (FAILED_PRECONDITION) after the last undeploy, as
        Vertex does for a while after one."""
        self._lag_left = 0

    # ------------------------------------------------------------------- test controls

    def reset(self) -> None:
        with self._lock:
            self.models.clear()
            self.endpoints.clear()
            self.faults.clear()
            self.calls.clear()
            self.undeploy_lag = self._lag_left = 0

    def versions(self, model: str) -> list[v1.Model]:
        return self.models.get(model, [])

    # --------------------------------------------------------------------- server

    def start(self) -> str:
        return self._serve(
            {
                service: {name: self._handler(name) for name in names}
                for service, names in SERVED.items()
            }
        )

    def _handler(self, method: str) -> grpc.RpcMethodHandler:
        """``method`` served by ``self._<method in snake_case>``, its request the
        ``aiplatform_v1`` message ``<method>Request``."""
        fn = getattr(self, "_" + re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower())
        request_type = getattr(v1, f"{method}Request")

        def apply(request: Any, context: grpc.ServicerContext) -> Any:
            try:
                return fn(request)
            except _RpcError as error:
                context.abort(error.code, str(error))

        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            return self._call(method, context, lambda: apply(request, context))

        def serialize(message: Any) -> bytes:
            if isinstance(message, operations_pb2.Operation | empty_pb2.Empty):
                return message.SerializeToString()
            return bytes(type(message).serialize(message))

        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request_type.deserialize, response_serializer=serialize
        )

    # ------------------------------------------------------------------ ModelService

    def _version(self, name: str) -> v1.Model:
        model, _, version = name.partition("@")
        versions = self.models.get(model)
        if not versions:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{model} not found")
        for message in versions:
            if (version and version in (message.version_id, *message.version_aliases)) or (
                not version and "default" in message.version_aliases
            ):
                return message
        raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{name} not found")

    def _upload_model(self, request: v1.UploadModelRequest) -> Any:
        if request.parent != self.parent:
            raise _RpcError(grpc.StatusCode.PERMISSION_DENIED, f"parent {request.parent}")
        if request.parent_model:
            name = request.parent_model
            if name not in self.models:
                raise _RpcError(grpc.StatusCode.NOT_FOUND, f"parent model {name} not found")
        else:
            name = f"{self.parent}/models/{request.model_id or len(self.models) + 1}"
            if name in self.models:
                raise _RpcError(grpc.StatusCode.ALREADY_EXISTS, f"{name} already exists")
        versions = self.models.setdefault(name, [])
        model = v1.Model(request.model)
        model.name = name
        model.version_id = str(max((int(m.version_id) for m in versions), default=0) + 1)
        aliases = [a for a in model.version_aliases]
        for alias in aliases:
            if any(alias in m.version_aliases for m in versions) and alias != "default":
                raise _RpcError(grpc.StatusCode.ALREADY_EXISTS, f"alias {alias} is taken")
        if not versions and "default" not in aliases:
            aliases.insert(0, "default")
        if "default" in aliases:
            for other in versions:
                other.version_aliases = [a for a in other.version_aliases if a != "default"]
        model.version_aliases = aliases
        model.create_time = model.version_create_time = _now()
        versions.append(model)
        return _done(name, v1.UploadModelResponse(model=name, model_version_id=model.version_id))

    def _get_model(self, request: v1.GetModelRequest) -> v1.Model:
        return self._version(request.name)

    def _list_model_versions(self, request: v1.ListModelVersionsRequest) -> Any:
        if request.name not in self.models:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{request.name} not found")
        wanted: dict[str, str] = {}
        if request.filter:
            for term in request.filter.split(" AND "):
                match = _FILTER_TERM.match(term.strip())
                if not match:
                    raise _RpcError(
                        grpc.StatusCode.INVALID_ARGUMENT, f"unsupported filter {term!r}"
                    )
                wanted[match.group(1)] = match.group(2)
        found = [
            m
            for m in self.models[request.name]
            if all(m.labels.get(k) == v for k, v in wanted.items())
        ]
        return v1.ListModelVersionsResponse(models=found)

    def _update_model(self, request: v1.UpdateModelRequest) -> v1.Model:
        message = self._version(request.model.name)
        for path in request.update_mask.paths:
            setattr(message, path, getattr(request.model, path))
        return message

    def _merge_version_aliases(self, request: v1.MergeVersionAliasesRequest) -> v1.Model:
        message = self._version(request.name)
        versions = self.models[request.name.partition("@")[0]]
        aliases = list(message.version_aliases)
        for alias in request.version_aliases:
            if alias.startswith("-"):
                if alias[1:] == "default":
                    raise _RpcError(grpc.StatusCode.INVALID_ARGUMENT, "default cannot be removed")
                aliases = [a for a in aliases if a != alias[1:]]
            elif alias == "default":
                for other in versions:
                    other.version_aliases = [a for a in other.version_aliases if a != "default"]
                aliases.append(alias)
            elif any(alias in m.version_aliases for m in versions if m is not message):
                raise _RpcError(grpc.StatusCode.ALREADY_EXISTS, f"alias {alias} is taken")
            elif alias not in aliases:
                aliases.append(alias)
        message.version_aliases = aliases
        return message

    def _delete_model(self, request: v1.DeleteModelRequest) -> Any:
        versions = self.models.get(request.name)
        if versions is None:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{request.name} not found")
        if any(m.deployed_models for m in versions):
            raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION, "model has deployed versions")
        del self.models[request.name]
        return _done(request.name)

    def _delete_model_version(self, request: v1.DeleteModelVersionRequest) -> Any:
        message = self._version(request.name)
        if message.deployed_models:
            raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION, "version is deployed")
        versions = self.models[request.name.partition("@")[0]]
        if "default" in message.version_aliases and len(versions) > 1:
            raise _RpcError(grpc.StatusCode.FAILED_PRECONDITION, "the default version")
        versions.remove(message)
        return _done(request.name)

    # --------------------------------------------------------------- EndpointService

    def _endpoint(self, name: str) -> v1.Endpoint:
        endpoint = self.endpoints.get(name)
        if endpoint is None:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{name} not found")
        return endpoint

    def _create_endpoint(self, request: v1.CreateEndpointRequest) -> Any:
        name = f"{request.parent}/endpoints/{request.endpoint_id or len(self.endpoints) + 1}"
        if name in self.endpoints:
            raise _RpcError(grpc.StatusCode.ALREADY_EXISTS, f"{name} already exists")
        endpoint = v1.Endpoint(request.endpoint)
        endpoint.name = name
        endpoint.create_time = _now()
        self.endpoints[name] = endpoint
        return _done(name, endpoint)

    def _get_endpoint(self, request: v1.GetEndpointRequest) -> v1.Endpoint:
        return self._endpoint(request.name)

    def _update_endpoint(self, request: v1.UpdateEndpointRequest) -> v1.Endpoint:
        endpoint = self._endpoint(request.endpoint.name)
        for path in request.update_mask.paths:
            if path == "traffic_split":
                self._check_split(endpoint, dict(request.endpoint.traffic_split))
                endpoint.traffic_split = dict(request.endpoint.traffic_split)
            else:
                setattr(endpoint, path, getattr(request.endpoint, path))
        return endpoint

    @staticmethod
    def _check_split(endpoint: v1.Endpoint, split: dict[str, int]) -> None:
        ids = {d.id for d in endpoint.deployed_models}
        if set(split) - ids or (split and sum(split.values()) != 100):
            raise _RpcError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"traffic split {split} must sum to 100 over deployed models {sorted(ids)}",
            )

    def _deploy_model(self, request: v1.DeployModelRequest) -> Any:
        endpoint = self._endpoint(request.endpoint)
        deployed = v1.DeployedModel(request.deployed_model)
        model = self._version(deployed.model)
        if not deployed.id:
            deployed.id = str(9000 + len(endpoint.deployed_models))
        if any(d.id == deployed.id for d in endpoint.deployed_models):
            raise _RpcError(grpc.StatusCode.ALREADY_EXISTS, f"deployed model {deployed.id} exists")
        deployed.model = model.name
        deployed.model_version_id = model.version_id
        deployed.create_time = _now()
        split = {(deployed.id if k == "0" else k): v for k, v in request.traffic_split.items()}
        endpoint.deployed_models.append(deployed)
        if not split and len(endpoint.deployed_models) == 1:
            split = {deployed.id: 100}
        try:
            self._check_split(endpoint, split)
        except _RpcError:
            endpoint.deployed_models.pop()
            raise
        endpoint.traffic_split = split
        model.deployed_models.append(
            v1.DeployedModelRef(endpoint=endpoint.name, deployed_model_id=deployed.id)
        )
        return _done(endpoint.name, v1.DeployModelResponse(deployed_model=deployed))

    def _undeploy_model(self, request: v1.UndeployModelRequest) -> Any:
        endpoint = self._endpoint(request.endpoint)
        gone = next(
            (d for d in endpoint.deployed_models if d.id == request.deployed_model_id), None
        )
        if gone is None:
            raise _RpcError(grpc.StatusCode.NOT_FOUND, f"{request.deployed_model_id} not deployed")
        left = [d for d in endpoint.deployed_models if d.id != gone.id]
        split = (
            dict(request.traffic_split) if request.traffic_split else dict(endpoint.traffic_split)
        )
        if split.get(gone.id, 0) > 0 and left:
            raise _RpcError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"deployed model {gone.id} still has traffic; assign it to the others first",
            )
        split.pop(gone.id, None)
        if left:
            endpoint.deployed_models = left
            try:
                self._check_split(endpoint, split)
            except _RpcError:
                endpoint.deployed_models.append(gone)
                raise
        else:
            endpoint.deployed_models = []
            split = {}
        endpoint.traffic_split = split
        for version in self.models.get(gone.model, []):
            if version.version_id == gone.model_version_id:
                version.deployed_models = [
                    r for r in version.deployed_models if r.deployed_model_id != gone.id
                ]
        self._lag_left = self.undeploy_lag
        return _done(endpoint.name, v1.UndeployModelResponse())

    def _delete_endpoint(self, request: v1.DeleteEndpointRequest) -> Any:
        endpoint = self._endpoint(request.name)
        if endpoint.deployed_models or self._lag_left > 0:
            self._lag_left = max(self._lag_left - 1, 0)
            raise _RpcError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "endpoint has deployed models; undeploy them before deleting it",
            )
        del self.endpoints[request.name]
        return _done(request.name)
