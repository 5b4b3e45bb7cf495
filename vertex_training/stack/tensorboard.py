"""``python -m vertex_training.stack tensorboard``: the local jobs' TensorBoard logs, served.

The local backend gives every replica ``AIP_TENSORBOARD_LOG_DIR`` under the job's output
directory in the local bucket (``<root>/gcs/<bucket>/.../logs/``, per trial
``.../<trial>/logs/``), as Vertex does in Cloud Storage. This serves that whole tree with
the real ``tensorboard`` package, so every job and trial is a run, named by its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["local_log_root", "start_tensorboard"]


def local_log_root(root: Path) -> Path:
    """Where a local backend rooted at ``root`` keeps what jobs write to ``gs://``."""
    from vertex_training.jobs.backends.local import LocalBackend

    return LocalBackend(str(root)).gcs_dir


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
