"""The one small protocol every job backend (vertex, local) implements."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from vertex_training._dynamic import NotFoundError
from vertex_training.jobs.records import JobKind, JobRecord

_progress = logging.getLogger("vertex_training.jobs.progress")
"""A waiting job's state changes. The engine shows a dynamic provider's stderr as it comes
(a dynamic provider has no engine connection for structured logs, pulumi/pulumi#6065), so
in the provider's process this logger writes its bare lines there: a waiting `pulumi up`
says what its jobs are doing instead of sitting silent for minutes."""


class JobNotFoundError(NotFoundError):
    """The named job does not exist (any more)."""


class JobRefusedError(ValueError):
    """The backend cannot run this body; raised before anything is created."""


class JobWaitTimeoutError(TimeoutError):
    """The job did not end within the wait timeout (it keeps running)."""


def progress_line(record: JobRecord) -> str:
    """One line of a job's progress: its state and, for a study, its trials so far."""
    line = f"{record.display_name or record.job_id} ({record.name}): {record.state.value}"
    if record.trials:
        ended = sum(t.state in ("SUCCEEDED", "INFEASIBLE") for t in record.trials)
        line += f"; trials: {len(record.trials)} started, {ended} ended"
    best = record.best_trial
    if best is not None and best.final_metrics:
        metric, value = next(iter(best.final_metrics.items()))
        line += f"; best so far: trial {best.trial_id}, {metric} {value:.4g}"
    return line


def newest(records: Iterable[JobRecord], labels: Mapping[str, str]) -> JobRecord | None:
    """The newest of ``records`` that carries all ``labels``: what ``find`` answers."""
    wanted = set(labels.items())
    found = [r for r in records if wanted <= set(r.labels)]
    return max(found, key=lambda r: (r.create_time or "", r.name), default=None)


class JobBackend(Protocol):
    def submit(self, kind: JobKind, body: Mapping[str, Any]) -> JobRecord:
        """Create the job from its Vertex REST body, sent as it is (not retried: callers
        ``find`` first). Returns at once."""

    def get(self, name: str) -> JobRecord:
        """Current record; raises ``JobNotFoundError`` when the job is gone."""

    def find(self, kind: JobKind, labels: Mapping[str, str]) -> JobRecord | None:
        """The newest job of ``kind`` carrying all ``labels`` (adoption after a crash)."""

    def cancel(self, name: str) -> None:
        """Ask the job to stop; a job already terminal or gone is fine."""

    def delete(self, name: str) -> None:
        """Remove the job; a job already gone is fine. Callers cancel and wait first."""

    def wait(
        self,
        name: str,
        timeout: float,
        poll_seconds: float = 0.1,
        *,
        hint: str = "",
        report: bool = False,
    ) -> JobRecord:
        """Poll ``get`` every ``poll_seconds`` until the job ends; the last record. Raises
        ``JobWaitTimeoutError`` (ending with ``hint``) when ``timeout`` s pass first. With
        ``report``, ``_progress`` gets the job's :func:`progress_line` whenever it changes."""
        if report and not _progress.handlers:  # once per provider process
            _progress.addHandler(logging.StreamHandler())  # stderr, the bare message
            _progress.setLevel(logging.INFO)
            _progress.propagate = False
        deadline = time.monotonic() + timeout
        last_line = ""
        while True:
            record = self.get(name)
            line = progress_line(record)
            if report and line != last_line:
                _progress.info(line)
                last_line = line
            if record.state.is_terminal:
                return record
            if time.monotonic() >= deadline:
                where = f" {record.console_url}" if record.console_url else ""
                raise JobWaitTimeoutError(
                    f"{name} is still {record.state.value} after {timeout:.0f} s; {hint}{where}"
                )
            time.sleep(poll_seconds)


__all__ = [
    "JobBackend",
    "JobNotFoundError",
    "JobRefusedError",
    "JobWaitTimeoutError",
    "newest",
    "progress_line",
]
