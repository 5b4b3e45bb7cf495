"""One training run: strategy, data, model, fit with resume, export for serving, report."""

from __future__ import annotations

import logging
import math
import os

import tensorflow as tf
import tf_keras

from trainer.callbacks import (
    EpochLogger,
    EpochSummaryWriter,
    HypertuneReporter,
    PreemptionAfterEpoch,
    StepProfiler,
)
from trainer.cluster import ClusterRole
from trainer.config import PREEMPT_AFTER_EPOCH_ENV, TrainConfig
from trainer.data import EncodedSplit, ImagePipeline, load_tfds_split, synthetic_split
from trainer.disk_cache import DiskCache
from trainer.distribution import create_strategy, save_model
from trainer.export import serving_signatures
from trainer.models import build_model

__all__ = ["run_training"]

logger = logging.getLogger(__name__)

# Fixed seeds for generated data: every replica must generate the same examples.
_SYNTHETIC_TRAIN_SEED = 1
_SYNTHETIC_VALIDATION_SEED = 2


def _configure_accelerators(role: ClusterRole) -> bool:
    """Mixed precision (and XLA) on GPUs only: on CPU they slow these models down.

    Returns whether to compile with XLA. Not across machines: the multi-worker
    all-reduce runs from inside the train step, and tf-keras's XLA path is only
    exercised with single-machine strategies.
    """
    if not tf.config.list_physical_devices("GPU"):
        return False
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    use_xla = not role.is_multi_worker
    logger.info("GPU present: mixed_float16 policy; XLA (jit_compile) %s", use_xla)
    return use_xla


def _load_split(config: TrainConfig, split: str, *, training: bool) -> EncodedSplit:
    workload = config.workload
    if config.data == "synthetic":
        examples = config.synthetic_examples if training else max(1, config.synthetic_examples // 4)
        return synthetic_split(
            num_examples=examples,
            num_classes=workload.num_classes,
            image_size=config.image_size,
            seed=_SYNTHETIC_TRAIN_SEED if training else _SYNTHETIC_VALIDATION_SEED,
        )
    loaded = load_tfds_split(
        workload.tfds_name, split, data_dir=config.data_dir, shuffle_files=training
    )
    if loaded.num_classes != workload.num_classes:
        raise ValueError(
            f"TFDS {workload.tfds_name!r} in --data-dir {config.data_dir!r} has "
            f"{loaded.num_classes} classes; the {workload.name} model expects "
            f"{workload.num_classes}"
        )
    return loaded


def disk_cache_for(config: TrainConfig, role: ClusterRole) -> DiskCache | None:
    """This replica's disk cache, logging where it is (it outlives the job)."""
    if config.cache_dir is None:
        logger.info("decoded-image disk cache: off (--no-disk-cache)")
        return None
    bound = (
        f", bounded to {config.cache_max_bytes / 1024**3:.1f} GiB"
        if config.cache_max_bytes is not None
        else ""
    )
    logger.info(
        "decoded-image disk cache: %s (this machine's local disk%s); it stays after the job, "
        "for the next job on this machine to reuse",
        config.cache_dir,
        bound,
    )
    # Keyed by the replica: two workers sharing a host (or a test) never share files.
    return DiskCache(
        config.cache_dir,
        task_type=role.task_type,
        task_index=role.task_index,
        num_workers=role.num_workers,
        max_bytes=config.cache_max_bytes,
    )


def run_training(config: TrainConfig, role: ClusterRole) -> str | None:
    """Train, save and (horses_or_humans, chief) report. Returns the model dir on the chief."""
    strategy = create_strategy(role)  # first: MWMS must be set up before other TF ops
    use_xla = _configure_accelerators(role)
    global_batch = config.batch_size_per_replica * strategy.num_replicas_in_sync
    disk_cache = disk_cache_for(config, role)
    pipeline = ImagePipeline(
        image_size=config.image_size,
        global_batch_size=global_batch,
        disk_cache=disk_cache,
    )

    workload = config.workload
    train_split = _load_split(config, workload.train_split, training=True)
    if config.profile_steps is not None:
        # Before any model is built or step runs: a range past the epoch is a config error.
        steps = config.steps_per_epoch or (
            math.ceil(train_split.num_examples / global_batch) if train_split.num_examples else None
        )
        if steps is None:
            logger.warning(
                "--profile-steps: the epoch's length is unknown; the trace ends with the epoch"
            )
        else:
            config.profile_steps.check_within(steps)
    train_data = pipeline.build(
        train_split, training=True, repeat=config.steps_per_epoch is not None
    )
    validation_data = None
    if workload.validation_split is not None:
        validation_split = _load_split(config, workload.validation_split, training=False)
        validation_data = pipeline.build(validation_split, training=False)

    with strategy.scope():
        model = build_model(config, jit_compile=use_xla)

    callbacks: list[tf_keras.callbacks.Callback] = [
        # Multi-worker aware: the chief writes <dir>/chief, others write temp dirs and
        # delete them; on restart every replica restores the chief's latest checkpoint.
        # A finished fit deletes the backup, so a new job that reuses the output dir
        # starts afresh instead of "resuming" a run that already completed.
        tf_keras.callbacks.BackupAndRestore(backup_dir=config.paths.checkpoint_dir),
        EpochLogger(config.epochs),
    ]
    if config.paths.tensorboard_dir and role.is_chief:
        callbacks.append(EpochSummaryWriter(config.paths.tensorboard_dir))
        if config.profile_steps is not None:
            callbacks.append(
                StepProfiler(
                    config.paths.tensorboard_dir,
                    config.profile_steps.start,
                    config.profile_steps.end,
                )
            )
    if workload.reports_hypertune_metric and role.is_chief:
        callbacks.append(HypertuneReporter())
    if preempt_after := os.environ.get(PREEMPT_AFTER_EPOCH_ENV):
        callbacks.append(PreemptionAfterEpoch(int(preempt_after)))

    logger.info(
        "training %s on %s data: %d epochs, %dpx, batch %d per replica x %d replicas; "
        "model -> %s, checkpoints -> %s, tensorboard -> %s",
        workload.name,
        config.data,
        config.epochs,
        config.image_size,
        config.batch_size_per_replica,
        strategy.num_replicas_in_sync,
        config.paths.model_dir,
        config.paths.checkpoint_dir,
        config.paths.tensorboard_dir,
    )
    model.fit(
        train_data,
        epochs=config.epochs,
        steps_per_epoch=config.steps_per_epoch,
        validation_data=validation_data,
        callbacks=callbacks,
        verbose=0,  # EpochLogger logs each epoch through logging instead
    )
    signatures = serving_signatures(
        model, image_size=config.image_size, num_classes=workload.num_classes
    )
    return save_model(model, config.paths.model_dir, role, signatures)
