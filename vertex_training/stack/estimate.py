"""``python -m vertex_training.stack estimate --stack dev`` (``make estimate``): the stack's
estimate as a table, from its stack file, with no CLI and no cloud.

Prints one row per job (and the Workbench instance, each endpoint per hour) and ends in
``total: $LOW - $HIGH`` (one number when exact), then the budget verdict when the stack has
a budget: exit status 1 when the policy pack would refuse it (over or unknown, in prod).
``--duration NAME=SECONDS`` gives a job's expected duration (one trial for a tuning job);
without one its timeout bounds the estimate. The prices are ``vertex_training.cost``'s; the
bodies they price are the ones the stack's jobs and endpoints send.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from vertex_training.capacity.estimate import estimate_capacity
from vertex_training.cost.budget import budget_verdict
from vertex_training.cost.catalog import PriceCatalog
from vertex_training.cost.estimate import (
    DEFAULT_WORKBENCH_HOURS,
    StackEstimate,
    estimate_workbench,
    stack_estimate,
)
from vertex_training.cost.report import budget_line, estimate_table
from vertex_training.jobs.api import PlatformFacts, resolve
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.placeholders import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_IMAGE,
    PLACEHOLDER_SERVICE_ACCOUNT,
)
from vertex_training.serving.api import deployment_body
from vertex_training.serving.estimate import estimate_endpoint
from vertex_training.stack.config import StackConfig

__all__ = ["estimate_stack", "print_estimate"]


def estimate_stack(
    config: StackConfig,
    *,
    expected_durations: Mapping[str, float] | None = None,
    workbench_hours: float = DEFAULT_WORKBENCH_HOURS,
    catalog: PriceCatalog | None = None,
) -> StackEstimate:
    """Every job once (``expected_durations`` by job name override what the jobs declare)
    and the Workbench instance, if the stack has one, for ``workbench_hours``; each
    endpoint per hour at its minimum replicas (cloud stacks)."""
    durations = dict(expected_durations or {})
    unknown_names = set(durations) - {job.name for job in config.jobs.jobs}
    if unknown_names:
        raise ValueError(
            f"expected durations for jobs the stack does not declare: {sorted(unknown_names)}; "
            f"its jobs: {[job.name for job in config.jobs.jobs]}"
        )
    # The image, bucket and service account do not change a price: stand-ins.
    platform = PlatformFacts(
        environment="dev",
        region=config.region,
        image=PLACEHOLDER_IMAGE,
        bucket_url=PLACEHOLDER_BUCKET,
        training_service_account=PLACEHOLDER_SERVICE_ACCOUNT,
    )
    jobs = [
        estimate_job(
            job.args.KIND,
            resolve(job.args, job.name, platform).body,
            config.region,
            name=job.name,
            expected_duration_seconds=durations.get(job.name, job.args.expected_duration_seconds),
            catalog=catalog,
        )
        for job in config.jobs.jobs
    ]
    workbench = None
    if config.workbench.enabled and config.environment.is_cloud:
        workbench = estimate_workbench(
            machine_type=config.workbench.machine_type,
            gpu_type=config.workbench.gpu_type,
            gpu_count=config.workbench.gpu_count,
            region=config.region,  # its zone is one of the stack's region (a rule)
            hours=workbench_hours,
            catalog=catalog,
        )
    endpoints = []
    if config.environment.is_cloud:
        endpoints = [
            estimate_endpoint(
                endpoint.name,
                {k: deployment_body(k, d) for k, d in endpoint.args.deployments.items()},
                config.region,
                catalog=catalog,
            )
            for endpoint in (config.serving.endpoints if config.serving else ())
        ]
    capacity = []
    if config.environment.is_cloud and config.capacity is not None:
        capacity = [
            estimate_capacity(name, config.region, args.pool_bodies(), catalog=catalog)
            for name, args in config.capacity.resources.items()
        ]
    return stack_estimate(jobs, workbench, endpoints, capacity)


def print_estimate(config: StackConfig, args: argparse.Namespace) -> int:
    """The estimate of ``config`` as a table, then its budget verdict: 1 when the policy
    pack would refuse it, else 0. A wrong ``--duration`` job name is a ``ValueError``."""
    hours = DEFAULT_WORKBENCH_HOURS if args.workbench_hours is None else args.workbench_hours
    total = estimate_stack(config, expected_durations=dict(args.duration), workbench_hours=hours)
    print(f"stack {config.stack} ({config.region}), list prices in USD")
    if not config.environment.is_cloud:
        print("local stack: its jobs run on this machine for free; these are the prices of")
        print("the same jobs on Vertex AI.")
    print(estimate_table(total))
    verdict = budget_verdict(total, config.budget)
    if verdict is None:
        return 0
    environment = config.environment.value
    print(budget_line(verdict, environment))
    # The same verdict the policy pack enforces: what it refuses fails here too.
    return 1 if verdict.action(environment) == "refuse" else 0
