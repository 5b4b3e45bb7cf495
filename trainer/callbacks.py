"""Keras callbacks: progress logging with a parseable resume line, hypertune reporting,
TensorBoard scalars and a profiler trace of a few steps."""

from __future__ import annotations

import logging
import math
import os
import signal
from typing import Any

import tf_keras

from trainer.metric import HYPERTUNE_METRIC_TAG

__all__ = [
    "EpochLogger",
    "EpochSummaryWriter",
    "HypertuneReporter",
    "PreemptionAfterEpoch",
    "StepProfiler",
]

logger = logging.getLogger(__name__)


class EpochLogger(tf_keras.callbacks.Callback):
    """Logs where training starts (``start_epoch=N``, 1-based) and each epoch's metrics.

    Place it after BackupAndRestore: the first ``on_epoch_begin`` then sees the epoch
    restored from the checkpoint, so a restart is visible in the log.
    """

    def __init__(self, total_epochs: int) -> None:
        super().__init__()
        self._total_epochs = total_epochs
        self._started = False

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if not self._started:
            self._started = True
            logger.info(
                "start_epoch=%d total_epochs=%d resumed=%s",
                epoch + 1,
                self._total_epochs,
                epoch > 0,
            )

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        metrics = " ".join(f"{k}={float(v):.4f}" for k, v in sorted((logs or {}).items()))
        logger.info("epoch=%d/%d %s", epoch + 1, self._total_epochs, metrics)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if not self._started:
            logger.info(
                "start_epoch=%d total_epochs=%d resumed=True (checkpoint already complete)",
                self._total_epochs + 1,
                self._total_epochs,
            )


class HypertuneReporter(tf_keras.callbacks.Callback):
    """Reports ``val_accuracy`` after every epoch (global_step = epoch, from 1).

    Intermediate reports let the tuning service stop bad trials early; the last line is
    the final ``val_accuracy``, which is what the codelab reports. Chief only.
    """

    def __init__(self, metric: str = "val_accuracy") -> None:
        super().__init__()
        import hypertune  # cloudml-hypertune; imported here so tests can point it at a file

        self._metric = metric
        self._hypertune = hypertune.HyperTune()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        value = (logs or {}).get(self._metric)
        if value is None or not math.isfinite(float(value)):
            logger.warning("epoch %d: no finite %s to report to hypertune", epoch + 1, self._metric)
            return
        self._hypertune.report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag=HYPERTUNE_METRIC_TAG,
            metric_value=float(value),
            global_step=epoch + 1,
        )
        logger.info("hypertune %s=%.6f global_step=%d", HYPERTUNE_METRIC_TAG, value, epoch + 1)


class EpochSummaryWriter(tf_keras.callbacks.Callback):
    """Per-epoch scalars as TensorBoard event files, written with TensorFlow core only.

    The tf-keras TensorBoard callback needs the ``tensorboard`` package (absent from the
    trainer image; only this checkout's local viewer installs it) for
    ``tf.summary.scalar``; ``tf.summary.write`` with the scalars plugin metadata produces
    the same events. Only the chief writes: epoch summaries are
    not collective, so other replicas need no temporary dirs.
    """

    def __init__(self, log_dir: str) -> None:
        super().__init__()
        self._log_dir = log_dir
        self._writers: dict[str, Any] = {}

    def _writer(self, name: str) -> Any:
        import os

        import tensorflow as tf

        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(os.path.join(self._log_dir, name))
        return self._writers[name]

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
            data_class=summary_pb2.DATA_CLASS_SCALAR,
        )
        for key, value in (logs or {}).items():
            split, tag = ("validation", key[4:]) if key.startswith("val_") else ("train", key)
            with self._writer(split).as_default():
                tf.summary.write(
                    f"epoch_{tag}", tf.constant(float(value)), step=epoch + 1, metadata=metadata
                )
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        for writer in self._writers.values():
            writer.close()


class StepProfiler(tf_keras.callbacks.Callback):
    """Traces steps ``start..end`` (1-based, inclusive) of the first epoch this run trains
    with the TensorFlow profiler, into ``<log_dir>/train`` (``plugins/profile/<time>/``),
    where TensorBoard's Profile tab finds it. Chief only: one trace per job.

    The profiler is TensorFlow core's (``tf.profiler.experimental``), so the image needs no
    extra package to write a trace; viewing it needs ``tensorboard-plugin-profile``.
    """

    def __init__(self, log_dir: str, start: int, end: int) -> None:
        super().__init__()
        import os

        self._log_dir = os.path.join(log_dir, "train")
        self._start = start
        self._end = end
        self._active = False
        self._done = False

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if not self._done and not self._active and batch + 1 == self._start:
            import tensorflow as tf

            tf.profiler.experimental.start(self._log_dir)
            self._active = True
            logger.info(
                "profiler: tracing steps %d-%d into %s", self._start, self._end, self._log_dir
            )

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._active and batch + 1 >= self._end:
            self._stop()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # An epoch shorter than expected (unknown size): stop with what was traced.
        if self._active:
            self._stop()
        self._done = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._active:
            self._stop()

    def _stop(self) -> None:
        import tensorflow as tf

        tf.profiler.experimental.stop()
        self._active = False
        self._done = True
        logger.info("profiler: trace written under %s/plugins/profile", self._log_dir)


class PreemptionAfterEpoch(tf_keras.callbacks.Callback):
    """A test hook: this process dies by SIGKILL, as in a preemption, once epoch ``epoch``
    (1-based) has ended and its checkpoint is written (place it last). A resume test then
    knows where the run stopped instead of racing a kill against training."""

    def __init__(self, epoch: int) -> None:
        super().__init__()
        self._epoch = epoch

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if epoch + 1 == self._epoch:
            logger.warning("preempted after epoch %d (test hook)", epoch + 1)
            os.kill(os.getpid(), signal.SIGKILL)
