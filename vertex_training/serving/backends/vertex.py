"""Model Registry and endpoints on Vertex AI: the real ``ModelServiceClient`` and
``EndpointServiceClient`` on the regional endpoint, their long-running operations awaited.

Clients are built on first use and live only as long as this backend object, which the
dynamic providers build inside each method: nothing here is pickled into state.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1 as v1
from google.protobuf import field_mask_pb2

from vertex_training.jobs.backends.vertex import (
    VertexService,
    label_filter,
    regional_endpoint,
    service_client,
)
from vertex_training.jobs.protos import BodyParseError, parse_message
from vertex_training.serving.backends import base

_log = logging.getLogger(__name__)

OPERATION_TIMEOUT_SECONDS = 3600.0
"""A deployment provisions machines and pulls the image: tens of minutes is normal."""


M = TypeVar("M")


def _parse(message_type: type[M], body: Mapping[str, Any]) -> M:
    try:
        return parse_message(message_type, body)
    except BodyParseError as error:
        raise base.ServingRefusedError(str(error)) from error


def _metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    """The display name, description and labels of a ``Model`` or ``Endpoint`` REST body,
    as the message fields an update sets (and names in its mask)."""
    return {
        "display_name": str(body.get("displayName", "")),
        "description": str(body.get("description", "")),
        "labels": dict(body.get("labels") or {}),
    }


def version_record(model: v1.Model) -> base.ModelVersionRecord:
    return base.ModelVersionRecord(
        model=model.name.split("@", 1)[0],
        version_id=model.version_id,
        artifact_uri=model.artifact_uri,
        display_name=model.display_name,
        labels=dict(model.labels),
        aliases=tuple(model.version_aliases),
    )


class VertexServingBackend(VertexService):
    """Model Registry and endpoints on Vertex AI for one project and region: Google's, or
    the local Vertex of the settings' local root."""

    @functools.cached_property
    def models(self) -> v1.ModelServiceClient:
        return service_client(v1.ModelServiceClient, self.settings)

    @functools.cached_property
    def endpoints(self) -> v1.EndpointServiceClient:
        return service_client(v1.EndpointServiceClient, self.settings)

    # -- Model Registry ----------------------------------------------------------------

    def _versions(self, model: str, labels: Mapping[str, str] | None = None) -> list[v1.Model]:
        request: dict[str, Any] = {"name": model}
        if labels:
            request["filter"] = label_filter(labels)
        try:
            return list(self.models.list_model_versions(request=request, retry=self.retry))
        except api_exceptions.NotFound:
            return []

    def find_version(
        self, model_id: str, labels: Mapping[str, str]
    ) -> base.ModelVersionRecord | None:
        found = [
            m
            for m in self._versions(f"{self.parent}/models/{model_id}", labels)
            # The filter is the server's job; checking again keeps a lax server honest.
            if all(m.labels.get(k) == v for k, v in labels.items())
        ]
        if not found:
            return None
        return version_record(max(found, key=lambda m: int(m.version_id or 0)))

    def upload(self, model_id: str, body: Mapping[str, Any]) -> base.ModelVersionRecord:
        model = _parse(v1.Model, body)
        name = f"{self.parent}/models/{model_id}"
        request = v1.UploadModelRequest(parent=self.parent, model=model)
        if self._versions(name):
            request.parent_model = name  # a new version of the model
        else:
            request.model_id = model_id
        # retry=None: an upload whose answer was lost may still have made a version; the
        # caller looks for it by label (find_version) instead of uploading twice.
        operation = self.models.upload_model(request=request, retry=None)
        response = operation.result(timeout=OPERATION_TIMEOUT_SECONDS)
        _log.info("uploaded %s version %s", response.model, response.model_version_id)
        return self.get_version(response.model, response.model_version_id)

    def get_version(self, model: str, version_id: str) -> base.ModelVersionRecord:
        try:
            return version_record(
                self.models.get_model(name=f"{model}@{version_id}", retry=self.retry)
            )
        except api_exceptions.NotFound as error:
            raise base.ServingNotFoundError(f"{model}@{version_id} not found") from error

    def update_version(self, model: str, version_id: str, body: Mapping[str, Any]) -> None:
        metadata = _metadata(body)
        self.models.update_model(
            model=v1.Model(name=f"{model}@{version_id}", **metadata),
            update_mask=field_mask_pb2.FieldMask(paths=list(metadata)),
            retry=self.retry,
        )

    def move_aliases(self, model: str, version_id: str, aliases: Sequence[str]) -> None:
        wanted = [a for a in aliases if a != "default"]
        mine: list[str] = []
        for other in self._versions(model):
            if other.version_id == version_id:
                mine = list(other.version_aliases)
                continue
            taken = [a for a in other.version_aliases if a in wanted]
            if taken:
                # An alias names one version: it leaves the old one before it comes here.
                self.models.merge_version_aliases(
                    name=f"{model}@{other.version_id}",
                    version_aliases=[f"-{a}" for a in taken],
                    retry=self.retry,
                )
        change = [f"-{a}" for a in mine if a not in wanted and a != "default"]
        change += [a for a in wanted if a not in mine]
        if "default" in aliases and "default" not in mine:
            change.append("default")
        if change:
            self.models.merge_version_aliases(
                name=f"{model}@{version_id}", version_aliases=change, retry=self.retry
            )

    def delete_version(self, model: str, version_id: str) -> None:
        versions = self._versions(model)
        this = next((m for m in versions if m.version_id == version_id), None)
        if this is None:
            _log.info("delete: %s@%s is already gone", model, version_id)
            return
        if this.deployed_models:
            where = ", ".join(
                f"{d.endpoint} (deployed model {d.deployed_model_id})" for d in this.deployed_models
            )
            raise base.ModelInUseError(
                f"model version {model}@{version_id} is still deployed to {where}: undeploy "
                "it there first (remove the deployment from that endpoint, or destroy it), "
                "then delete the model"
            )
        try:
            if len(versions) == 1:
                operation = self.models.delete_model(name=model, retry=self.retry)
            else:
                operation = self.models.delete_model_version(
                    name=f"{model}@{version_id}", retry=self.retry
                )
            operation.result(timeout=OPERATION_TIMEOUT_SECONDS)
        except api_exceptions.NotFound:
            _log.info("delete: %s@%s is already gone", model, version_id)

    # -- endpoints ---------------------------------------------------------------------

    def _endpoint_record(self, endpoint: v1.Endpoint) -> base.EndpointRecord:
        return base.EndpointRecord(
            name=endpoint.name,
            display_name=endpoint.display_name,
            labels=dict(endpoint.labels),
            deployed=tuple(
                base.DeployedModelRecord(d.id, d.model.split("@", 1)[0], d.model_version_id)
                for d in endpoint.deployed_models
            ),
            traffic=dict(endpoint.traffic_split),
            predict_url=f"{self._api}/v1/{endpoint.name}:predict",
        )

    @property
    def _api(self) -> str:
        """Where predictions are asked: the local Vertex, or the regional endpoint."""
        return self.local_api or f"https://{regional_endpoint(self.location)}"

    def get_endpoint(self, name: str) -> base.EndpointRecord:
        try:
            return self._endpoint_record(self.endpoints.get_endpoint(name=name, retry=self.retry))
        except api_exceptions.NotFound as error:
            raise base.ServingNotFoundError(f"{name} not found") from error

    def create_endpoint(self, endpoint_id: str, body: Mapping[str, Any]) -> base.EndpointRecord:
        name = f"{self.parent}/endpoints/{endpoint_id}"
        try:
            return self.get_endpoint(name)  # left by an interrupted `up`: ids are ours
        except base.ServingNotFoundError:
            pass
        endpoint = _parse(v1.Endpoint, body)
        try:
            operation = self.endpoints.create_endpoint(
                parent=self.parent, endpoint=endpoint, endpoint_id=endpoint_id, retry=None
            )
            operation.result(timeout=OPERATION_TIMEOUT_SECONDS)
        except api_exceptions.AlreadyExists:
            pass
        return self.get_endpoint(name)

    def update_endpoint(self, name: str, body: Mapping[str, Any]) -> None:
        metadata = _metadata(body)
        self.endpoints.update_endpoint(
            endpoint=v1.Endpoint(name=name, **metadata),
            update_mask=field_mask_pb2.FieldMask(paths=list(metadata)),
            retry=self.retry,
        )

    def deploy(
        self, name: str, deployed_model: Mapping[str, Any], traffic: Mapping[str, int]
    ) -> None:
        message = _parse(v1.DeployedModel, deployed_model)
        # The request names the model being deployed "0" in its traffic split.
        split = {("0" if k == message.id else k): int(v) for k, v in traffic.items()}
        operation = self.endpoints.deploy_model(
            endpoint=name, deployed_model=message, traffic_split=split, retry=None
        )
        operation.result(timeout=OPERATION_TIMEOUT_SECONDS)

    def set_traffic(self, name: str, traffic: Mapping[str, int]) -> None:
        self.endpoints.update_endpoint(
            endpoint=v1.Endpoint(name=name, traffic_split={k: int(v) for k, v in traffic.items()}),
            update_mask=field_mask_pb2.FieldMask(paths=["traffic_split"]),
            retry=self.retry,
        )

    def undeploy(self, name: str, deployed_model_id: str, traffic: Mapping[str, int]) -> None:
        try:
            operation = self.endpoints.undeploy_model(
                endpoint=name,
                deployed_model_id=deployed_model_id,
                traffic_split={k: int(v) for k, v in traffic.items()},
                retry=self.retry,
            )
            operation.result(timeout=OPERATION_TIMEOUT_SECONDS)
        except api_exceptions.NotFound:
            _log.info("undeploy: %s is no longer on %s", deployed_model_id, name)

    def delete_endpoint(self, name: str) -> None:
        # Right after an undeploy the endpoint can still count the deployed model for a
        # while and refuse the delete (FAILED_PRECONDITION): back off, look again, retry.
        delay = self.retry_initial
        deadline = time.monotonic() + self.retry_timeout
        while True:
            try:
                operation = self.endpoints.delete_endpoint(name=name, retry=self.retry)
                operation.result(timeout=OPERATION_TIMEOUT_SECONDS)
                return
            except api_exceptions.NotFound:
                return
            except api_exceptions.FailedPrecondition as error:
                if time.monotonic() + delay > deadline:
                    raise
                _log.info("delete %s refused (%s); retrying in %.1f s", name, error.message, delay)
            time.sleep(delay)
            delay = min(delay * 2, self.retry_initial * 16)
            try:
                left = self.get_endpoint(name)
            except base.ServingNotFoundError:
                return
            for deployed in left.deployed:
                # Something was deployed again meanwhile: undeploy it too.
                self.undeploy(name, deployed.id, {})


__all__ = ["VertexServingBackend", "version_record"]
