"""Command line and environment -> one frozen, validated :class:`TrainConfig`.

No TensorFlow import at module level: ``python -m trainer.task --help`` and a bad flag
answer in well under a second, before TensorFlow spends seconds loading.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "WORKLOADS",
    "OutputPaths",
    "ProfileSteps",
    "ProfileStepsError",
    "TrainConfig",
    "Workload",
    "build_parser",
    "parse_config",
    "resolve_output_paths",
]

logger = logging.getLogger(__name__)

# Smallest square input both networks accept (three conv3+pool stages; ResNet50's stem).
MIN_IMAGE_SIZE = 32


@dataclass(frozen=True)
class Workload:
    """One codelab's fixed facts and its default settings."""

    name: str
    """The codelab's dataset in TFDS, by which the trainer's ``--workload`` names it."""
    num_classes: int
    image_size: int
    epochs: int
    learning_rate: float
    batch_size_per_replica: int = 64
    train_split: str = "train"
    validation_split: str | None = None
    """The codelab validates horses_or_humans on ``test``; cassava trains without validation."""
    reports_hypertune_metric: bool = False

    @property
    def tfds_name(self) -> str:
        return self.name


WORKLOADS: Mapping[str, Workload] = {
    w.name: w
    for w in (
        Workload("cassava", num_classes=5, image_size=300, epochs=2, learning_rate=1e-4),
        Workload(
            "horses_or_humans",
            num_classes=2,
            image_size=150,
            epochs=10,
            learning_rate=0.01,
            validation_split="test",
            reports_hypertune_metric=True,
        ),
    )
}

DEFAULT_MOMENTUM = 0.9
DEFAULT_NUM_UNITS = 64
DEFAULT_SYNTHETIC_EXAMPLES = 256
DISK_CACHE_DIRNAME = "trainer-decoded-cache"
CACHE_DIR_ENV = "TRAINER_CACHE_DIR"
"""The disk cache's directory when ``--cache-dir`` is not given: the local backend points
every replica of a stack at one directory under the stack's local root this way."""
CACHE_MAX_BYTES_ENV = "TRAINER_CACHE_MAX_BYTES"
"""A bound on the disk cache directory: least recently used splits go to make room."""
PREEMPT_AFTER_EPOCH_ENV = "TRAINER_TEST_PREEMPT_AFTER_EPOCH"
"""A test hook: the epoch (1-based) after whose checkpoint the run kills itself, as a
preemption would (``trainer.callbacks.PreemptionAfterEpoch``)."""


@dataclass(frozen=True)
class OutputPaths:
    """Where a run writes; local paths or ``gs://`` URIs (all I/O goes through tf.io.gfile)."""

    model_dir: str
    """The SavedModel is written here by the chief."""
    checkpoint_dir: str
    """BackupAndRestore state; a restarted replica resumes from here."""
    tensorboard_dir: str | None
    """TensorBoard event files; ``None`` = no TensorBoard callback."""


@dataclass(frozen=True)
class ProfileSteps:
    """``--profile-steps START,END``: trace steps START..END (1-based, inclusive) of the
    first epoch this run trains, with the TensorFlow profiler, into the TensorBoard log
    directory (``<logs>/train/plugins/profile/``, what TensorBoard's Profile tab reads)."""

    start: int
    end: int

    def check_within(self, steps_per_epoch: int) -> None:
        """Raises :class:`ProfileStepsError` when the range does not fit in an epoch."""
        if self.end > steps_per_epoch:
            raise ProfileStepsError(
                f"--profile-steps {self.start},{self.end}: an epoch has {steps_per_epoch} "
                f"steps here; valid: 1 <= START <= END <= {steps_per_epoch}"
            )


