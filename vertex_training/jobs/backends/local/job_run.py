"""One local job as it runs: its directory, its state, cancellation, and its clusters.

The supervisor process holds one for its job; a tuning job's ``Tuner`` runs its trials
through it. ``cluster`` is the one place a job's replicas become a ``ClusterRun``: the
job's own replicas, or one trial's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import CustomJobSpec

from vertex_training.jobs.backends.local._store import JobDir, now_rfc3339
from vertex_training.jobs.backends.local.cluster import ClusterRun
from vertex_training.jobs.backends.local.environment import GpuAllocator, detect_gpus
from vertex_training.jobs.records import JobState


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
        self.gpus = GpuAllocator(detect_gpus())

    def check_cancel(self) -> None:
        if self.cancel_requested or self.job.cancel_file.exists():
            raise JobCancelledError

    def set_state(self, state: JobState, **changes: Any) -> None:
        with self.job.update() as current:
            if current.record.state is JobState.CANCELLING and state is not JobState.CANCELLED:
                # A cancel arrived between our polls: do not overwrite it.
                self.cancel_requested = True
                return
            current.record = replace(current.record, state=state, **changes)

    def finish(self, state: JobState, **changes: Any) -> None:
        with self.job.update() as current:
            current.record = replace(current.record, state=state, end_time=now_rfc3339(), **changes)

    def save_replicas(self, runs: list[ClusterRun]) -> None:
        with self.job.update() as current:
            current.replicas = [s for run in runs for s in run.statuses()]

    def cluster(
        self,
        spec: CustomJobSpec,
        run_dir: Path,
        *,
        trial_id: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> ClusterRun:
        """The replicas of ``spec`` (the job's, or one trial's), logging under ``run_dir``."""
        return ClusterRun(
            spec=spec,
            job_id=self.job_id,
            run_dir=run_dir,
            root=self.job.root,
            base_output_dir=self.output_dir,
            gpus=self.gpus,
            trial_id=trial_id,
            extra_args=extra_args,
        )


__all__ = ["JobCancelledError", "JobRun"]
