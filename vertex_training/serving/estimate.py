"""An endpoint's estimated cost per hour, from its ``DeployedModel`` bodies (the same bodies
the endpoint resource deploys).

Each deployed model costs ``minReplicaCount x (machine + acceleratorCount x accelerator)``
per hour at the price catalog's ``prediction`` prices: the replicas it keeps while it is
deployed, served or not (autoscaling can only add to it). A machine that comes with its
GPUs (a2, a3, g2) is priced with them. ``dedicatedResources.spot`` is priced at Spot
prices. A price the catalog lacks is named ("unknown price"), never counted as $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_training.cost.catalog import PriceCatalog, Pricing, price_catalog
from vertex_training.cost.estimate import EndpointEstimate, pool_cost
from vertex_training.serving.rules import prediction_catalog


def _number(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def estimate_endpoint(
    name: str,
    deployments: Mapping[str, Mapping[str, Any]],
    region: str,
    *,
    catalog: PriceCatalog | None = None,
) -> EndpointEstimate:
    """``deployments``: each deployment's ``DeployedModel`` body, by deployment name."""
    prices = catalog or price_catalog()
    built_in = prediction_catalog().gpu_machines
    pools = []
    for key, body in sorted(deployments.items()):
        resources = body.get("dedicatedResources") or {}
        machine = resources.get("machineSpec") or {}
        machine_type = str(machine.get("machineType", ""))
        accelerator = machine.get("acceleratorType")
        count = _number(machine.get("acceleratorCount"), 1 if accelerator else 0)
        if machine_type in built_in and not accelerator:
            accelerator, count = built_in[machine_type]
        pools.append(
            pool_cost(
                prices,
                "prediction",
                region,
                Pricing.SPOT if resources.get("spot") is True else Pricing.ON_DEMAND,
                path=f"deployments.{key}",
                role=key,
                replicas=_number(resources.get("minReplicaCount"), 1),
                machine_type=machine_type,
                accelerator_type=str(accelerator) if accelerator else None,
                accelerator_count=count,
            )
        )
    return EndpointEstimate(name=name, region=region, pools=tuple(pools))


__all__ = ["estimate_endpoint"]