class ProfileStepsError(ValueError):
    """``--profile-steps`` does not fit in the epoch; raised before training starts."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs, validated."""

    workload: Workload
    paths: OutputPaths
    data: str
    """``tfds`` (the codelab data) or ``synthetic`` (generated images, no network)."""
    data_dir: str | None
    synthetic_examples: int
    image_size: int
    epochs: int
    batch_size_per_replica: int
    steps_per_epoch: int | None
    weights: str
    """``imagenet`` (cassava, as the codelab) or ``none`` (random init, offline)."""
    learning_rate: float
    momentum: float
    num_units: int
    cache_dir: str | None
    """Local directory for splits decoded once per job; ``None`` = decode every epoch."""
    optimizer: str = "sgd"
    """horses_or_humans: ``sgd`` (the codelab, with ``momentum``) or ``adam``."""
    cache_max_bytes: int | None = None
    """At most this much under ``cache_dir`` (``$TRAINER_CACHE_MAX_BYTES``); None: no bound."""
    profile_steps: ProfileSteps | None = None
    """Steps to trace with the profiler; ``None`` = no trace."""


_Number = TypeVar("_Number", int, float)


def _checked(
    cast: Callable[[str], _Number], valid: Callable[[_Number], bool], expected: str
) -> Callable[[str], _Number]:
    """An argparse ``type`` that converts with ``cast`` and rejects what ``valid`` refuses."""

    def parse(text: str) -> _Number:
        try:
            value = cast(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from error
        if not valid(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


_positive_int = _checked(int, lambda v: v >= 1, "a positive integer")
_positive_float = _checked(float, lambda v: 0 < v < float("inf"), "a positive finite number")
_unit_interval = _checked(float, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")


def _profile_steps(text: str) -> ProfileSteps:
    """``START,END`` (or one step ``N``): positive integers, START <= END."""
    parts = text.split(",")
    try:
        numbers = [int(p) for p in parts]
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"expected START,END (steps of an epoch, from 1), got {text!r}"
        ) from error
    if len(numbers) == 1:
        numbers *= 2
    if len(numbers) != 2 or not 1 <= numbers[0] <= numbers[1]:
        raise argparse.ArgumentTypeError(
            f"expected START,END with 1 <= START <= END (steps of an epoch, from 1), got {text!r}"
        )
    return ProfileSteps(numbers[0], numbers[1])


_image_size = _checked(
    int,
    lambda v: v >= MIN_IMAGE_SIZE,
    f"an integer of at least {MIN_IMAGE_SIZE} (the smallest input both networks accept)",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.task",
        description=(
            "Train one of the two codelab workloads. Defaults are the codelab settings; "
            "Vertex AI variables (AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR, "
            "TF_CONFIG, CLUSTER_SPEC) are honoured where set."
        ),
    )
    parser.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    where = parser.add_argument_group("outputs")
    where.add_argument("--job-dir", help="AI Platform convention: outputs go under this dir")
    where.add_argument("--model-dir", help="SavedModel destination (AIP_MODEL_DIR wins)")
    where.add_argument("--checkpoint-dir", help="checkpoints (AIP_CHECKPOINT_DIR wins)")
    where.add_argument("--tensorboard-dir", help="TensorBoard logs (AIP_TENSORBOARD_LOG_DIR wins)")
    data = parser.add_argument_group("data")
    data.add_argument("--data", choices=("tfds", "synthetic"), default="tfds")
    data.add_argument("--data-dir", help="TFDS data dir (local or gs://); must exist")
    data.add_argument(
        "--synthetic-examples",
        type=_positive_int,
        default=DEFAULT_SYNTHETIC_EXAMPLES,
        help="training examples generated by --data synthetic (validation gets a quarter)",
    )
    data.add_argument(
        "--cache-dir",
        help=(
            "local directory where each split is decoded once per job "
            f"(default: ${CACHE_DIR_ENV}, else <system temp dir>/{DISK_CACHE_DIRNAME}); "
            "skipped when the disk lacks room"
        ),
    )
    data.add_argument(
        "--no-disk-cache",
        action="store_true",
        help="no disk cache: a split of up to 256 MB decoded is cached in memory, others "
        "decode every epoch",
    )
    train = parser.add_argument_group("training (defaults: the workload's codelab settings)")
    train.add_argument("--image-size", type=_image_size)
    train.add_argument("--epochs", type=_positive_int)
    train.add_argument("--batch-size-per-replica", type=_positive_int)
    train.add_argument("--steps-per-epoch", type=_positive_int)
    train.add_argument(
        "--profile-steps",
        type=_profile_steps,
        metavar="START,END",
        help=(
            "trace these steps (1-based, inclusive) of the first epoch with the TensorFlow "
            "profiler into the TensorBoard logs; checked against the steps per epoch before "
            "training starts"
        ),
    )
    train.add_argument(
        "--weights",
        choices=("imagenet", "none"),
        help="cassava: ResNet50 initial weights (default imagenet, as the codelab)",
    )
    hparams = parser.add_argument_group("hyperparameters (codelab flag names)")
    hparams.add_argument(
        "--learning_rate", type=_positive_float, help="default: cassava 1e-4, horses 0.01"
    )
    hparams.add_argument(
        "--momentum", type=_unit_interval, help=f"horses_or_humans SGD (default {DEFAULT_MOMENTUM})"
    )
    hparams.add_argument(
        "--optimizer",
        choices=("sgd", "adam"),
        help="horses_or_humans optimizer (default sgd, the codelab's; --momentum is SGD's)",
    )
    hparams.add_argument(
        "--num_units",
        type=_positive_int,
        help=f"horses_or_humans last hidden layer (default {DEFAULT_NUM_UNITS})",
    )
    return parser


def _join(base: str, name: str) -> str:
    # os.path.join keeps gs:// intact; strip a trailing slash so we never produce "//".
    return os.path.join(base.rstrip("/"), name)


def resolve_output_paths(
    *,
    job_dir: str | None,
    model_dir: str | None,
    checkpoint_dir: str | None,
    tensorboard_dir: str | None,
    environ: Mapping[str, str],
) -> OutputPaths:
    """Vertex variables first, then explicit flags, then the ``--job-dir`` layout.

    In a tuning trial (``CLOUD_ML_TRIAL_ID``) every directory taken from the flags gets the
    trial id as a last segment (``trial-<id>``), so trials that share the flags share no
    model, checkpoint or TensorBoard run, and the best trial's model is addressable; the
    ``AIP_*`` directories are per trial already (``<baseOutputDirectory>/<trial id>/...``).

    Raises ValueError naming the missing inputs when no model destination is known.
    """
    trial = environ.get("CLOUD_ML_TRIAL_ID")

    def per_trial(path: str) -> str:
        return _join(path, f"trial-{trial}") if trial else path

    aip_model = environ.get("AIP_MODEL_DIR") or None
    if aip_model:
        if model_dir or job_dir:
            logger.info("AIP_MODEL_DIR is set: the model goes to %s, not to the flags", aip_model)
        resolved_model = aip_model
    elif model_dir:
        if job_dir:
            logger.warning("--model-dir %s overrides %s", model_dir, _join(job_dir, "model"))
        resolved_model = per_trial(model_dir)
    elif job_dir:
        resolved_model = per_trial(_join(job_dir, "model"))
    else:
        raise ValueError(
            "no model destination: set AIP_MODEL_DIR (Vertex sets it from the job's base "
            "output directory), or pass --job-dir or --model-dir"
        )
    resolved_checkpoints = environ.get("AIP_CHECKPOINT_DIR") or (
        per_trial(checkpoint_dir)
        if checkpoint_dir
        else per_trial(_join(job_dir, "checkpoints"))
        if job_dir
        # Without a job dir, keep the checkpoints next to the model, never inside it: the
        # final save replaces the model directory.
        else resolved_model.rstrip("/") + "-checkpoints"
    )
    resolved_tensorboard = environ.get("AIP_TENSORBOARD_LOG_DIR") or None
    if resolved_tensorboard is None:
        flagged = tensorboard_dir or (_join(job_dir, "logs") if job_dir else None)
        resolved_tensorboard = per_trial(flagged) if flagged else None
    return OutputPaths(resolved_model, resolved_checkpoints, resolved_tensorboard)


def _path_exists(path: str) -> bool:
    if "://" in path:
        import tensorflow as tf  # only for remote paths: gfile speaks gs://

        return bool(tf.io.gfile.exists(path))
    return os.path.isdir(path)


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> TrainConfig:
    """Parse and validate; on a bad value, exit with status 2 and a message naming the flag."""
    env = os.environ if environ is None else environ
    parser = build_parser()
    args = parser.parse_args(argv)
    workload = WORKLOADS[args.workload]

    if workload.name == "cassava":
        for flag, value in (
            ("--momentum", args.momentum),
            ("--num_units", args.num_units),
            ("--optimizer", args.optimizer),
        ):
            if value is not None:
                parser.error(f"{flag} applies to horses_or_humans only (cassava uses Adam)")
    if workload.name == "horses_or_humans" and args.weights == "imagenet":
        parser.error("--weights imagenet applies to cassava only (the CNN trains from scratch)")
    if args.data_dir is not None and not _path_exists(args.data_dir):
        parser.error(f"--data-dir {args.data_dir!r} does not exist; create it or drop the flag")
    if args.data_dir is not None and args.data == "synthetic":
        parser.error("--data-dir is only read with --data tfds")
    if args.cache_dir is not None and "://" in args.cache_dir:
        parser.error(
            f"--cache-dir {args.cache_dir!r} is remote; it must be on the replica's local disk "
            "(every epoch reads it)"
        )
    if args.cache_dir is not None and args.no_disk_cache:
        parser.error("--cache-dir and --no-disk-cache contradict each other; drop one")
    cache_dir = None
    if not args.no_disk_cache:
        cache_dir = (
            args.cache_dir
            or env.get(CACHE_DIR_ENV)
            or os.path.join(tempfile.gettempdir(), DISK_CACHE_DIRNAME)
        )
    cache_max_bytes = None
    if env.get(CACHE_MAX_BYTES_ENV):
        bound = env[CACHE_MAX_BYTES_ENV]
        cache_max_bytes = int(bound) if bound.isdigit() else 0
        if cache_max_bytes < 1:
            parser.error(f"{CACHE_MAX_BYTES_ENV}={bound!r}: valid: a positive number of bytes")
    try:
        paths = resolve_output_paths(
            job_dir=args.job_dir,
            model_dir=args.model_dir,
            checkpoint_dir=args.checkpoint_dir,
            tensorboard_dir=args.tensorboard_dir,
            environ=env,
        )
    except ValueError as error:
        parser.error(str(error))
    if args.profile_steps is not None:
        if paths.tensorboard_dir is None:
            parser.error(
                "--profile-steps writes into the TensorBoard logs: set AIP_TENSORBOARD_LOG_DIR "
                "or pass --tensorboard-dir or --job-dir"
            )
        if args.steps_per_epoch is not None:
            try:
                args.profile_steps.check_within(args.steps_per_epoch)
            except ProfileStepsError as error:
                parser.error(f"{error} (--steps-per-epoch {args.steps_per_epoch})")

    return TrainConfig(
        workload=workload,
        paths=paths,
        data=args.data,
        data_dir=args.data_dir,
        synthetic_examples=args.synthetic_examples,
        image_size=args.image_size or workload.image_size,
        epochs=args.epochs or workload.epochs,
        batch_size_per_replica=args.batch_size_per_replica or workload.batch_size_per_replica,
        steps_per_epoch=args.steps_per_epoch,
        weights=args.weights or ("imagenet" if workload.name == "cassava" else "none"),
        learning_rate=args.learning_rate or workload.learning_rate,
        momentum=DEFAULT_MOMENTUM if args.momentum is None else args.momentum,
        num_units=args.num_units or DEFAULT_NUM_UNITS,
        cache_dir=cache_dir,
        cache_max_bytes=cache_max_bytes,
        optimizer=args.optimizer or "sgd",
        profile_steps=args.profile_steps,
    )
