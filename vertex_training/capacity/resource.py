"""``PersistentResource``: Vertex AI capacity kept warm, as one component.

On a cloud platform it creates ``gcp.vertex.AiPersistentResource`` (only that submodule
of pulumi_gcp is imported, where it is used); on ``local``, the warm pool of worker
processes that stands in for it (``vertex_training.capacity.local``). A job placed on it
(``persistent_resource_id=resource``) carries its id in ``jobSpec.persistentResourceId``
and is held to its pools where the job meets its platform (``JobCapacity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from vertex_training._checks import InvalidArgumentsError, require_args
from vertex_training.capacity.api import PersistentResourceArgs
from vertex_training.capacity.estimate import estimate_capacity
from vertex_training.cost.estimate import CapacityEstimate
from vertex_training.findings import Finding

__all__ = ["PersistentResource"]


class PersistentResource(pulumi.ComponentResource):
    """A Vertex AI PersistentResource (``vertex-training:capacity:PersistentResource``):
    its pools stay provisioned, billed every hour it exists; jobs placed on it start on
    its machines in seconds. Replacing it replaces no job that already ran on it (a job
    carries its id, which stays the resource's)."""

    resource_id: str
    """What a job's ``persistentResourceId`` takes (known at construction)."""
    name: pulumi.Output[str]
    """``projects/P/locations/R/persistentResources/ID`` (on ``local``, the warm pool's:
    ``projects/local/locations/local/persistentResources/ID``)."""
    pools: list[dict[str, Any]]
    """The resource's ``resourcePools`` REST bodies, as declared."""
    cost_estimate: CapacityEstimate | None
    """Per hour while it exists, at its pools' minimum replicas; None on a local platform."""

    def __init__(
        self,
        resource_name: str,
        args: PersistentResourceArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Validate ``args`` (``InvalidArgumentsError`` before anything is registered) and
        register the resource."""
        require_args("PersistentResource", resource_name, args, PersistentResourceArgs)
        if args.platform is None:
            raise InvalidArgumentsError(
                f"PersistentResource({resource_name!r}): args.platform is not set; valid: "
                "PersistentResourceArgs(platform=<a vt.TrainingPlatform>, ...)"
            )
        resource_id = args.id_for(resource_name)
        body = args.body(resource_name)
        platform = args.platform
        opts = pulumi.ResourceOptions.merge(platform.resource_options(), opts)
        super().__init__("vertex-training:capacity:PersistentResource", resource_name, None, opts)
        self.args = args
        self.resource_id = resource_id
        self.pools = body["resourcePools"]
        self.cost_estimate = None
        # The engine does not hand a component's depends_on (the platform's enabled APIs)
        # down to its children.
        child = pulumi.ResourceOptions(parent=self, depends_on=opts.depends_on)
        if platform.environment == "local":
            from vertex_training.capacity.local import WarmPool, WarmPoolArgs

            assert platform.local_root is not None
            pool = WarmPool(
                f"{resource_name}-pool",
                WarmPoolArgs(
                    resource_id=resource_id,
                    resource_pools=self.pools,
                    local_root=str(platform.local_root),
                    project=str(platform.project),
                    location=platform.region,
                ),
                opts=child,
            )
            self.name = pool.name
        else:
            self.name = self._cloud(resource_name, resource_id, body, child)
            self.cost_estimate = estimate_capacity(resource_name, platform.region, self.pools)
            from vertex_training.cost.report import capacity_estimate_message

            pulumi.log.info(capacity_estimate_message(self.cost_estimate), resource=self)
        self.register_outputs({"resource_id": resource_id, "name": self.name, "pools": self.pools})

    def _cloud(
        self,
        resource_name: str,
        resource_id: str,
        body: dict[str, Any],
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        from pulumi_gcp.vertex import ai_persistent_resource as gcp

        platform = self.args.platform
        assert platform is not None
        encryption = body.get("encryptionSpec")
        runtime = body.get("resourceRuntimeSpec")
        # pulumi-gcp takes the REST bodies as its snake_case input dicts.
        inputs: dict[str, Any] = {
            "name": resource_id,
            "project": platform.project,
            "location": platform.region,
            "display_name": body["displayName"],
            "labels": body["labels"],
            "network": body.get("network"),
            "reserved_ip_ranges": body.get("reservedIpRanges"),
            "encryption_spec": encryption and {"kms_key_name": encryption["kmsKeyName"]},
            "resource_runtime_spec": runtime
            and {"service_account_spec": {"enable_custom_service_account": True}},
            "resource_pools": [_gcp_pool(pool) for pool in self.pools],
        }
        resource = gcp.AiPersistentResource(
            f"{resource_name}-resource",
            # Its id is ours, so a replacement goes first; the jobs on it keep the id and
            # are not replaced with it.
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(delete_before_replace=True)
            ),
            **inputs,
        )
        return pulumi.Output.all(resource.project, resource.location).apply(
            lambda where: (
                f"projects/{where[0]}/locations/{where[1]}/persistentResources/{resource_id}"
            )
        )

    # ------------------------------------------------------------- JobCapacity

    def fit_findings(
        self, job_pools: Sequence[Any], path: str, parallel_trials: int = 1
    ) -> list[Finding]:
        """A job's pools on this resource (``JobCapacity``): the Args' ``fit_findings``."""
        return self.args.fit_findings(self.resource_id, job_pools, path, parallel_trials)

    def resource_options(self) -> pulumi.ResourceOptions:
        """A job on it is created after it (its id alone carries no dependency)."""
        return pulumi.ResourceOptions(depends_on=[self])


def _gcp_pool(pool: dict[str, Any]) -> dict[str, Any]:
    """A ``resourcePools[]`` REST body as pulumi-gcp's input (snake_case keys; int64
    counts stay text, as the API and the provider take them)."""
    out: dict[str, Any] = {}
    for key, value in pool.items():
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
        out[snake] = _gcp_pool(value) if isinstance(value, dict) else value
    return out
