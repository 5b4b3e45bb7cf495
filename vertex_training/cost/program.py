"""The stack total where the program reads its stack: ``vt.log_stack_cost(platform, jobs,
endpoints)``.

The jobs and the platform price themselves at construction (``cost_estimate``, from
``vertex_training.cost``); the total of a stack is summed here, by the program that
declared them, never by a job reaching up for its siblings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

import pulumi

from vertex_training.cost.budget import budget_verdict
from vertex_training.cost.estimate import (
    CapacityEstimate,
    EndpointEstimate,
    JobEstimate,
    StackEstimate,
    WorkbenchEstimate,
    stack_estimate,
)
from vertex_training.cost.report import stack_total_message

Estimate_co = TypeVar("Estimate_co", covariant=True)


# What the sum reads of the resources, named here: pricing sits below the resources it
# prices and imports none of them (``vt.TrainingPlatform``, ``vt.CustomJob``, ...).
class _Platform(Protocol):
    @property
    def environment(self) -> str: ...
    @property
    def cost_estimate(self) -> WorkbenchEstimate | None: ...


class _Priced(Protocol[Estimate_co]):
    @property
    def cost_estimate(self) -> Estimate_co: ...


def log_stack_cost(
    platform: _Platform,
    jobs: Iterable[_Priced[JobEstimate | None]],
    endpoints: Iterable[_Priced[EndpointEstimate]] = (),
    capacity: Iterable[_Priced[CapacityEstimate | None]] = (),
    *,
    budget: float | None = None,
) -> StackEstimate | None:
    """Log the stack's estimated cost (every job once, the Workbench instance for an
    hour; beside it each endpoint and each persistent resource per hour at its minimum
    replicas) as one ``pulumi preview`` diagnostic, with the budget when there is one: info
    when it fits (or no budget), a warning when the budget verdict is over or unknown (the
    policy pack refuses those in prod). Returns the ``StackEstimate`` (None on a local
    platform: nothing there costs)."""
    if platform.environment == "local":
        return None
    estimates = [job.cost_estimate for job in jobs if job.cost_estimate is not None]
    serving = [endpoint.cost_estimate for endpoint in endpoints]
    warm = [c.cost_estimate for c in capacity if c.cost_estimate is not None]
    total = stack_estimate(estimates, platform.cost_estimate, serving, warm)
    message = stack_total_message(total, budget)
    verdict = budget_verdict(total, budget)
    action = verdict.action(platform.environment) if verdict is not None else None
    resource = platform if isinstance(platform, pulumi.Resource) else None
    if action is None:
        pulumi.log.info(message, resource=resource)
    else:
        where = "the policy pack refuses it" if action == "refuse" else "refused in prod"
        pulumi.log.warn(f"{message} ({where})", resource=resource)
    return total


__all__ = ["log_stack_cost"]
