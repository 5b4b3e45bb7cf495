"""The errors of the job backend, light enough for the providers' modules and the local
runners to import without the Vertex client."""

from __future__ import annotations

from vertex_training._dynamic import NotFoundError


class JobNotFoundError(NotFoundError):
    """The named job does not exist (any more)."""


class JobRefusedError(ValueError):
    """The backend cannot run this body; raised before anything is created."""


class JobWaitTimeoutError(TimeoutError):
    """The job did not end within the wait timeout (it keeps running)."""


__all__ = ["JobNotFoundError", "JobRefusedError", "JobWaitTimeoutError"]
