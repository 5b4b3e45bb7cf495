"""``python -m vertex_training.stack tensorboard``: the local jobs' TensorBoard logs, served.

The local backend gives every replica ``AIP_TENSORBOARD_LOG_DIR`` under the job's output
directory (per trial ``.../<trial>/logs/``), as Vertex does in Cloud Storage: in the local
stack's bucket directory (``<root>/bucket/jobs/...``), or ``<root>/gcs/<bucket>/...`` for a
job whose output is a ``gs://`` path. This serves the whole local root with the real
``tensorboard`` package, so every job and trial is a run, named by its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["start_tensorboard"]


def start_tensorboard(logdir: Path, *, host: str = "127.0.0.1", port: int = 0) -> tuple[Any, str]:
    """Start TensorBoard on ``logdir`` in this process (a server thread); returns the
    server and its URL. ``port=0`` takes a free port."""
    from tensorboard import program

    logdir.mkdir(parents=True, exist_ok=True)
    server = program.TensorBoard()
    server.configure(
        argv=[
            "tensorboard",
            "--logdir",
            str(logdir),
            "--host",
            host,
            "--port",
            str(port),
            # New trials appear while a study runs.
            "--reload_interval",
            "5",
        ]
    )
    return server, server.launch()
