"""The local job backend: Vertex AI job specs run as processes on this machine.

``LocalBackend(root)`` implements ``vertex_training.jobs.backends.base.JobBackend``: one process per
replica with the environment Vertex sets (``TF_CONFIG``, ``CLUSTER_SPEC``, ``AIP_*``,
``CLOUD_ML_*``), a detached supervisor per job, and tuning jobs on Optuna.
"""

from vertex_training.jobs.backends.local.backend import LocalBackend

__all__ = ["LocalBackend"]
