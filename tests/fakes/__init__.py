"""In-process fakes of the Google services our backends call, and the settings that
point a backend at them."""

from __future__ import annotations

from vertex_training._dynamic import BackendKind, BackendSettings


def fake_settings(retry_timeout_seconds: float = 5) -> BackendSettings:
    """Vertex settings for a backend on a fake (``VERTEX_AI_EMULATOR_HOST``): quick retries."""
    return BackendSettings(
        BackendKind.VERTEX,
        project="test-project",
        location="us-central1",
        retry_initial_seconds=0.01,
        retry_timeout_seconds=retry_timeout_seconds,
    )
