"""A job's estimated cost from its Vertex REST body (the same body the job resource sends).

The body is read through the jobs' read-only view; prices come from
``vertex_training.cost``. Hours are the job's expected duration when the caller knows
it (``expected_duration_seconds``: one run of a CustomJob, one *trial* of a tuning job),
else ``scheduling.timeout``, else Vertex's default timeout of 7 days; the last two are
upper bounds and say so. ``scheduling.strategy: SPOT`` is priced at Spot prices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vertex_training.cost.catalog import PriceCatalog, Pricing, price_catalog
from vertex_training.cost.estimate import (
    VERTEX_DEFAULT_TIMEOUT_SECONDS,
    EstimateError,
    JobEstimate,
    pool_cost,
)
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.view import (
    CustomJobSpec,
    HyperparameterTuningJobView,
    JobView,
    PoolRole,
    SchedulingStrategy,
    read_view,
)


def _pricing_of(spec: CustomJobSpec) -> tuple[Pricing, tuple[str, ...]]:
    strategy = spec.scheduling.strategy
    if strategy in (SchedulingStrategy.FLEX_START, SchedulingStrategy.LOW_COST):
        # Billed at a discount the catalog does not hold.
        return Pricing.ON_DEMAND, (f"strategy {strategy.value} priced on-demand (an upper bound)",)
    return Pricing.SPOT if strategy is SchedulingStrategy.SPOT else Pricing.ON_DEMAND, ()


def _hours(spec: CustomJobSpec, expected_duration_seconds: float | None) -> tuple[float, str, bool]:
    if expected_duration_seconds is not None:
        if not (
            isinstance(expected_duration_seconds, int | float)
            and math.isfinite(expected_duration_seconds)
            and expected_duration_seconds > 0
        ):
            raise EstimateError(
                f"expected duration must be a number of seconds > 0, got "
                f"{expected_duration_seconds!r}"
            )
        return expected_duration_seconds / 3600, "expected duration", False
    timeout = spec.scheduling.timeout
    if timeout is not None and timeout > 0:
        return timeout / 3600, "scheduling.timeout", True
    return VERTEX_DEFAULT_TIMEOUT_SECONDS / 3600, "Vertex's default timeout (7 days)", True


def estimate_job(
    kind: JobKind | str,
    body: Mapping[str, Any],
    region: str,
    *,
    name: str | None = None,
    expected_duration_seconds: float | None = None,
    catalog: PriceCatalog | None = None,
) -> JobEstimate:
    """The cost of one job from its REST body, priced in ``region``.

    ``kind``: ``JobKind`` or its value (``customJobs`` / ``hyperparameterTuningJobs``).
    ``expected_duration_seconds``: how long one run (a CustomJob) or one trial (a tuning
    job) is expected to take; without it the job's timeout gives an upper bound.
    Raises ``EstimateError`` for a body the view cannot read or a bad duration.
    """
    view, problems = read_view(JobKind(kind), body)
    if view is None:
        listed = "; ".join(str(p) for p in problems)
        raise EstimateError(f"cannot estimate an unreadable job body: {listed}")
    return estimate_view(
        view,
        region,
        name=name,
        expected_duration_seconds=expected_duration_seconds,
        catalog=catalog,
    )


def estimate_view(
    view: JobView,
    region: str,
    *,
    name: str | None = None,
    expected_duration_seconds: float | None = None,
    catalog: PriceCatalog | None = None,
) -> JobEstimate:
    """The cost of one job from its view (``estimate_job``): what a resolved job reads."""
    catalog = catalog or price_catalog()
    spec = view.trial_job
    pricing, notes = _pricing_of(spec)
    # Hours, their basis and whether they are an upper bound: JobEstimate's fields after
    # the pools (``_hours``).
    hours = _hours(spec, expected_duration_seconds)
    pools = []
    for index, pool in enumerate(spec.worker_pool_specs):
        if pool is None:
            continue
        role = PoolRole(index).name.lower() if index < len(PoolRole) else f"pool{index}"
        machine = pool.machine_spec
        pools.append(
            pool_cost(
                catalog,
                "training",
                region,
                pricing,
                path=f"{view.trial_job_path}.workerPoolSpecs[{index}]",
                role=role,
                replicas=max(pool.replica_count, 0),
                machine_type=machine.machine_type or "<no machineType>",
                accelerator_type=machine.accelerator_type,
                accelerator_count=machine.accelerator_count,
            )
        )
    trials, parallel = 1, 1
    if isinstance(view, HyperparameterTuningJobView):
        trials = max(view.max_trial_count, 0)
        parallel = max(view.parallel_trial_count, 1)
        if view.study_spec.early_stopping is not None:
            notes += ("early stopping may end trials sooner",)
    return JobEstimate(
        name or view.display_name or "",
        region,
        pricing,
        tuple(pools),
        *hours,
        trials=trials,
        parallel_trials=parallel,
        notes=notes,
        persistent_resource=spec.persistent_resource_id,
    )


__all__ = ["estimate_job", "estimate_view"]
