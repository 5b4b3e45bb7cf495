"""``WarmPool``: a persistent resource on a local platform, as a dynamic resource."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from vertex_training._dynamic import (
    BackendKind,
    BackendSettings,
    Provider,
    common_inputs,
)
from vertex_training.findings import Finding

PROVIDER_VERSION = "1"
WARM_TIMEOUT_SECONDS = 660.0
"""Workers import TensorFlow before they are warm: minutes on a busy machine."""
OUTPUTS = ("name", "slots", "healthy")


def slot_count(resource_pools: Sequence[Mapping[str, Any]]) -> int:
    """One slot per replica: the pools' replica counts, or where a pool sets none its
    autoscaling minimum (numbers cross the engine as floats, int64 as strings)."""
    return sum(
        int(
            float(p.get("replicaCount", (p.get("autoscalingSpec") or {}).get("minReplicaCount", 0)))
        )
        for p in resource_pools
    )


def _client(props: Mapping[str, Any]) -> Any:
    """The PersistentResourceService client of the resource's local Vertex."""
    from google.cloud.aiplatform_v1 import PersistentResourceServiceClient

    from vertex_training.jobs.backends.vertex import service_client

    return service_client(
        PersistentResourceServiceClient, BackendSettings.from_props(dict(props["backend"]))
    )


def _outputs(resource: Any) -> dict[str, Any]:
    pools = [{"replicaCount": p.replica_count} for p in resource.resource_pools]
    return {
        "name": resource.name,
        "slots": float(slot_count(pools)),
        "healthy": resource.state.name == "RUNNING",
    }


class WarmPoolProvider(Provider):
    """A persistent resource of the local Vertex (its PersistentResourceService keeps it
    warm); stateless (pickled)."""

    body = "spec"
    required = ("spec", "resource_id", "backend")
    replacing = ("resource_id", "backend_target", "identity")
    updating = ("provider_version", "backend")
    metadata = ()
    # The new pool takes the same id: the old one goes first.
    delete_before_replace = True
    kept_running = "healthy"

    def backend(self, props: Mapping[str, Any]) -> Any:
        return _client(props)

    def findings(
        self, news: Mapping[str, Any], settings: BackendSettings
    ) -> list[tuple[str, Finding]]:
        if settings.kind is not BackendKind.LOCAL:
            return [
                (
                    "backend",
                    Finding(
                        "kind",
                        "a warm pool is the local twin of a persistent resource",
                        valid="local",
                    ),
                )
            ]
        pools = news["spec"].get("resourcePools") or []
        try:
            slots = slot_count(pools)
        except (TypeError, ValueError) as error:
            return [("spec", Finding("resourcePools", f"a replicaCount is not a number ({error})"))]
        if slots < 1:
            return [
                (
                    "spec",
                    Finding(
                        "resourcePools",
                        "no replica in any pool",
                        valid="a replicaCount of 1 or more",
                    ),
                )
            ]
        return []

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        from google.api_core import exceptions
        from google.cloud.aiplatform_v1 import PersistentResource

        from vertex_training.jobs.protos import parse_message

        client = _client(props)
        settings = BackendSettings.from_props(dict(props["backend"]))
        parent = f"projects/{settings.project}/locations/{settings.location}"
        try:
            resource = client.create_persistent_resource(
                parent=parent,
                persistent_resource=parse_message(PersistentResource, props["spec"]),
                persistent_resource_id=props["resource_id"],
            ).result(timeout=WARM_TIMEOUT_SECONDS)
        except exceptions.AlreadyExists:  # made by an `up` whose answer was lost
            resource = client.get_persistent_resource(
                name=f"{parent}/persistentResources/{props['resource_id']}"
            )
        outputs = _outputs(resource)
        return pulumi.dynamic.CreateResult(
            id_=outputs["name"], outs={**self.inputs(props), **outputs}
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        from google.api_core import exceptions

        try:
            resource = _client(props).get_persistent_resource(name=id_)
        except exceptions.NotFound:
            return pulumi.dynamic.ReadResult(id_="", outs={})  # the next `up` makes it
        return pulumi.dynamic.ReadResult(
            id_=id_, outs={**self.inputs(props), **_outputs(resource)}, inputs=self.inputs(props)
        )

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        # A worker died: the service replaces it.
        resource = (
            _client(news).reboot_persistent_resource(name=id_).result(timeout=WARM_TIMEOUT_SECONDS)
        )
        return pulumi.dynamic.UpdateResult(outs={**self.inputs(news), **_outputs(resource)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from google.api_core import exceptions

        with contextlib.suppress(exceptions.NotFound):
            _client(props).delete_persistent_resource(name=id_).result(timeout=120)


@dataclass(frozen=True, kw_only=True)
class WarmPoolArgs:
    """A local persistent resource: its id, its pools and the platform's local root."""

    resource_id: pulumi.Input[str]
    """The persistent resource's id: jobs name it in ``jobSpec.persistentResourceId``."""
    resource_pools: pulumi.Input[Sequence[Mapping[str, Any]]]
    """``resourcePools`` as the Vertex REST body has them: one warm worker per replica."""
    local_root: str
    """The platform's local root: its local Vertex keeps the pool."""
    project: str
    location: str
    """The platform's project and region: the local Vertex's names."""


class WarmPool(pulumi.dynamic.Resource, module="vertex", name="WarmPool"):
    """A persistent resource of the local Vertex (``pulumi-python:dynamic/vertex:WarmPool``):
    a warm pool of worker processes, this interpreter with TensorFlow imported, one per
    replica of the resource's pools, each running one replica of a job placed on the
    resource and then replaced by a fresh one. ``up`` creates it through the
    PersistentResourceService, ``destroy`` deletes it."""

    name: pulumi.Output[str]
    """``projects/P/locations/L/persistentResources/ID`` on the local Vertex."""
    resource_id: pulumi.Output[str]
    slots: pulumi.Output[float]
    healthy: pulumi.Output[bool]
    """Every slot had a live worker waiting when last looked at."""

    def __init__(
        self, resource_name: str, args: WarmPoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        settings = BackendSettings(
            BackendKind.LOCAL,
            project=args.project,
            location=args.location,
            local_root=str(args.local_root),
        )
        props = {
            "spec": {"resourcePools": args.resource_pools},
            "resource_id": args.resource_id,
            **common_inputs(resource_name, settings, "", PROVIDER_VERSION),
            **dict.fromkeys(OUTPUTS),
        }
        super().__init__(WarmPoolProvider(), resource_name, props, opts)


__all__ = ["WarmPool", "WarmPoolArgs", "WarmPoolProvider"]
