"""``LocalBackend``: the ``JobBackend`` protocol on this machine, one supervisor per job."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from vertex_training._project import project_root
from vertex_training.jobs.backends.base import JobNotFoundError, JobRefusedError
from vertex_training.jobs.backends.local._store import (
    SUPERVISOR_LOG,
    JobDir,
    LocalJobState,
    ReplicaStatus,
    decoded_cache_root,
    gcs_root,
    job_name,
    new_job_id,
    now_rfc3339,
    parse_job_name,
    process_alive,
    process_start_time,
)
from vertex_training.jobs.backends.local.capabilities import check_local_support, local_refusals
from vertex_training.jobs.backends.local.cluster import stop_process_groups
from vertex_training.jobs.backends.local.environment import (
    LocalSpecError,
    replica_command,
)
from vertex_training.jobs.backends.local.study import check_study
from vertex_training.jobs.records import JobKind, JobRecord, JobState
from vertex_training.jobs.rules.job import errors_of, job_findings
from vertex_training.jobs.view import JobView, TuningJobView, read_view

_log = logging.getLogger(__name__)

SUPERVISOR_MODULE = "vertex_training.jobs.backends.local.supervisor"
GCS_PREFIX = "gs://"
GCS_FUSE_PREFIX = "/gcs/"
_ACTIVE = (JobState.QUEUED, JobState.PENDING, JobState.RUNNING, JobState.CANCELLING)
SUPERVISOR_DIED = "the local supervisor died"
"""How the error message of a job whose supervisor died starts: such a job can resume."""


class JobNotResumableError(RuntimeError):
    """``resume`` was asked for a job whose supervisor did not die (it finished, failed on
    its own, was cancelled, or still runs)."""


class LocalBackend:
    """Runs Vertex job specs as local processes, keeping state under ``root``.

    Layout: ``<root>/jobs/<id>/`` (state.json, spec, supervisor.log, ``logs/<pool>-<i>.log``,
    ``trials/<trial id>/...``) and ``<root>/gcs/<bucket>/...`` standing in for Cloud Storage
    when a spec names a ``gs://`` output directory. Any process given the same ``root``
    sees the same jobs.
    """

    def __init__(self, root: str, *, seed: int | None = 0) -> None:
        self.root = Path(root).resolve()
        self.seed = seed
        """Seed of the study samplers, so a local study is reproducible (None: random)."""

    # -- paths -----------------------------------------------------------------------

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    @property
    def gcs_dir(self) -> Path:
        """``<root>/gcs``: the local stand-in for Cloud Storage, one directory per bucket."""
        return gcs_root(self.root)

    def local_path(self, uri: str) -> str:
        """A ``gs://bucket/path`` URI (or its Cloud Storage FUSE path ``/gcs/bucket/path``)
        as a directory under ``<root>/gcs``; other paths unchanged."""
        for prefix in (GCS_PREFIX, GCS_FUSE_PREFIX):
            if uri.startswith(prefix):
                return str(self.gcs_dir / uri[len(prefix) :])
        return str(Path(uri).expanduser().resolve())

    def _job_dir(self, name: str) -> JobDir:
        kind, job_id = parse_job_name(name)
        job = JobDir(self.jobs_dir / job_id)
        if not job.exists():
            raise JobNotFoundError(f"local job {name} does not exist (under {self.jobs_dir})")
        if job.read().record.kind is not kind:
            raise JobNotFoundError(f"local job {job_id} is not a {kind.value} job")
        return job

    # -- protocol --------------------------------------------------------------------

    def submit(self, kind: JobKind, body: Mapping[str, Any]) -> JobRecord:
        spec = check_runnable(kind, body)
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        job_id = new_job_id()
        while True:
            path = self.jobs_dir / job_id
            try:
                # mkdir is atomic: two submitters never get the same directory.
                path.mkdir()
                break
            except FileExistsError:
                job_id = str(int(job_id) + 1)
        job = JobDir(path)
        job.write_body(dict(body))
        if self.seed is not None:
            (path / "seed").write_text(str(self.seed))
        base = spec.trial_job.base_output_directory
        # No base output directory: no AIP_* directories, as on Vertex.
        output_dir = self.local_path(base) if base else None
        record = JobRecord(
            name=job_name(kind, job_id),
            kind=kind,
            display_name=spec.display_name or "",
            state=JobState.QUEUED,
            labels=tuple(sorted(spec.labels)),
            create_time=now_rfc3339(),
        )
        state = LocalJobState(record=record, output_dir=output_dir)
        # Held until the pid is recorded, so the supervisor's first update (which takes
        # the same lock) never overwrites it.
        with job.locked():
            job.write(state)
            process = self._start_supervisor(path)
            state.supervisor_pid = process.pid
            state.supervisor_start = process_start_time(process.pid)
            job.write(state)
        _log.info(
            "submitted %s (%s), supervisor pid %d", record.name, spec.display_name, process.pid
        )
        return self.get(record.name)

    def _start_supervisor(self, path: Path) -> subprocess.Popen[bytes]:
        with open(path / SUPERVISOR_LOG, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", SUPERVISOR_MODULE, str(path)],
                cwd=project_root(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # A new session: the job outlives this process (a Pulumi provider process
                # ends with its deployment) and a Ctrl-C here does not reach it.
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": _pythonpath()},
            )
        # Reap it when it ends, so a long-lived caller keeps no zombie (a zombie would
        # also look alive to the liveness check).
        threading.Thread(target=process.wait, daemon=True).start()
        return process

    def get(self, name: str) -> JobRecord:
        return self.details(name).record

    def details(self, name: str) -> LocalJobState:
        """The record plus what only the local backend knows (replica processes, plot)."""
        job = self._job_dir(name)
        state = job.read()
        if state.record.state in _ACTIVE and not self._supervisor_alive(state):
            state = self._reap_orphan(job)
        return state

    def find(self, kind: JobKind, labels: Mapping[str, str]) -> JobRecord | None:
        if not self.jobs_dir.is_dir():
            return None
        wanted = set(labels.items())
        best: JobRecord | None = None
        for path in self.jobs_dir.iterdir():
            job = JobDir(path)
            if not job.exists():
                continue
            try:
                record = job.read().record
            except (OSError, ValueError, KeyError) as exc:
                _log.warning("skipping unreadable local job %s: %s", path, exc)
                continue
            if record.kind is not kind or not wanted <= set(record.labels):
                continue
            if best is None or (record.create_time or "", record.job_id) > (
                best.create_time or "",
                best.job_id,
            ):
                best = record
        return self.get(best.name) if best else None

    def cancel(self, name: str) -> None:
        try:
            job = self._job_dir(name)
        except JobNotFoundError:
            return
        with job.update() as state:
            if state.record.state.is_terminal:
                return
            state.record = replace(state.record, state=JobState.CANCELLING)
            job.cancel_file.touch()
        if self._supervisor_alive(state) and state.supervisor_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.supervisor_pid, signal.SIGTERM)
        else:
            self._reap_orphan(job)

    def relabel(self, name: str, *, labels: Mapping[str, str], display_name: str) -> bool:
        job = self._job_dir(name)
        with job.update() as state:
            state.record = replace(
                state.record, display_name=display_name, labels=tuple(sorted(labels.items()))
            )
            job.write_body({**job.read_body(), "labels": dict(labels), "displayName": display_name})
        return True

    def delete(self, name: str) -> None:
        try:
            job = self._job_dir(name)
        except JobNotFoundError:
            return
        if not job.read().record.state.is_terminal:
            # Callers cancel and wait first; this is the safety net for those who do not.
            self.cancel(name)
            self.wait(name, timeout=60.0)
        shutil.rmtree(job.path, ignore_errors=False)
        self._remove_decoded_cache_after_the_last_job()

    def _remove_decoded_cache_after_the_last_job(self) -> None:
        """The decoded cache serves every job of this root (reruns, a study's trials): it
        goes when the root's last job does, as at the end of the stack's ``destroy``."""
        if any(JobDir(path).exists() for path in self.jobs_dir.iterdir()):
            return
        cache = decoded_cache_root(self.root)
        if cache.is_dir():
            _log.info(
                "removing the decoded-image cache %s (no job of %s is left)", cache, self.root
            )
            shutil.rmtree(cache, ignore_errors=True)

    # -- local extras ----------------------------------------------------------------

    def wait(self, name: str, timeout: float | None = None, poll_seconds: float = 0.1) -> JobRecord:
        """Block until the job is terminal (or ``timeout`` seconds pass); the last record."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            record = self.get(name)
            if record.state.is_terminal:
                return record
            if deadline is not None and time.monotonic() > deadline:
                return record
            time.sleep(poll_seconds)

    def resume(self, name: str) -> JobRecord:
        """Start a new supervisor for a job whose supervisor died (killed, or the machine
        went down): a tuning job resumes its study from its journal (finished trials
        count, interrupted ones run again; see ``tuner``), a CustomJob starts its replicas
        again (the trainer resumes from its checkpoints). A job whose supervisor is alive
        is left as it is."""
        job = self._job_dir(name)
        state = self.details(name)  # settles a dead supervisor's job first
        if state.record.state in _ACTIVE:
            return state.record
        if not self.died(state):
            raise JobNotResumableError(
                f"local job {name} is {state.record.state.value} "
                f"({state.record.error_message or 'no error'}); only a job whose supervisor "
                "died resumes"
            )
        with job.locked():
            state = job.read()
            state.record = replace(
                state.record, state=JobState.QUEUED, end_time=None, error_message=None
            )
            job.write(state)
            process = self._start_supervisor(job.path)
            state.supervisor_pid = process.pid
            state.supervisor_start = process_start_time(process.pid)
            job.write(state)
        _log.info("resumed %s, supervisor pid %d", name, process.pid)
        return self.get(name)

    def resume_interrupted(self, name: str) -> JobRecord | None:
        """``resume`` when the job's supervisor died; None when the job ended otherwise."""
        return self.resume(name) if self.died(self.details(name)) else None

    @staticmethod
    def died(state: LocalJobState) -> bool:
        """The job ended because its supervisor died, not because it failed or was
        cancelled: ``resume`` can take it up."""
        return state.record.state is JobState.FAILED and (
            state.record.error_message or ""
        ).startswith(SUPERVISOR_DIED)

    def find_interrupted(self, kind: JobKind, body: Mapping[str, Any]) -> JobRecord | None:
        """The newest job of exactly this body whose supervisor died, if any."""
        if not self.jobs_dir.is_dir():
            return None
        wanted = json.loads(json.dumps(body))
        found: list[LocalJobState] = []
        for path in self.jobs_dir.iterdir():
            job = JobDir(path)
            if not job.exists():
                continue
            try:
                if job.read().record.kind is not kind or job.read_body() != wanted:
                    continue
                state = self.details(job.read().record.name)
            except (OSError, ValueError, KeyError) as exc:
                _log.warning("skipping unreadable local job %s: %s", path, exc)
                continue
            if self.died(state):
                found.append(state)
        if not found:
            return None
        newest = max(found, key=lambda s: (s.record.create_time or "", int(s.record.job_id)))
        return newest.record

    def log_paths(self, name: str) -> list[str]:
        return sorted(str(p) for p in (self._job_dir(name).path).rglob("*.log"))

    # -- internals -------------------------------------------------------------------

    @staticmethod
    def _supervisor_alive(state: LocalJobState) -> bool:
        if state.supervisor_pid is None:
            # Between writing the state and starting the supervisor (held under the lock).
            return True
        return process_alive(state.supervisor_pid, state.supervisor_start)

    def _reap_orphan(self, job: JobDir) -> LocalJobState:
        """The supervisor is gone but the job is not terminal: stop what it left behind and
        settle the state (CANCELLED if a cancel was asked, else FAILED)."""
        with job.update() as state:
            if state.record.state.is_terminal:
                return state
            # Only processes that are still the very ones the supervisor started: a pid
            # recycled since then belongs to someone else.
            stop_process_groups(
                [
                    r.pid
                    for r in state.replicas
                    if r.pid is not None and r.state == "RUNNING" and process_alive(r.pid, r.start)
                ]
            )
            state.replicas = [_stopped(r) for r in state.replicas]
            cancelling = state.record.state is JobState.CANCELLING or job.cancel_file.exists()
            state.record = replace(
                state.record,
                state=JobState.CANCELLED if cancelling else JobState.FAILED,
                end_time=now_rfc3339(),
                error_message=(
                    "CANCELED: the job was cancelled"
                    if cancelling
                    else f"{SUPERVISOR_DIED}; see {job.path / SUPERVISOR_LOG}; "
                    "resume it with LocalBackend.resume or run it again"
                ),
            )
        return state


def _stopped(replica: ReplicaStatus) -> ReplicaStatus:
    if replica.state in ("RUNNING", "PENDING"):
        return replace(replica, state="KILLED")
    return replica


def _pythonpath() -> str:
    """The project (replicas import its ``trainer``), then wherever this library was
    imported from (a checkout on no path but the caller's), then the caller's own."""
    # The directory holding the vertex_training package (this file is
    # vertex_training/jobs/backends/local/backend.py), without importing the top level.
    library = Path(__file__).resolve().parents[4]
    existing = os.environ.get("PYTHONPATH")
    entries = [str(project_root()), str(library), *([existing] if existing else [])]
    return os.pathsep.join(dict.fromkeys(entries))


def check_runnable(kind: JobKind, body: Mapping[str, Any]) -> JobView:
    """Refuse, before any process starts, a body Vertex would refuse, one that needs what
    only Vertex has, or one this machine cannot start (an image that is neither ours nor
    given a command). Returns the body's view."""
    view, unreadable = read_view(kind, body)
    problems = [f"{f.path}: {f.message}" for f in unreadable]
    if view is not None and not problems:
        problems = [
            f"{f.path}: {f.message}"
            for f in errors_of(job_findings(view, region=None, remote=False))
        ]
        # Every reason at once: what Vertex would refuse, and what only Vertex has.
        refused = local_refusals(kind, body)
        if refused:
            problems.append("the local backend cannot run this job: " + "; ".join(refused))
    if problems or view is None:
        raise JobRefusedError("; ".join(problems))
    check_local_support(kind, body)
    for pool in view.trial_job.worker_pools:
        if pool is not None and pool.replica_count > 0:
            replica_command(pool, pool.container.args if pool.container else ())
    if isinstance(view, TuningJobView):
        check_study(view.study)
    return view


__all__ = [
    "SUPERVISOR_DIED",
    "JobNotResumableError",
    "LocalBackend",
    "LocalSpecError",
    "check_runnable",
]
