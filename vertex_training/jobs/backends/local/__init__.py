"""The local job backend: Vertex AI job specs run as processes on this machine.

``LocalBackend(root)`` implements ``vertex_training.jobs.backends.base.JobBackend``: one process per
replica with the environment Vertex sets (``TF_CONFIG``, ``CLUSTER_SPEC``, ``AIP_*``,
``CLOUD_ML_*``), a detached supervisor per job, and tuning jobs on Optuna.

``LocalBackend`` (and with it the protos) loads on first use: the local serving backend
reads this package's store (``_store``) on every ``up`` without running a job.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vertex_training.jobs.backends.local.backend import LocalBackend

__all__ = ["LocalBackend"]


def __getattr__(name: str) -> Any:
    if name != "LocalBackend":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.backend").LocalBackend
