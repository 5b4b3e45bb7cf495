"""``JobRunner``: the local Vertex's jobs on this machine, one supervisor per job."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import CustomJob

from vertex_training._processes import process_alive
from vertex_training.jobs.backends.base import JobNotFoundError, JobRefusedError
from vertex_training.jobs.local_support import check_local_support
from vertex_training.jobs.protos import BodyParseError, parse_body
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners.cluster import (
    HOLD_FILE,
    signal_replica,
    start_process,
    stop_process_groups,
)
from vertex_training.local.runners.environment import (
    DECODED_CACHE,
    WORKERPOOLS,
    local_bucket_paths,
    replica_command,
    replica_pythonpath,
)
from vertex_training.local.runners.store import (
    CANCELLED_MESSAGE,
    LOCAL_PARENT,
    STATE_FILE,
    SUPERVISOR_LOG,
    JobDir,
    LocalJobState,
    ReplicaState,
    new_job_id,
    now_rfc3339,
)
from vertex_training.local.runners.warm import pool_dir, pool_exists

_log = logging.getLogger(__name__)

SUPERVISOR_MODULE = "vertex_training.local.runners.supervisor"


class JobRunner:
    """Runs the local Vertex's jobs as local processes, one supervisor per job, keeping
    state under ``root``.

    Layout: ``<root>/jobs/<id>/`` (state.json, body.json, supervisor.log,
    ``logs/<pool>-<i>.log``, ``trials/<trial id>/...``) and ``<root>/gcs/<bucket>/...``
    standing in for Cloud Storage when a spec names a ``gs://`` output directory. Any
    process given the same ``root`` sees the same jobs.
    """

    def __init__(self, root: str, *, parent: str = LOCAL_PARENT, seed: int | None = 0) -> None:
        self.root = Path(root).resolve()
        self.parent = parent
        """``projects/P/locations/L``: the project and region of its jobs' names."""
        self.jobs_dir = self.root / "jobs"
        self.seed = seed
        """Seed of the study samplers, so a local study is reproducible (None: random)."""

    def _job_dir(self, name: str) -> JobDir:
        job = JobDir(self.jobs_dir / name.rsplit("/", 1)[-1])
        if not job.exists() or job.read().name != name:
            raise JobNotFoundError(f"no local job {name} (under {self.jobs_dir})")
        return job

    def submit(self, kind: JobKind, body: Mapping[str, Any]) -> LocalJobState:
        """Start the job of ``body`` (its Vertex REST body) and return at once. Refused
        (``JobRefusedError``) before any process starts when the body is no valid message
        of its kind, needs what only Vertex has, or cannot start here (an image that is
        neither ours nor given a command, a persistent resource with no pool here)."""
        try:
            message = parse_body(kind, body)
        except BodyParseError as error:
            raise JobRefusedError(str(error)) from error
        check_local_support(message)
        # What runs: a CustomJob's jobSpec, a tuning job's trialJobSpec (each trial).
        spec = message.job_spec if isinstance(message, CustomJob) else message.trial_job_spec
        for pool in spec.worker_pool_specs:
            if pool.replica_count > 0:
                replica_command(pool, ())
        resource_id = spec.persistent_resource_id
        if resource_id and not pool_exists(self.root, resource_id):
            raise JobRefusedError(
                f"jobSpec.persistentResourceId: no persistent resource {resource_id!r} on this "
                f"machine (no pool under {pool_dir(self.root, resource_id)}); valid: the id of "
                "a persistent resource of this platform, created before the job"
            )
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        job_id = new_job_id()
        while True:
            try:
                # mkdir is atomic: two submitters never get the same directory.
                (self.jobs_dir / job_id).mkdir()
                break
            except FileExistsError:
                job_id = str(int(job_id) + 1)
        job = JobDir(self.jobs_dir / job_id)
        job.write_body(dict(body))
        base = spec.base_output_directory.output_uri_prefix
        state = LocalJobState(
            name=f"{self.parent}/{kind.value}/{job_id}",
            state=JobState.QUEUED,
            create_time=now_rfc3339(),
            # No base output directory: no AIP_* directories, as on Vertex.
            output_dir=self.local_path(base) if base else None,
            seed=self.seed,
        )
        # Held until the pid is recorded, so the supervisor's first update (which takes
        # the same lock) never overwrites it.
        with job.locked():
            job.write(state)
            self._start_supervisor(job, state)
        _log.info("submitted %s, supervisor pid %s", state.name, state.supervisor_pid)
        return self.get(state.name)

    def local_path(self, uri: str) -> str:
        """A ``gs://bucket/path`` URI (or its Cloud Storage FUSE path ``/gcs/bucket/path``)
        as a directory under ``<root>/gcs``; other paths resolved."""
        local = local_bucket_paths(uri, self.root / "gcs")
        return local if local != uri else str(Path(uri).expanduser().resolve())

    def _start_supervisor(self, job: JobDir, state: LocalJobState) -> None:
        """Start the job's supervisor and record it in ``state`` (the caller holds the lock)."""
        process, state.supervisor_start = start_process(
            [sys.executable, "-m", SUPERVISOR_MODULE, str(job.path)],
            job.path / SUPERVISOR_LOG,
            {**os.environ, "PYTHONPATH": replica_pythonpath(os.environ)},
        )
        # Reap it when it ends, so a long-lived caller keeps no zombie (a zombie would
        # also look alive to the liveness check).
        threading.Thread(target=process.wait, daemon=True).start()
        state.supervisor_pid = process.pid
        job.write(state)

    def get(self, name: str) -> LocalJobState:
        """The job as it is now; raises ``JobNotFoundError`` when there is none. One whose
        supervisor died (killed, or the machine went down) goes on where it stopped
        (``_take_over``): Vertex, too, runs its jobs to their end."""
        job = self._job_dir(name)
        state = job.read()
        if not state.state.is_terminal and not _supervisor_alive(state):
            state = self._take_over(job)
        return state

    def job_body(self, name: str) -> dict[str, Any]:
        """The job's body as it was submitted."""
        return self._job_dir(name).read_body()

    def records(self) -> list[LocalJobState]:
        """Every readable job of this root (one being submitted has no state yet)."""
        records = []
        for state_file in self.jobs_dir.glob(f"*/{STATE_FILE}"):
            try:
                records.append(JobDir(state_file.parent).read())
            except (OSError, ValueError) as exc:
                _log.warning("skipping unreadable local job %s: %s", state_file.parent, exc)
        return records

    def hold(self, held: bool) -> None:
        """Hold (``HOLD_FILE``) every replica that starts from now on, or release them: the
        replicas held go on."""
        hold = self.root / HOLD_FILE
        if held:
            hold.touch()
            return
        hold.unlink(missing_ok=True)
        for job in self.records():
            for replica in job.replicas:
                signal_replica(replica, signal.SIGCONT)

    def fail(self, job_id: str, replica: str) -> bool:
        """Kill the replica ``replica`` (``workerpool<i>-<index>``) of the job ``job_id``, as
        when its machine goes away: the job fails as Vertex's does. False: no such replica
        runs."""
        job = JobDir(self.jobs_dir / job_id)
        for status in job.read().replicas if job.exists() else ():
            if f"{WORKERPOOLS[status.pool]}-{status.index}" == replica:
                return signal_replica(status, signal.SIGKILL)
        return False

    def cancel(self, name: str) -> None:
        """Ask the job to stop; a job that has ended stays as it is."""
        job = self._job_dir(name)
        with job.update() as state:
            if state.state.is_terminal:
                return
            state.state = JobState.CANCELLING
            # The supervisor polls for this file between its polls of the replicas.
            job.cancel_file.touch()
        if not _supervisor_alive(state):
            self._take_over(job)

    def delete(self, name: str) -> None:
        """Remove the job (the JobService deletes only a job that has ended)."""
        shutil.rmtree(self._job_dir(name).path)
        # The decoded cache serves every job of this root (reruns, a study's trials): it
        # goes when the root's last job does, as at the end of the stack's ``destroy``.
        cache = self.root / DECODED_CACHE
        if cache.is_dir() and not self.records():
            _log.info(
                "removing the decoded-image cache %s (no job of %s is left)", cache, self.root
            )
            shutil.rmtree(cache, ignore_errors=True)

    def _take_over(self, job: JobDir) -> LocalJobState:
        """The supervisor is gone but the job has not ended: stop what it left behind, then
        end the job CANCELLED when a cancel was asked, else start a new supervisor: a
        tuning job resumes its study from its journal (finished trials count, interrupted
        ones run again; see ``study``), a CustomJob starts its replicas again (the trainer
        resumes from its checkpoints)."""
        with job.update() as state:
            if state.state.is_terminal or _supervisor_alive(state):
                return state  # settled, or taken over by another caller meanwhile
            # Only processes that are still the very ones the supervisor started: a pid
            # recycled since then belongs to someone else.
            stop_process_groups(
                [
                    r.pid
                    for r in state.replicas
                    if r.state is ReplicaState.RUNNING and process_alive(r.pid, r.start)
                ]
            )
            for replica in state.replicas:
                if replica.state is ReplicaState.RUNNING:
                    replica.state = ReplicaState.KILLED
            # The supervisor is its study journal's one writer: a lock on the journal is
            # one it held when it died, which a resumed supervisor would otherwise wait
            # out (Optuna's grace period). Optuna loads only when a supervisor died.
            from vertex_training.local.runners.study import (
                STUDY_JOURNAL,
                release_dead_writers_lock,
            )

            if release_dead_writers_lock(job.path / STUDY_JOURNAL):
                _log.info("released the journal lock the dead supervisor of %s held", job.path)
            if state.state is JobState.CANCELLING or job.cancel_file.exists():
                state.state, state.end_time = JobState.CANCELLED, now_rfc3339()
                state.error_message = CANCELLED_MESSAGE
            else:
                state.state = JobState.QUEUED
                self._start_supervisor(job, state)
                _log.info("resumed %s, supervisor pid %s", state.name, state.supervisor_pid)
        return state


def _supervisor_alive(state: LocalJobState) -> bool:
    if state.supervisor_pid is None:
        # Between writing the state and starting the supervisor (held under the lock).
        return True
    return process_alive(state.supervisor_pid, state.supervisor_start)


__all__ = ["JobRunner"]
