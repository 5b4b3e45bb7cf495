"""What the local backend keeps on disk, read the way a user would look at it.

The end-to-end tests count submits and read job states here, not through
``vertex_training.jobs``: the local Vertex's job store is one directory per submitted job,
``<localRoot>/jobs/<numeric id>/`` with the job's state in ``state.json`` and its body as
created in ``body.json`` (see ``vertex_training/local/runners/store.py``), and a deleted
job's directory is removed. This module is the only place that knows that
layout, so that a change of the store means a change here only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

STATE_FILE = "state.json"
BODY_FILE = "body.json"
JOB_LABEL = "job"
"""The label the program puts on every job: the job's name in the stack config."""


def succeeded(state: str) -> bool:
    """A job's or trial's state says it succeeded (Vertex names, with or without the
    ``JOB_STATE_`` prefix the REST API puts on job states)."""
    return state.removeprefix("JOB_STATE_") == "SUCCEEDED"


@dataclass(frozen=True)
class StoredJob:
    """One job directory of the local backend."""

    job_id: str
    state: str
    labels: dict[str, str]

    @property
    def declared_name(self) -> str:
        return self.labels.get(JOB_LABEL, "")


def stored_jobs(local_root: Path) -> dict[str, StoredJob]:
    """Every job the local backend holds under ``local_root``, by job id."""
    jobs_dir = local_root / "jobs"
    if not jobs_dir.is_dir():
        return {}
    jobs = {}
    for path in sorted(jobs_dir.iterdir()):
        state_file = path / STATE_FILE
        if not state_file.is_file():
            continue
        state = json.loads(state_file.read_text(encoding="utf-8"))["state"]
        body = json.loads((path / BODY_FILE).read_text(encoding="utf-8"))
        jobs[path.name] = StoredJob(path.name, state, body.get("labels") or {})
    return jobs


def jobs_named(local_root: Path, declared_name: str) -> list[StoredJob]:
    """The stored jobs of one declared job (config name), oldest first."""
    found = [job for job in stored_jobs(local_root).values() if job.declared_name == declared_name]
    return sorted(found, key=lambda job: int(job.job_id))


def job_logs(local_root: Path, job_id: str) -> dict[str, str]:
    """The log files of one stored job (one per replica, ``workerpool0-0.log``...), by
    name: what a user reads when a job fails."""
    return {
        path.name: path.read_text(encoding="utf-8", errors="replace")
        for path in sorted((local_root / "jobs" / job_id).rglob("*.log"))
    }
