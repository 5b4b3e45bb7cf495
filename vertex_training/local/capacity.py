"""The local Vertex's PersistentResourceService: a persistent resource is a warm pool, one
waiting interpreter per replica (``capacity.local``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import json_format

from vertex_training.capacity.local import slot_count
from vertex_training.local.names import Names, page
from vertex_training.local.operations import Operations
from vertex_training.local.runners.pool import create_pool, ensure_workers, healthy, stop_pool
from vertex_training.local.runners.store import now_rfc3339
from vertex_training.local.runners.warm import CAPACITY_DIR, pool_dir
from vertex_training.local.wire import ServiceError

RESOURCE_FILE = "resource.json"
"""Beside the pool's own files: the resource as created."""


class PersistentResourceService:
    def __init__(self, names: Names, operations: Operations, root: Path) -> None:
        self.names = names
        self.operations = operations
        self.root = root

    def _stored(self, name: str) -> tuple[Path, dict[str, Any]]:
        pool = pool_dir(self.root, self.names.resource_id(name, "persistentResources"))
        try:
            return pool, json.loads((pool / RESOURCE_FILE).read_text())
        except FileNotFoundError:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"name: {name} not found") from None

    def _message(self, pool: Path, body: dict[str, Any]) -> v1.PersistentResource:
        state = body.get("state") or ("RUNNING" if healthy(pool) else "ERROR")
        message = v1.PersistentResource()
        json_format.ParseDict(
            {**body, "state": state, "name": self.names.name("persistentResources", pool.name)},
            v1.PersistentResource.pb(message),
        )
        return message

    def create_persistent_resource(self, request: v1.CreatePersistentResourceRequest) -> Any:
        self.names.check_parent(request.parent)
        pool = pool_dir(self.root, request.persistent_resource_id)
        if (pool / RESOURCE_FILE).exists():
            raise ServiceError(
                grpc.StatusCode.ALREADY_EXISTS,
                f"persistent_resource_id: {request.persistent_resource_id} exists",
            )
        body = json_format.MessageToDict(v1.PersistentResource.pb(request.persistent_resource))
        slots = slot_count(body.get("resourcePools") or [])
        if slots < 1:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "persistent_resource.resource_pools: no replica in any pool; valid: a "
                "replica_count of 1 or more",
            )
        body["createTime"] = now_rfc3339()
        pool.mkdir(parents=True)
        (pool / RESOURCE_FILE).write_text(json.dumps({**body, "state": "PROVISIONING"}))

        def create() -> v1.PersistentResource:
            create_pool(pool, slots)
            (pool / RESOURCE_FILE).write_text(json.dumps(body))
            return self._message(pool, body)

        return self.operations.run(create, v1.CreatePersistentResourceOperationMetadata())

    def get_persistent_resource(self, request: v1.GetPersistentResourceRequest) -> Any:
        return self._message(*self._stored(request.name))

    def list_persistent_resources(self, request: v1.ListPersistentResourcesRequest) -> Any:
        self.names.check_parent(request.parent)
        found = sorted((self.root / CAPACITY_DIR).glob(f"*/{RESOURCE_FILE}"))
        chosen, token = page(found, request.page_size, request.page_token)
        return v1.ListPersistentResourcesResponse(
            persistent_resources=[
                self._message(p.parent, json.loads(p.read_text())) for p in chosen
            ],
            next_page_token=token,
        )

    def reboot_persistent_resource(self, request: v1.RebootPersistentResourceRequest) -> Any:
        """A worker that died is replaced; those waiting stay."""
        pool, body = self._stored(request.name)

        def reboot() -> v1.PersistentResource:
            ensure_workers(pool)
            return self._message(pool, body)

        return self.operations.run(reboot, v1.RebootPersistentResourceOperationMetadata())

    def delete_persistent_resource(self, request: v1.DeletePersistentResourceRequest) -> Any:
        pool, _ = self._stored(request.name)
        return self.operations.run(lambda: stop_pool(pool), v1.DeleteOperationMetadata())
