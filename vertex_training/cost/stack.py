"""A stack's jobs, Workbench and endpoints, estimated from its validated config."""

from __future__ import annotations

from collections.abc import Mapping

from vertex_training.cost.catalog import PriceCatalog
from vertex_training.cost.estimate import (
    DEFAULT_WORKBENCH_HOURS,
    StackEstimate,
    estimate_workbench,
    stack_estimate,
)
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.placeholders import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_IMAGE,
    PLACEHOLDER_SERVICE_ACCOUNT,
)
from vertex_training.serving.api import deployment_body
from vertex_training.serving.estimate import estimate_endpoint
from vertex_training.stack.config import StackConfig


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
    jobs = [
        estimate_job(
            job.job_kind,
            # The image, bucket and service account do not change a price: stand-ins.
            job.to_body(
                image=PLACEHOLDER_IMAGE,
                bucket_url=PLACEHOLDER_BUCKET,
                service_account=PLACEHOLDER_SERVICE_ACCOUNT,
                region=config.region,
            ),
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
    return stack_estimate(jobs, workbench, endpoints)


__all__ = ["estimate_stack"]
