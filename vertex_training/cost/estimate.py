"""What machines, accelerators and a Workbench instance cost, and a stack's sum of it.

Pure functions and values over the price catalog, below the jobs and the platform that
use them (``vertex_training.jobs.estimate`` prices a job's body with ``pool_cost``):

- a worker pool costs ``replicas x (machine + accelerator_count x accelerator)`` per hour;
- a CustomJob costs the sum over its pools, times its hours; a HyperparameterTuningJob
  ``maxTrialCount x`` one trial's cost, its wall time ``ceil(maxTrialCount /
  parallelTrialCount)`` trials one after another;
- hours are the job's expected duration when the caller knows it, else its timeout (an
  upper bound, and the estimate says so);
- a Workbench instance costs its machine and GPUs per hour while it is up (the boot disk,
  a few dollars a month, is left out and the estimate says so);
- a persistent resource costs, per hour while it exists, the sum over its pools of
  ``minimum replicas x (machine + accelerators)`` at training prices: hourly too, beside
  the total (the jobs on it add nothing per run);
- an endpoint costs, per hour while it serves, the sum over its deployed models of
  ``minReplicaCount x (machine + accelerators)`` at prediction prices: hourly, so it is
  shown beside the stack's total, not added to it (nor to the budget, a one-off cap).

A machine, accelerator or region without a price in the catalog is never counted as zero:
the estimate names it (``unknown price: NVIDIA_H200_141GB in us-central1 (on-demand)``)
and is incomplete. Stdlib only: no TensorFlow, no ``aiplatform_v1``, no Pulumi.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vertex_training.cost.catalog import (
    ItemKind,
    PriceCatalog,
    PriceTarget,
    Pricing,
    price_catalog,
)

VERTEX_DEFAULT_TIMEOUT_SECONDS = 7 * 24 * 3600
"""``Scheduling.timeout`` when a body sets none (the API reference: 7 days)."""

DEFAULT_WORKBENCH_HOURS = 1.0
"""Hours of Workbench a stack estimate counts unless told: one session, which the idle
shutdown ends an hour after the last use (the codelab setting)."""


class EstimateError(ValueError):
    """The input cannot be estimated (an unreadable body, a duration that is not > 0)."""


@dataclass(frozen=True)
class UnknownPrice:
    """A priced item the catalog has no price for: named, never counted as zero."""

    item: str
    region: str
    pricing: Pricing

    def __str__(self) -> str:
        kind = "Spot" if self.pricing is Pricing.SPOT else "on-demand"
        return f"unknown price: {self.item} in {self.region} ({kind})"


@dataclass(frozen=True)
class PoolCost:
    """One worker pool: ``replicas x (machine + accelerators)`` per hour."""

    path: str
    """API path of the pool, e.g. ``jobSpec.workerPoolSpecs[1]``."""
    role: str
    replicas: int
    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    usd_per_hour: float
    """All replicas of the pool, known prices only (see ``unknown``)."""
    unknown: tuple[UnknownPrice, ...] = ()

    @property
    def gpus(self) -> int:
        return self.replicas * self.accelerator_count if self.accelerator_type else 0


class _Pools:
    """Pools that run at once, per hour: their sum at known prices; the unknown prices are
    named (``unknown``), never counted as zero."""

    pools: tuple[PoolCost, ...]

    @property
    def usd_per_hour(self) -> float:
        return sum(pool.usd_per_hour for pool in self.pools)

    @property
    def unknown(self) -> tuple[UnknownPrice, ...]:
        return tuple(dict.fromkeys(u for pool in self.pools for u in pool.unknown))


@dataclass(frozen=True)
class JobEstimate(_Pools):
    """The cost of one job; ``usd`` is exact when hours are the expected duration, an
    upper bound when they come from a timeout."""

    name: str
    region: str
    pricing: Pricing
    pools: tuple[PoolCost, ...]
    hours: float
    """Hours of one run (a CustomJob) or of one trial (a tuning job)."""
    hours_basis: str
    """``expected duration``, ``scheduling.timeout`` or ``Vertex's default timeout``."""
    upper_bound: bool
    trials: int = 1
    parallel_trials: int = 1
    notes: tuple[str, ...] = ()
    persistent_resource: str | None = None
    """``persistentResourceId``: the job runs on that resource's machines, which are billed
    by the hour while the resource exists, whether or not a job runs; the job adds nothing."""

    @property
    def usd(self) -> float:
        if self.persistent_resource:
            return 0.0
        return self.trials * self.usd_per_hour * self.hours

    @property
    def persistent_resource_note(self) -> str:
        """What a job on a persistent resource costs, in words ("" when it has none)."""
        if not self.persistent_resource:
            return ""
        rate = f"${self.usd_per_hour:,.2f}/h"
        return (
            f"runs on persistent resource {self.persistent_resource}: its machines are billed "
            "by the hour while the resource exists, whether or not this job runs, so the job "
            f"adds $0; the machines it uses cost at least {rate} of that resource"
        )

    @property
    def usd_low(self) -> float:
        # A job bounded only by its timeout may end at any time before it.
        return 0.0 if self.upper_bound else self.usd

    @property
    def usd_high(self) -> float:
        return self.usd

    @property
    def wall_hours(self) -> float:
        return math.ceil(self.trials / max(self.parallel_trials, 1)) * self.hours

    @property
    def unknown(self) -> tuple[UnknownPrice, ...]:
        if self.persistent_resource:
            return ()  # the resource is billed, not the job: nothing of the job is unknown
        return super().unknown

    @property
    def gpus_at_once(self) -> int:
        """GPUs the job holds at the same time (parallel trials of a study)."""
        per_run = sum(pool.gpus for pool in self.pools)
        return per_run * min(max(self.parallel_trials, 1), self.trials)


