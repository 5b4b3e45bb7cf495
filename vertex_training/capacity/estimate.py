"""A persistent resource's estimated cost per hour, from its ``resourcePools`` bodies (the
same bodies the resource sends; the policy pack reads them from its properties).

Each pool costs ``minimum replicas x (machine + acceleratorCount x accelerator)`` per hour
at the price catalog's on-demand ``training`` prices while the resource exists, whether
or not a job runs on it: its ``autoscalingSpec.minReplicaCount``, else its
``replicaCount``. A price the catalog lacks is named ("unknown price"), never $0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vertex_training.cost.catalog import PriceCatalog, Pricing, price_catalog
from vertex_training.cost.estimate import CapacityEstimate, pool_cost

__all__ = ["estimate_capacity", "minimum_replicas"]


def _count(value: Any) -> int | None:
    """An int64 count as the API writes it (``"2"``) or a number (2, 2.0 from the engine)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    if isinstance(value, float) and value.is_integer():  # finite: the engine's numbers
        return int(value)
    return None


def minimum_replicas(pool: Mapping[str, Any]) -> int | None:
    """Replicas a pool keeps while the resource exists (None: not a known count)."""
    scaling = pool.get("autoscalingSpec")
    if isinstance(scaling, Mapping) and "minReplicaCount" in scaling:
        return _count(scaling["minReplicaCount"])
    return _count(pool.get("replicaCount", 1))


def estimate_capacity(
    name: str,
    region: str,
    pools: Sequence[Mapping[str, Any]],
    *,
    catalog: PriceCatalog | None = None,
) -> CapacityEstimate:
    """``pools``: the resource's ``resourcePools`` bodies; a pool whose machine or count
    is not known yet is left out."""
    prices = catalog or price_catalog()
    priced = []
    for index, pool in enumerate(pools):
        machine = pool.get("machineSpec") or {}
        machine_type = machine.get("machineType")
        replicas = minimum_replicas(pool)
        accelerator = machine.get("acceleratorType")
        count = _count(machine.get("acceleratorCount", 0))
        if not isinstance(machine_type, str) or replicas is None or count is None:
            continue
        priced.append(
            pool_cost(
                prices,
                "training",
                region,
                Pricing.ON_DEMAND,
                path=f"resourcePools[{index}]",
                role=str(pool.get("id") or f"pools[{index}]"),
                replicas=replicas,
                machine_type=machine_type,
                accelerator_type=accelerator if isinstance(accelerator, str) else None,
                accelerator_count=count,
            )
        )
    return CapacityEstimate(name=name, region=region, pools=tuple(priced))
