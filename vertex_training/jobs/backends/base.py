"""The one small protocol every job backend (vertex, local) implements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from vertex_training.jobs.records import JobKind, JobRecord


class JobNotFoundError(LookupError):
    """The named job does not exist (any more)."""


class JobRefusedError(ValueError):
    """The backend cannot run this body; raised before anything is created."""


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

    def relabel(self, name: str, *, labels: Mapping[str, str], display_name: str) -> bool:
        """Give the job new labels and display name without a new run: True when the
        backend's own record changed, False when it has no way to (Vertex has no update
        RPC for CustomJob or HyperparameterTuningJob)."""
        return False

    def resume_interrupted(self, name: str) -> JobRecord | None:
        """Take up a job that ended only because what ran it on our side died (the local
        supervisor), from where it stopped; None when there is nothing to resume."""
        return None


__all__ = [
    "JobBackend",
    "JobNotFoundError",
    "JobRefusedError",
]
