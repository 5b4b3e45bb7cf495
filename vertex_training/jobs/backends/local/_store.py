"""The local backend's on-disk job store: one directory per job under ``<root>/jobs``.

Every process that touches a job (the backend in a Pulumi provider process, the detached
supervisor, a later provider process that reads or cancels) meets only here, so the state
is plain JSON written atomically (write a temporary file, then rename) and every
read-modify-write holds an ``flock`` on the job's lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.records import JobKind, JobRecord, JobState, TrialRecord

LOCAL_PROJECT = "local"
LOCAL_LOCATION = "local"
_NAME_PREFIX = f"projects/{LOCAL_PROJECT}/locations/{LOCAL_LOCATION}/"

STATE_FILE = "state.json"
BODY_FILE = "body.json"
"""The job exactly as submitted (its Vertex REST body): what the supervisor runs."""
LOCK_FILE = "state.lock"
CANCEL_FILE = "cancel-requested"
SUPERVISOR_LOG = "supervisor.log"


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def job_name(kind: JobKind, job_id: str) -> str:
    return f"{_NAME_PREFIX}{kind.value}/{job_id}"


def parse_job_name(name: str) -> tuple[JobKind, str]:
    """``projects/local/locations/local/<kind>/<id>`` -> (kind, id)."""
    if not name.startswith(_NAME_PREFIX):
        raise JobNotFoundError(
            f"job name {name!r} is not a local job: local names start with {_NAME_PREFIX!r}"
        )
    rest = name[len(_NAME_PREFIX) :].split("/")
    kinds = {k.value: k for k in JobKind}
    if len(rest) != 2 or rest[0] not in kinds or not rest[1].isdigit():
        raise JobNotFoundError(
            f"job name {name!r} is malformed: expected {_NAME_PREFIX}"
            f"{{{','.join(kinds)}}}/<numeric id>"
        )
    return kinds[rest[0]], rest[1]


@dataclass
class ReplicaStatus:
    """One replica process as the supervisor last saw it."""

    pool: int
    index: int
    state: str
    """PENDING, RUNNING, SUCCEEDED, FAILED or KILLED."""
    pid: int | None = None
    exit_code: int | None = None
    log: str = ""
    trial_id: str | None = None
    start: str | None = None
    """``/proc`` start time of ``pid``: only that very process is ever signalled later."""

    @property
    def label(self) -> str:
        prefix = f"trial {self.trial_id} " if self.trial_id else ""
        return f"{prefix}workerpool{self.pool}-{self.index}"


@dataclass
class LocalJobState:
    """The mutable part of a job, persisted as ``state.json``."""

    record: JobRecord
    supervisor_pid: int | None = None
    supervisor_start: str | None = None
    """``/proc`` start time of the supervisor, so a recycled pid is not mistaken for it."""
    replicas: list[ReplicaStatus] = field(default_factory=list)
    output_dir: str | None = None
    plot: str | None = None


def gcs_root(root: Path) -> Path:
    """``<root>/gcs``: where the local backend keeps what a job writes to ``gs://``."""
    return root / "gcs"


def decoded_cache_root(root: Path) -> Path:
    """``<root>/decoded-cache``: the trainer's decoded-image cache, one for every replica
    of every job under ``root`` (a study's trials and reruns decode a split once)."""
    return root / "decoded-cache"


def root_of(job_path: Path) -> Path:
    """The backend root a job directory ``<root>/jobs/<id>`` belongs to."""
    return job_path.parent.parent


def _trial_from_json(data: dict[str, Any]) -> TrialRecord:
    return TrialRecord(**data)


def state_to_json(state: LocalJobState) -> dict[str, Any]:
    r = state.record
    return {
        "record": {
            "name": r.name,
            "kind": r.kind.value,
            "display_name": r.display_name,
            "state": r.state.value,
            "labels": [[k, v] for k, v in r.labels],
            "create_time": r.create_time,
            "start_time": r.start_time,
            "end_time": r.end_time,
            "error_message": r.error_message,
            "model_dir": r.model_dir,
            "trials": [t.to_json() for t in r.trials],
            "best_trial": r.best_trial.to_json() if r.best_trial else None,
            "web_access_uris": dict(r.web_access_uris),
        },
        "supervisor_pid": state.supervisor_pid,
        "supervisor_start": state.supervisor_start,
        "replicas": [vars(rep) for rep in state.replicas],
        "output_dir": state.output_dir,
        "plot": state.plot,
    }


def state_from_json(data: dict[str, Any]) -> LocalJobState:
    r = data["record"]
    record = JobRecord(
        name=r["name"],
        kind=JobKind(r["kind"]),
        display_name=r["display_name"],
        state=JobState(r["state"]),
        labels=tuple((k, v) for k, v in r["labels"]),
        create_time=r["create_time"],
        start_time=r["start_time"],
        end_time=r["end_time"],
        error_message=r["error_message"],
        model_dir=r["model_dir"],
        trials=tuple(_trial_from_json(t) for t in r["trials"]),
        best_trial=_trial_from_json(r["best_trial"]) if r["best_trial"] else None,
        web_access_uris=dict(r.get("web_access_uris") or {}),
    )
    return LocalJobState(
        record=record,
        supervisor_pid=data["supervisor_pid"],
        supervisor_start=data["supervisor_start"],
        replicas=[ReplicaStatus(**rep) for rep in data["replicas"]],
        output_dir=data["output_dir"],
        plot=data["plot"],
    )


def atomic_write_text(path: Path, text: str) -> None:
    """Readers in other processes see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class JobDir:
    """Paths and state access for one job directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def state_file(self) -> Path:
        return self.path / STATE_FILE

    @property
    def cancel_file(self) -> Path:
        return self.path / CANCEL_FILE

    def exists(self) -> bool:
        return self.state_file.is_file()

    def read(self) -> LocalJobState:
        try:
            text = self.state_file.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise JobNotFoundError(f"no local job in {self.path}") from exc
        return state_from_json(json.loads(text))

    def write(self, state: LocalJobState) -> None:
        atomic_write_text(self.state_file, json.dumps(state_to_json(state), indent=1))

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Serialise read-modify-write cycles between the supervisor and other callers."""
        with open(self.path / LOCK_FILE, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def update(self) -> Iterator[LocalJobState]:
        """Read, let the caller mutate, write back; all under the lock."""
        with self.locked():
            state = self.read()
            yield state
            self.write(state)

    def write_body(self, body: dict[str, Any]) -> None:
        atomic_write_text(self.path / BODY_FILE, json.dumps(body, indent=1))

    def read_body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads((self.path / BODY_FILE).read_text(encoding="utf-8"))
        return body


def new_job_id() -> str:
    """A numeric id like Vertex's, increasing with time so ids sort by creation."""
    return f"{time.time_ns() // 1000}{os.getpid() % 1000:03d}"


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux ``/proc``), None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    fields_after = stat.rsplit(")", 1)[1].split()
    if fields_after[0] in ("Z", "X"):
        return None
    return fields_after[19]


def process_alive(pid: int, start_time: str | None = None) -> bool:
    if Path("/proc").is_dir():
        current = process_start_time(pid)
        return current is not None and (start_time is None or current == start_time)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
