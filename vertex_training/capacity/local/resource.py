"""``WarmPool``: a persistent resource on a local platform, as a dynamic resource."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from vertex_training._dynamic import (
    BackendKind,
    BackendSettings,
    NotFoundError,
    Provider,
    placement,
)
from vertex_training.findings import Finding
from vertex_training.jobs.backends.local.warm import pool_dir

PROVIDER_VERSION = "1"
LOCAL_PARENT = "projects/local/locations/local"
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


def _pool(props: Mapping[str, Any]) -> Path:
    root = BackendSettings.from_props(dict(props["backend"])).local_root
    assert root is not None
    return pool_dir(Path(root).resolve(), str(props["resource_id"]))


def _outputs(props: Mapping[str, Any]) -> dict[str, Any]:
    from vertex_training.capacity.local.pool import healthy

    return {
        "name": f"{LOCAL_PARENT}/persistentResources/{props['resource_id']}",
        "slots": float(slot_count(props["spec"]["resourcePools"])),
        "healthy": healthy(_pool(props)),
    }


class WarmPoolProvider(Provider):
    """Starts, health-checks (``refresh``, ``up``) and stops a pool; stateless (pickled)."""

    body = "spec"
    required = ("spec", "resource_id", "backend")
    replacing = ("resource_id", "backend_target", "identity")
    updating = ("provider_version", "backend")
    metadata = ()
    # The new pool takes the same directory: the old one goes first.
    delete_before_replace = True

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

    def extra_changes(self, id_: str, props: Mapping[str, Any]) -> list[str]:
        from vertex_training.capacity.local.pool import healthy

        # A worker died (or the machine restarted): an update replaces it.
        return [] if healthy(_pool(props)) else ["healthy"]

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        from vertex_training.capacity.local.pool import create_pool

        create_pool(_pool(props), slot_count(props["spec"]["resourcePools"]))
        outputs = _outputs(props)
        return pulumi.dynamic.CreateResult(
            id_=outputs["name"], outs={**self.inputs(props), **outputs}
        )

    def backend(self, props: Mapping[str, Any]) -> Path:
        """The pool's directory: its files are the pool's whole state."""
        return _pool(props)

    def fetch(self, backend: Path, id_: str) -> Path:
        from vertex_training.capacity.local.pool import ensure_workers

        try:
            ensure_workers(backend)  # a refresh replaces a dead worker
        except FileNotFoundError as gone:
            raise NotFoundError(id_) from gone  # the next `up` creates it again
        return backend

    def outputs(self, record: Any, props: Mapping[str, Any]) -> dict[str, Any]:
        return _outputs(props)

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        from vertex_training.capacity.local.pool import ensure_workers

        ensure_workers(_pool(news))
        return pulumi.dynamic.UpdateResult(outs={**self.inputs(news), **_outputs(news)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from vertex_training.capacity.local.pool import stop_pool

        stop_pool(_pool(props))


@dataclass(frozen=True, kw_only=True)
class WarmPoolArgs:
    """A local persistent resource: its id, its pools and the platform's local root."""

    resource_id: pulumi.Input[str]
    """The persistent resource's id: jobs name it in ``jobSpec.persistentResourceId``."""
    resource_pools: pulumi.Input[Sequence[Mapping[str, Any]]]
    """``resourcePools`` as the Vertex REST body has them: one warm worker per replica."""
    local_root: str
    """The platform's local root: the pool lives in ``<local_root>/capacity/<id>/``."""


class WarmPool(pulumi.dynamic.Resource, module="vertex", name="WarmPool"):
    """A warm pool of worker processes (``pulumi-python:dynamic/vertex:WarmPool``): this
    interpreter with TensorFlow imported, one per replica of the resource's pools, each
    running one replica of a job placed on the resource and then replaced by a fresh one.
    ``up`` starts them, ``refresh`` and ``up`` replace a dead one, ``destroy`` stops all."""

    name: pulumi.Output[str]
    """``projects/local/locations/local/persistentResources/ID``."""
    resource_id: pulumi.Output[str]
    slots: pulumi.Output[float]
    healthy: pulumi.Output[bool]
    """Every slot had a live worker waiting when last looked at."""

    def __init__(
        self, resource_name: str, args: WarmPoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        settings = BackendSettings(BackendKind.LOCAL, local_root=str(args.local_root))
        props = {
            "spec": {"resourcePools": args.resource_pools},
            "resource_id": args.resource_id,
            **placement(resource_name, settings, "", PROVIDER_VERSION),
            **dict.fromkeys(OUTPUTS),
        }
        super().__init__(WarmPoolProvider(), resource_name, props, opts)


__all__ = ["WarmPool", "WarmPoolArgs", "WarmPoolProvider"]
