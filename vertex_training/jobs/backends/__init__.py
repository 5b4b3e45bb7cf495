"""Job backends behind one small protocol (``base.JobBackend``) and a factory for them."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from vertex_training.jobs.backends.base import JobBackend, JobNotFoundError

T = TypeVar("T")


class BackendKind(enum.StrEnum):
    VERTEX = "vertex"
    LOCAL = "local"


@dataclass(frozen=True)
class BackendSettings:
    """Where jobs run; carried in each job resource's inputs so that the same resources
    run on Vertex in ``dev``/``prod`` and on this machine in the ``local`` stack."""

    kind: BackendKind
    project: str | None = None
    """Vertex only: the Google Cloud project id."""
    location: str | None = None
    """Vertex only: the region, e.g. ``us-central1``."""
    local_root: str | None = None
    """Local only: the directory that holds job state, logs and the local "bucket"."""
    retry_initial_seconds: float = 1.0
    """First backoff of retried reads/lists/cancels/deletes (vertex)."""
    retry_timeout_seconds: float = 120.0
    """Give up retrying a transient error after this long (vertex)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", BackendKind(self.kind))
        if self.kind is BackendKind.VERTEX and not (self.project and self.location):
            raise ValueError(
                "backend: kind 'vertex' needs project and location (region), got "
                f"project={self.project!r} location={self.location!r}"
            )
        if self.kind is BackendKind.LOCAL and not self.local_root:
            raise ValueError("backend: kind 'local' needs local_root (a directory path)")

    @property
    def region(self) -> str | None:
        """The Vertex region validation checks GPUs against (None: local, no GPUs)."""
        return self.location if self.kind is BackendKind.VERTEX else None

    def to_props(self) -> dict[str, Any]:
        props = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        return props | {"kind": self.kind.value}

    @classmethod
    def from_props(cls, props: dict[str, Any]) -> BackendSettings:
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(props) - known)
        if unknown:
            raise ValueError(f"backend: unknown keys {unknown}; valid: {sorted(known)}")
        if props.get("kind") not in {k.value for k in BackendKind}:
            raise ValueError(
                f"backend.kind: {props.get('kind')!r} invalid; valid: "
                f"{[k.value for k in BackendKind]}"
            )
        return cls(**props)


def vertex_backend(cls: Callable[..., T], settings: BackendSettings) -> T:
    """A backend on Vertex AI (``cls``: jobs or serving) for the project, region and
    retry policy of ``settings``."""
    assert settings.project and settings.location  # checked in __post_init__
    return cls(
        settings.project,
        settings.location,
        retry_initial_seconds=settings.retry_initial_seconds,
        retry_timeout_seconds=settings.retry_timeout_seconds,
    )


def backend_for(settings: BackendSettings) -> JobBackend:
    """A fresh backend for ``settings`` (imports the chosen implementation lazily)."""
    if settings.kind is BackendKind.VERTEX:
        from vertex_training.jobs.backends.vertex import VertexBackend

        return vertex_backend(VertexBackend, settings)
    from vertex_training.jobs.backends.local import LocalBackend  # type: ignore[attr-defined,import-not-found,unused-ignore]

    assert settings.local_root
    backend: JobBackend = LocalBackend(settings.local_root)
    return backend


__all__ = [
    "BackendKind",
    "BackendSettings",
    "JobBackend",
    "JobNotFoundError",
    "backend_for",
    "vertex_backend",
]
