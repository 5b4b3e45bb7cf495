"""The project and region of the tests' local Vertex, and the settings that point a backend
at it."""

from __future__ import annotations

from vertex_training._dynamic import BackendKind, BackendSettings

PROJECT, LOCATION = "test-project", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"


def local_settings(root: str) -> BackendSettings:
    """A backend on the local Vertex of ``root`` (started on demand), in the tests' project
    and location."""
    return BackendSettings(BackendKind.LOCAL, project=PROJECT, location=LOCATION, local_root=root)


def vertex_settings(retry_timeout_seconds: float) -> BackendSettings:
    """A Vertex backend in the tests' project and location, retrying quickly (the tests
    inject failures) for at most ``retry_timeout_seconds``."""
    return BackendSettings(
        BackendKind.VERTEX,
        project=PROJECT,
        location=LOCATION,
        retry_initial_seconds=0.01,
        retry_timeout_seconds=retry_timeout_seconds,
    )
