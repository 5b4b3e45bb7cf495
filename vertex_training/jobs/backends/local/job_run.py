"""One local job as it runs: its directory, its state, cancellation, and its clusters.

The supervisor process holds one for its job; a tuning job's ``Tuner`` runs its trials
through it. ``cluster`` is the one place a job's replicas become a ``ClusterRun``: the
job's own replicas, or one trial's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from vertex_training.jobs.backends.local._store import (
    JobDir,
    decoded_cache_root,
    gcs_root,
    now_rfc3339,
    root_of,
)
from vertex_training.jobs.backends.local.cluster import ClusterRun
from vertex_training.jobs.backends.local.environment import GpuAllocator, detect_gpus
from vertex_training.jobs.records import JobState
from vertex_training.jobs.view import CustomJobSpec


class JobCancelledError(Exception):
    """``cancel`` asked (SIGTERM or the cancel file): the job ends CANCELLED."""


class JobRun:
    """The job in ``job_dir``: the only writer of its state while it runs."""

    def __init__(self, job_dir: Path) -> None:
        self.job = JobDir(job_dir)
        self.cancel_requested = False
        state = self.job.read()
        self.job_id = state.record.job_id
        self.output_dir = state.output_dir
        """The job's base output directory as a local path; None when the body has none."""
        self.gcs_root = gcs_root(root_of(self.job.path))
        self.decoded_cache = decoded_cache_root(root_of(self.job.path))
        self.project, self.region = _project_and_region(state.record.name)
        self.gpus = GpuAllocator(detect_gpus())

    def check_cancel(self) -> None:
        if self.cancel_requested or self.job.cancel_file.exists():
            raise JobCancelledError

    def set_state(self, state: JobState, **changes: object) -> None:
        with self.job.update() as current:
            if current.record.state is JobState.CANCELLING and state is not JobState.CANCELLED:
                # A cancel arrived between our polls: do not overwrite it.
                self.cancel_requested = True
                return
            current.record = replace(current.record, state=state, **changes)  # type: ignore[arg-type]

    def finish(self, state: JobState, **changes: object) -> None:
        with self.job.update() as current:
            current.record = replace(
                current.record,
                state=state,
                end_time=now_rfc3339(),
                **changes,  # type: ignore[arg-type]
            )

    def save_replicas(self, runs: list[ClusterRun]) -> None:
        statuses = [s for run in runs for s in run.statuses()]
        with self.job.update() as current:
            current.replicas = statuses

    def cluster(
        self,
        spec: CustomJobSpec,
        job_body: dict[str, Any],
        run_dir: Path,
        *,
        trial_id: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> ClusterRun:
        """The replicas of ``spec`` (the job's, or one trial's), logging under ``run_dir``."""
        return ClusterRun(
            spec=spec,
            job_body=job_body,
            job_id=self.job_id,
            run_dir=run_dir,
            base_output_dir=self.output_dir,
            gpus=self.gpus,
            trial_id=trial_id,
            extra_args=extra_args,
            gcs_root=self.gcs_root,
            decoded_cache=self.decoded_cache,
            project=self.project,
            region=self.region,
        )


def _project_and_region(name: str) -> tuple[str, str]:
    """``projects/P/locations/L/...`` -> (P, L), what Vertex puts in CLOUD_ML_PROJECT_ID
    and CLOUD_ML_REGION."""
    parts = name.split("/")
    if len(parts) >= 4 and parts[0] == "projects" and parts[2] == "locations":
        return parts[1], parts[3]
    return "local", "local"


__all__ = ["JobCancelledError", "JobRun"]
