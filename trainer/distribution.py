"""The distribution strategy factory and replica-aware saving."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from typing import Any

import tensorflow as tf
import tf_keras

from trainer.cluster import ClusterConfigError, ClusterRole, require_all_reduce_cluster

__all__ = ["create_strategy", "save_model"]

logger = logging.getLogger(__name__)


def create_strategy(role: ClusterRole) -> tf.distribute.Strategy:
    """Pick the strategy for this replica. Create it before any other TensorFlow op:
    MultiWorkerMirroredStrategy must configure the runtime before it starts.

    - a cluster of several workers -> MultiWorkerMirroredStrategy (all-reduce);
    - one machine with several GPUs -> MirroredStrategy;
    - otherwise the default strategy (one device).
    """
    require_all_reduce_cluster(role)
    if not role.in_training_cluster:
        raise ClusterConfigError(
            f"task type {role.task_type!r} is not part of the training cluster; "
            "only chief and worker replicas train"
        )
    gpus = tf.config.list_physical_devices("GPU")
    if role.num_workers > 1:
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec({k: list(v) for k, v in role.cluster.items()}),
            task_type=role.task_type,
            task_id=role.task_index,
            rpc_layer="grpc",
            # SimpleClusterResolver cannot see local devices itself.
            num_accelerators={"GPU": len(gpus)} if gpus else None,
        )
        strategy: tf.distribute.Strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=resolver
        )
        logger.info(
            "MultiWorkerMirroredStrategy: %d workers, this is %s, %d replicas in sync",
            role.num_workers,
            role.label,
            strategy.num_replicas_in_sync,
        )
        return strategy
    if len(gpus) > 1:
        strategy = tf.distribute.MirroredStrategy()
        logger.info("MirroredStrategy over %d GPUs", strategy.num_replicas_in_sync)
        return strategy
    logger.info("single device (%s)", "GPU" if gpus else "CPU")
    return tf.distribute.get_strategy()


def save_model(
    model: tf_keras.Model,
    model_dir: str,
    role: ClusterRole,
    signatures: Mapping[str, Any] | None = None,
) -> str | None:
    """Every replica saves (saving can run collective ops); only the chief keeps its copy.

    Non-chief replicas write into a unique local temporary directory, removed right after.
    ``signatures``: the SavedModel's serving signatures (default: Keras's own).
    Returns the chief's model dir, or ``None`` on other replicas.
    """
    options = {"signatures": dict(signatures)} if signatures else {}
    if role.is_chief:
        model.save(model_dir, **options)
        logger.info("model saved to %s", model_dir)
        return model_dir
    temp_dir = tempfile.mkdtemp(prefix=f"workertemp_{role.task_type}_{role.task_index}_")
    logger.info("non-chief replica %s saves into temporary dir %s", role.label, temp_dir)
    try:
        model.save(temp_dir, **options)
    finally:
        tf.io.gfile.rmtree(temp_dir)
        logger.info("removed temporary dir %s", temp_dir)
    return None
