"""The one small protocol every job backend (vertex, local) implements.

CONTRACT shared by the vertex and local backends and the dynamic providers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from vertex_training.jobs.spec import JobKind, JobRecord, JobSpec


class JobNotFoundError(LookupError):
    """The named job does not exist (any more)."""


class JobBackend(Protocol):
    def submit(self, spec: JobSpec) -> JobRecord:
        """Create the job (not retried: callers ``find`` first). Returns at once."""
        ...

    def get(self, name: str) -> JobRecord:
        """Current record; raises ``JobNotFoundError`` when the job is gone."""
        ...

    def find(self, kind: JobKind, labels: Mapping[str, str]) -> JobRecord | None:
        """The newest job of ``kind`` carrying all ``labels`` (adoption after a crash)."""
        ...

    def cancel(self, name: str) -> None:
        """Ask the job to stop; a job already terminal or gone is fine."""
        ...

    def delete(self, name: str) -> None:
        """Remove the job; a job already gone is fine. Callers cancel and wait first."""
        ...
