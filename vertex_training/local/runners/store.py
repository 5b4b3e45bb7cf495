"""The local job runner's on-disk store: one directory per job under ``<root>/jobs``.

Every process that touches a job (the local Vertex, the detached supervisor, a restarted
local Vertex that reads or cancels) meets only here, so the state
is plain JSON written atomically (write a temporary file, then rename) and every
read-modify-write holds an ``flock`` on the job's lock file.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from vertex_training._processes import atomic_write_text, file_lock
from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.records import JobKind, JobState

LOCAL_PARENT = "projects/local/locations/local"
"""The parent of a runner given none (the local Vertex gives its own project and region)."""
SUPERVISOR_LOG = "supervisor.log"
STATE_FILE = "state.json"
CANCELLED_MESSAGE = "CANCELED: the job was cancelled"
"""A cancelled job's error message, whoever settles it (its supervisor or the runner)."""


def rfc3339(moment: datetime) -> str:
    """``moment`` in UTC as the store writes times (a naive one is local time)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_rfc3339() -> str:
    return rfc3339(datetime.now(UTC))


class ReplicaState(enum.StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    KILLED = "KILLED"
    """Stopped by us: cancelled, or the job ended without it."""


@dataclass
class ReplicaStatus:
    """One replica process as the supervisor last saw it."""

    pool: int
    index: int
    state: ReplicaState
    pid: int
    exit_code: int | None = None
    log: str = ""
    start: str | None = None
    """``/proc`` start time of ``pid``: only that very process is ever signalled later."""


@dataclass
class LocalJobState:
    """A job as the runner and its supervisor keep it, persisted as ``state.json``: what
    the JobService adds to the body as created to answer with the job."""

    name: str
    state: JobState
    create_time: str
    """RFC 3339 timestamps."""
    start_time: str | None = None
    end_time: str | None = None
    error_message: str | None = None
    trials: list[dict[str, Any]] = field(default_factory=list)
    """A tuning job's trials as Vertex's ``Trial`` messages (JSON)."""
    supervisor_pid: int | None = None
    supervisor_start: str | None = None
    """``/proc`` start time of the supervisor, so a recycled pid is not mistaken for it."""
    replicas: list[ReplicaStatus] = field(default_factory=list)
    output_dir: str | None = None
    """The body's base output directory as a local path; None when it has none."""
    seed: int | None = None
    """The seed of a study's sampler (None: random)."""

    @property
    def kind(self) -> JobKind:
        return JobKind(self.name.split("/")[-2])


_STATE = TypeAdapter(LocalJobState)


class JobDir:
    """One job directory: ``state.json``, ``body.json`` (the job exactly as submitted,
    what the supervisor runs), its lock, logs and trials."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state_file = path / STATE_FILE
        self.cancel_file = path / "cancel-requested"
        self.body_file = path / "body.json"

    @property
    def root(self) -> Path:
        """The runner's root this job belongs to (``<root>/jobs/<id>``)."""
        return self.path.parent.parent

    def exists(self) -> bool:
        return self.state_file.is_file()

    def read(self) -> LocalJobState:
        try:
            return _STATE.validate_json(self.state_file.read_bytes())
        except FileNotFoundError as exc:
            raise JobNotFoundError(f"no local job in {self.path}") from exc

    def write(self, state: LocalJobState) -> None:
        atomic_write_text(self.state_file, _STATE.dump_json(state, indent=1).decode())

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Serialise read-modify-write cycles between the supervisor and other callers."""
        return file_lock(self.path / "state.lock")

    @contextlib.contextmanager
    def update(self) -> Iterator[LocalJobState]:
        """Read, let the caller mutate, write back; all under the lock."""
        with self.locked():
            state = self.read()
            yield state
            self.write(state)

    def write_body(self, body: dict[str, Any]) -> None:
        atomic_write_text(self.body_file, json.dumps(body, indent=1))

    def read_body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.body_file.read_text(encoding="utf-8"))
        return body


def new_job_id() -> str:
    """A numeric id like Vertex's, increasing with time so ids sort by creation."""
    return f"{time.time_ns() // 1000}{os.getpid() % 1000:03d}"
