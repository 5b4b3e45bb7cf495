"""Declares a stack's jobs on its platform: the program's side of ``vertex_training.jobs``.

Each declared job becomes one ``CustomJob`` or ``HyperparameterTuningJob`` whose spec is
built once the environment's handles are known: the trainer image by digest, the bucket
(output directory ``<bucket>/jobs/<name>``), the training service account and the stack
labels. Cloud stacks run jobs on Vertex in the stack's region; the local stack runs the
very same resources on the local backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pulumi

from vertex_training.jobs.backends import BackendKind, BackendSettings
from vertex_training.jobs.declarations import JobDeclaration
from vertex_training.jobs.resources import CustomJob, HyperparameterTuningJob, job_resource

if TYPE_CHECKING:
    from vertex_training.platform.build import Platform

JobResource = CustomJob | HyperparameterTuningJob


def backend_settings(platform: Platform) -> BackendSettings:
    if platform.is_local:
        assert platform.local_root is not None
        return BackendSettings(BackendKind.LOCAL, local_root=str(platform.local_root))
    return BackendSettings(BackendKind.VERTEX, project=platform.project, location=platform.region)


class TrainingJobs(pulumi.ComponentResource):
    """The stack's declared jobs: one child resource ``<name>-<job name>`` per job."""

    jobs: dict[str, JobResource]

    def __init__(
        self,
        name: str,
        platform: Platform,
        declarations: tuple[JobDeclaration, ...],
        opts: pulumi.ResourceOptions | None = None,
        *,
        strict_hardware: bool = False,
    ) -> None:
        super().__init__("vertex-training:jobs:TrainingJobs", name, None, opts)
        backend = backend_settings(platform)
        # Jobs wait for the environment (APIs, bucket grants, image) as well as nesting here.
        child_opts = pulumi.ResourceOptions.merge(
            platform.resource_options(), pulumi.ResourceOptions(parent=self)
        )
        account: pulumi.Input[str | None] = platform.training_service_account
        self.jobs = {}
        for job in declarations:

            def build(args: list[Any], job: JobDeclaration = job) -> dict[str, Any]:
                image, bucket_url, service_account = args
                return job.to_body(
                    image=image,
                    bucket_url=bucket_url,
                    service_account=service_account,
                    labels={**platform.labels, "job": job.name},
                )

            spec = pulumi.Output.all(platform.image_reference, platform.bucket_url, account).apply(
                build
            )
            self.jobs[job.name] = job_resource(
                f"{name}-{job.name}",
                spec,
                job.job_kind,
                backend,
                wait=job.wait,
                wait_timeout_seconds=job.wait_timeout_seconds,
                poll_interval_seconds=job.poll_interval_seconds,
                strict_hardware=strict_hardware,
                opts=child_opts,
            )
        self.register_outputs({name: job.job_name for name, job in self.jobs.items()})


def declare_jobs(
    platform: Platform, declarations: tuple[JobDeclaration, ...], *, strict_hardware: bool = False
) -> dict[str, JobResource]:
    """Register the declared jobs (none: no component either) and return them by name."""
    if not declarations:
        return {}
    return TrainingJobs(
        "jobs",
        platform,
        declarations,
        opts=platform.resource_options(),
        strict_hardware=strict_hardware,
    ).jobs


def job_outputs(resources: Mapping[str, JobResource]) -> dict[str, dict[str, Any]]:
    """What a user wants to see of each job after ``pulumi up`` (the ``jobs`` output)."""
    outputs: dict[str, dict[str, Any]] = {}
    for name, job in resources.items():
        entry: dict[str, Any] = {
            "name": job.job_name,
            "state": job.state,
            "consoleUrl": job.console_url,
            "modelDir": job.model_dir,
            "endTime": job.end_time,
        }
        if isinstance(job, HyperparameterTuningJob):
            entry["bestTrial"] = job.best_trial
            entry["trials"] = job.trials
        outputs[name] = entry
    return outputs


__all__ = ["TrainingJobs", "backend_settings", "declare_jobs", "job_outputs"]
