"""One parser for the cluster environment: ``TF_CONFIG`` first, then ``CLUSTER_SPEC``.

Pure Python (no TensorFlow import) so it is cheap to import and to test. Vertex AI sets
``TF_CONFIG`` (task types ``chief``/``worker``/``ps``/``evaluator``) and ``CLUSTER_SPEC``
(pools named ``workerpool0..3``); AI Platform Training labels the primary replica ``master``
unless told to use ``chief``. Everything is normalised to TF2's names here, once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "CHIEF",
    "EVALUATOR",
    "PARAMETER_SERVER",
    "WORKER",
    "ClusterConfigError",
    "ClusterRole",
    "parse_cluster_role",
    "require_all_reduce_cluster",
]

CHIEF = "chief"
WORKER = "worker"
PARAMETER_SERVER = "ps"
EVALUATOR = "evaluator"

_TASK_TYPE_ALIASES: Mapping[str, str] = {
    "chief": CHIEF,
    "master": CHIEF,  # AI Platform's default name for the primary replica
    "worker": WORKER,
    "ps": PARAMETER_SERVER,
    "evaluator": EVALUATOR,
    # Vertex CLUSTER_SPEC pool names, in Vertex worker-pool order.
    "workerpool0": CHIEF,
    "workerpool1": WORKER,
    "workerpool2": PARAMETER_SERVER,
    "workerpool3": EVALUATOR,
}

# The evaluator watches checkpoints from the side; it never joins the collective ops.
_TRAINING_TASK_TYPES = (CHIEF, WORKER, PARAMETER_SERVER)


class ClusterConfigError(ValueError):
    """TF_CONFIG / CLUSTER_SPEC is malformed or describes a cluster these trainers cannot run."""


@dataclass(frozen=True)
class ClusterRole:
    """Where this process sits in the training cluster."""

    task_type: str = CHIEF
    """Normalised task type: ``chief``, ``worker``, ``ps`` or ``evaluator``."""
    task_index: int = 0
    cluster: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The *training* cluster (no evaluator), keyed by normalised task type; empty = no cluster."""
    trial_id: str | None = None
    """Hyperparameter-tuning trial id ("1", "2", ...) when running as a trial."""
    source: str = "none"
    """Which variable described the cluster: ``TF_CONFIG``, ``CLUSTER_SPEC`` or ``none``."""

    @property
    def is_chief(self) -> bool:
        """Chief = ``chief``/``master``, or worker 0 when the cluster has no chief, or no
        cluster at all (a single replica is its own chief; the codelab's check forgot it)."""
        if self.task_type == CHIEF:
            return True
        return self.task_type == WORKER and self.task_index == 0 and CHIEF not in self.cluster

    @property
    def in_training_cluster(self) -> bool:
        return self.task_type in _TRAINING_TASK_TYPES

    @property
    def num_workers(self) -> int:
        """Replicas that run the model: the chief plus the workers (at least 1)."""
        return max(1, len(self.cluster.get(CHIEF, ())) + len(self.cluster.get(WORKER, ())))

    @property
    def has_parameter_servers(self) -> bool:
        return bool(self.cluster.get(PARAMETER_SERVER))

    @property
    def is_multi_worker(self) -> bool:
        return self.num_workers > 1 or self.has_parameter_servers

    @property
    def label(self) -> str:
        return f"{self.task_type}:{self.task_index}"


def require_all_reduce_cluster(role: ClusterRole) -> None:
    """These trainers use synchronous all-reduce; refuse parameter servers up front."""
    if role.has_parameter_servers or role.task_type == PARAMETER_SERVER:
        raise ClusterConfigError(
            f"{role.source} describes parameter servers ({role.label}); these trainers use "
            "synchronous all-reduce (MultiWorkerMirroredStrategy), not ParameterServerStrategy: "
            "drop worker pool 2 (ps) and put those machines in pool 1 (workers)"
        )