@dataclass(frozen=True)
class WorkbenchEstimate(_Pools):
    """A Workbench instance for ``hours`` hours of uptime: one pool, its VM."""

    pools: tuple[PoolCost, ...]
    region: str
    hours: float
    notes: tuple[str, ...] = ()
    name: str = "workbench"

    @property
    def usd(self) -> float:
        return self.usd_per_hour * self.hours

    @property
    def usd_low(self) -> float:
        return self.usd

    @property
    def usd_high(self) -> float:
        return self.usd


CostLine = JobEstimate | WorkbenchEstimate


@dataclass(frozen=True)
class EndpointEstimate(_Pools):
    """An endpoint per hour: each deployed model at its minimum replicas (autoscaling can
    only add to it)."""

    name: str
    region: str
    pools: tuple[PoolCost, ...]
    """One per deployed model: ``role`` is the deployment's name, ``replicas`` its
    ``minReplicaCount``."""


@dataclass(frozen=True)
class CapacityEstimate(_Pools):
    """A persistent resource per hour while it exists: each pool at its minimum replicas,
    whether or not a job runs on it (the jobs on it add nothing)."""

    name: str
    region: str
    pools: tuple[PoolCost, ...]


@dataclass(frozen=True)
class StackEstimate:
    """Every line of a stack: its jobs (one run each) and its Workbench uptime; beside
    them, its endpoints per hour."""

    lines: tuple[CostLine, ...]
    endpoints: tuple[EndpointEstimate, ...] = ()
    """Hourly: not in ``usd_low``/``usd_high`` nor in ``unknown`` (see ``serving``)."""
    capacity: tuple[CapacityEstimate, ...] = ()
    """Persistent resources, hourly while they exist: beside the total, like ``endpoints``."""

    @property
    def usd_low(self) -> float:
        return sum(line.usd_low for line in self.lines)

    @property
    def usd_high(self) -> float:
        return sum(line.usd_high for line in self.lines)

    @property
    def exact(self) -> bool:
        return math.isclose(self.usd_low, self.usd_high) and not self.unknown

    @property
    def unknown(self) -> tuple[UnknownPrice, ...]:
        return tuple(dict.fromkeys(u for line in self.lines for u in line.unknown))

    @property
    def serving(self) -> EndpointEstimate:
        """Every endpoint at its minimum replicas as one, per hour."""
        return EndpointEstimate(
            "serving", "", tuple(pool for e in self.endpoints for pool in e.pools)
        )

    @property
    def jobs(self) -> tuple[JobEstimate, ...]:
        return tuple(line for line in self.lines if isinstance(line, JobEstimate))


def pool_cost(
    catalog: PriceCatalog,
    target: PriceTarget,
    region: str,
    pricing: Pricing,
    *,
    path: str,
    role: str,
    replicas: int,
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int,
) -> PoolCost:
    unknown: list[UnknownPrice] = []

    def price(kind: ItemKind, item: str) -> float:
        """The catalog's price, or 0 with ``item`` named in ``unknown``."""
        row = catalog.row(target, kind, region, item)
        found = row.price(pricing) if row is not None else None
        if found is None:
            unknown.append(UnknownPrice(item, region, pricing))
        return found or 0.0

    machine = price("machines", machine_type)
    accelerators = 0.0
    if accelerator_type and accelerator_count:
        accelerators = price("accelerators", accelerator_type) * accelerator_count
    return PoolCost(
        path=path,
        role=role,
        replicas=replicas,
        machine_type=machine_type,
        accelerator_type=accelerator_type if accelerator_count else None,
        accelerator_count=accelerator_count if accelerator_type else 0,
        usd_per_hour=replicas * (machine + accelerators),
        unknown=tuple(unknown),
    )


def estimate_workbench(
    *,
    machine_type: str,
    gpu_type: str | None,
    gpu_count: int,
    region: str,
    hours: float = DEFAULT_WORKBENCH_HOURS,
    catalog: PriceCatalog | None = None,
) -> WorkbenchEstimate:
    """A Workbench instance up for ``hours``: its VM's machine and GPUs."""
    if not (math.isfinite(hours) and hours >= 0):
        raise EstimateError(f"Workbench hours must be a number >= 0, got {hours!r}")
    pool = pool_cost(
        catalog or price_catalog(),
        "workbench",
        region,
        Pricing.ON_DEMAND,
        path="workbench",
        role="workbench",
        replicas=1,
        machine_type=machine_type,
        accelerator_type=gpu_type,
        accelerator_count=gpu_count,
    )
    return WorkbenchEstimate(
        pools=(pool,),
        region=region,
        hours=hours,
        notes=("boot disk not counted (small: ~$0.10 per GB-month)",),
    )


def stack_estimate(
    jobs: Sequence[JobEstimate],
    workbench: WorkbenchEstimate | None = None,
    endpoints: Sequence[EndpointEstimate] = (),
    capacity: Sequence[CapacityEstimate] = (),
) -> StackEstimate:
    """The stack's lines: every job once, then the Workbench instance; its endpoints and
    persistent resources (hourly)."""
    return StackEstimate(
        (*jobs, *((workbench,) if workbench is not None else ())),
        tuple(endpoints),
        tuple(capacity),
    )


__all__ = [
    "DEFAULT_WORKBENCH_HOURS",
    "VERTEX_DEFAULT_TIMEOUT_SECONDS",
    "CapacityEstimate",
    "CostLine",
    "EndpointEstimate",
    "EstimateError",
    "JobEstimate",
    "PoolCost",
    "StackEstimate",
    "UnknownPrice",
    "WorkbenchEstimate",
    "estimate_workbench",
    "pool_cost",
    "stack_estimate",
]
