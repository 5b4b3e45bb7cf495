"""Job backends behind one small protocol (``base.JobBackend``) and a factory for them;
the settings that choose one live with the providers that carry them."""

from __future__ import annotations

from vertex_training._dynamic import BackendKind, BackendSettings
from vertex_training.jobs.backends.base import JobBackend, JobNotFoundError


def backend_for(settings: BackendSettings) -> JobBackend:
    """A fresh backend for ``settings`` (imports the chosen implementation lazily)."""
    if settings.kind is BackendKind.VERTEX:
        from vertex_training.jobs.backends.vertex import VertexBackend

        return VertexBackend(settings)
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
]