def _parse_json(name: str, raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ClusterConfigError(f"{name} is not valid JSON ({error}): {raw[:200]!r}") from error
    if not isinstance(value, dict):
        raise ClusterConfigError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def _normalise_type(name: str, raw_type: object) -> str:
    if not isinstance(raw_type, str) or raw_type.lower() not in _TASK_TYPE_ALIASES:
        valid = ", ".join(sorted(_TASK_TYPE_ALIASES))
        raise ClusterConfigError(f"{name}: unknown task type {raw_type!r}; valid: {valid}")
    return _TASK_TYPE_ALIASES[raw_type.lower()]


def _role_from(
    name: str, document: Mapping[str, object], trial_fallback: str | None
) -> ClusterRole:
    raw_cluster = document.get("cluster") or {}
    if not isinstance(raw_cluster, dict):
        raise ClusterConfigError(f"{name}.cluster must be an object of task type -> addresses")
    cluster: dict[str, tuple[str, ...]] = {}
    for raw_type, addresses in raw_cluster.items():
        task_type = _normalise_type(f"{name}.cluster", raw_type)
        if task_type == EVALUATOR:
            continue  # not part of the training cluster
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise ClusterConfigError(f"{name}.cluster.{raw_type} must be a list of host:port")
        if addresses:
            cluster[task_type] = cluster.get(task_type, ()) + tuple(addresses)
    if len(cluster.get(CHIEF, ())) > 1:
        raise ClusterConfigError(
            f"{name}: {len(cluster[CHIEF])} chief/master replicas; exactly one is allowed"
        )

    raw_task = document.get("task") or {}
    if not isinstance(raw_task, dict):
        raise ClusterConfigError(f"{name}.task must be an object with type and index")
    if not raw_task and cluster:
        raise ClusterConfigError(f"{name} has a cluster but no task (type, index)")
    task_type = _normalise_type(f"{name}.task.type", raw_task.get("type", CHIEF))
    raw_index = raw_task.get("index", 0)
    try:
        task_index = int(raw_index)  # type: ignore[call-overload]
    except (TypeError, ValueError) as error:
        raise ClusterConfigError(
            f"{name}.task.index must be a non-negative integer, got {raw_index!r}"
        ) from error
    if task_index < 0:
        raise ClusterConfigError(f"{name}.task.index must be >= 0, got {task_index}")
    members = cluster.get(task_type, ())
    if task_type != EVALUATOR and cluster and task_index >= len(members):
        raise ClusterConfigError(
            f"{name}: task {task_type}:{task_index} is not in the cluster "
            f"({task_type} has {len(members)} address(es))"
        )
    trial = raw_task.get("trial")
    trial_id = str(trial) if trial not in (None, "") else trial_fallback
    return ClusterRole(task_type, task_index, cluster, trial_id, name)


def _cluster_spec_trial(env: Mapping[str, str]) -> str | None:
    """The trial id CLUSTER_SPEC carries, so that it is not lost when TF_CONFIG wins."""
    raw = env.get("CLUSTER_SPEC", "").strip()
    if not raw:
        return None
    task = _parse_json("CLUSTER_SPEC", raw).get("task")
    trial = task.get("trial") if isinstance(task, dict) else None
    return str(trial) if trial not in (None, "") else None


def parse_cluster_role(environ: Mapping[str, str] | None = None) -> ClusterRole:
    """This process's role. ``TF_CONFIG`` wins over ``CLUSTER_SPEC``; neither = single replica."""
    env = os.environ if environ is None else environ
    trial_fallback = env.get("CLOUD_ML_TRIAL_ID") or _cluster_spec_trial(env) or None
    for name in ("TF_CONFIG", "CLUSTER_SPEC"):
        raw = env.get(name, "").strip()
        if raw:
            return _role_from(name, _parse_json(name, raw), trial_fallback)
    return ClusterRole(trial_id=trial_fallback)
