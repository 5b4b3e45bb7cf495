"""Decode once per job: a split too large for memory is decoded into uint8 files on local disk.

The first epoch is served from the images as they are decoded, and they are written
meanwhile (a tee), in blocks of a few images (one file each, read back whole), into
``<key>.partial-<pid>-<random>``; once a pass has written every image, that directory is
renamed to ``<key>``. A rename is atomic on a local file system, so a complete cache is
the only thing that can carry the final name, and only a complete cache is ever read: every
epoch (every new iterator) checks for it when it starts, and decodes (and writes) again
while there is none. A writer killed half-way leaves a ``.partial-*`` directory that is
never read and is removed by the next pass for the same key; a pass abandoned half-way
(an iterator dropped mid-epoch) is removed by the next pass in the same process, or when
the process exits.

The key holds the split's identity, the image size, the example count and the replica's
place in the cluster: two workers on one host, a different image size or another dataset
version never share files. Under MultiWorkerMirroredStrategy (auto-shard policy DATA, the
shard applied after the batch) every worker runs the whole pipeline, so each writes the
whole split into its own cache.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

__all__ = [
    "CACHE_FORMAT",
    "DISK_HEADROOM_BYTES",
    "DiskCache",
    "decoded_size_bytes",
]

logger = logging.getLogger(__name__)

DISK_HEADROOM_BYTES = 1024**3
"""Free space left untouched after the cache is written (logs, checkpoints, the OS)."""
_FORMAT_OVERHEAD = 1.05
"""Record framing and the label and index stored next to each image, generously."""
_PARTIAL = ".partial-"
CACHE_FORMAT = "blocks1"
"""In every key: a cache written by an earlier release, in another layout, is never read
(cache directories outlive jobs on a machine that runs several)."""


def decoded_size_bytes(num_examples: int, image_size: int) -> int:
    """The decoded uint8 split: examples x height x width x 3 channels."""
    return num_examples * image_size * image_size * 3


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60]


def _writer_alive(partial_name: str) -> bool:
    """Whether the process named in ``<key>.partial-<pid>-<random>`` still runs."""
    try:
        pid = int(partial_name.rsplit(_PARTIAL, 1)[1].split("-", 1)[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # an earlier attempt of this very process failed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


@dataclass(frozen=True)
class DiskCache:
    """Where this replica keeps decoded splits, and which replica it is."""

    root: str
    """A directory on the replica's local disk (never a bucket: it is read every epoch)."""
    task_type: str = "chief"
    task_index: int = 0
    num_workers: int = 1

    def key(self, identity: str, image_size: int, num_examples: int) -> str:
        """A readable, collision-free directory name for one split on one replica."""
        replica = f"{self.task_type}{self.task_index}-of{self.num_workers}"
        digest = hashlib.sha256(
            f"{identity}|{image_size}|{num_examples}|{replica}|{CACHE_FORMAT}".encode()
        ).hexdigest()[:12]
        return f"{_slug(identity)}-{image_size}px-{num_examples}-{replica}-{CACHE_FORMAT}-{digest}"

    def has_room(self, needed_bytes: int) -> bool:
        os.makedirs(self.root, exist_ok=True)
        free = shutil.disk_usage(self.root).free
        required = int(needed_bytes * _FORMAT_OVERHEAD) + DISK_HEADROOM_BYTES
        if free < required:
            logger.info(
                "disk cache skipped: the decoded split needs %.1f GiB (+%.1f GiB headroom) "
                "under %s, %.1f GiB free; every epoch decodes again",
                needed_bytes * _FORMAT_OVERHEAD / 1024**3,
                DISK_HEADROOM_BYTES / 1024**3,
                self.root,
                free / 1024**3,
            )
            return False
        return True

    def _remove_partials(self, key: str) -> None:
        """Remove what writers that died left behind; a live writer's files stay (two local
        trials of the same split may write the same key at once)."""
        for name in os.listdir(self.root):
            if name.startswith(key + _PARTIAL) and not _writer_alive(name):
                logger.info("removing a half-written disk cache %s", name)
                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)

    def decoded(
        self,
        decoded: tf.data.Dataset,
        *,
        key: str,
        num_examples: int,
        block_size: int,
        shuffle: bool,
        first_pass_shuffle_blocks: int = 1,
        parallel_reads: int = 2,
    ) -> tf.data.Dataset:
        """``decoded`` (``(uint8 image, label)`` pairs of one static shape, ``num_examples``
        of them) as blocks: ``(images, labels)`` with a leading dimension of ``block_size``
        (less for the last block).

        An epoch that starts with the cache under ``key`` complete reads it, in a block order
        drawn anew every epoch if ``shuffle``. Otherwise it is served from ``decoded`` while
        it writes the cache: the blocks in the source's order, mixed in a buffer of
        ``first_pass_shuffle_blocks`` if ``shuffle``.
        """
        layout = _BlockLayout.of(decoded.element_spec, num_examples, block_size)
        final = os.path.join(self.root, key)
        cached = layout.read(final, shuffle=shuffle, parallel_reads=parallel_reads)
        if os.path.isdir(final):
            layout.check(final)
            logger.info("disk cache %s is complete: no decoding in this job", final)
            return cached
        os.makedirs(self.root, exist_ok=True)
        writer = _FirstPass(self, key, layout)

        def epoch(_: tf.Tensor) -> tf.data.Dataset:
            # Runs when an iterator (an epoch) starts: -1 if the cache is complete.
            pass_id = tf.reshape(tf.py_function(writer.begin, [], tf.int64), ())
            complete = pass_id < 0

            def write(images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                done = tf.py_function(writer.write, [pass_id, images, labels], tf.bool)
                with tf.control_dependencies([done]):
                    return tf.identity(images), tf.identity(labels)

            def finish(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
                done = tf.py_function(writer.finish, [pass_id], tf.bool)
                return tf.logical_and(tf.reshape(done, ()), False)

            # The finish element is a 0-image block, dropped, that comes after every write:
            # the map that writes is sequential, and the concatenation reaches it only once
            # the source is exhausted.
            empty = tf.data.Dataset.from_tensors(
                (
                    tf.zeros((0, *layout.image_shape), tf.uint8),
                    tf.zeros((0,), layout.label_dtype),
                )
            )
            first = layout.blocks(decoded).map(write).concatenate(empty.filter(finish))
            if shuffle:
                first = first.shuffle(max(1, first_pass_shuffle_blocks))
            # ``take(0)`` never starts its input: one of the two runs.
            first_count = tf.where(complete, tf.constant(0, tf.int64), -1)
            return first.take(first_count).concatenate(cached.take(-1 - first_count))

        return tf.data.Dataset.range(1).flat_map(epoch)


_PASSES_LOCK = threading.Lock()
_PASSES: dict[str, tuple[int, str]] = {}
"""The pass writing each cache (by final path) in this process: its id and directory."""
_pass_ids = iter(range(1, 2**62))


@atexit.register
def _remove_unfinished_passes() -> None:
    """Iterators dropped mid-epoch leave a partial cache behind: remove it on exit."""
    with _PASSES_LOCK:
        for _, partial in _PASSES.values():
            shutil.rmtree(partial, ignore_errors=True)
        _PASSES.clear()


class _FirstPass:
    """Writes the cache during an epoch: called by the pipeline's ``py_function`` ops.

    One pass per cache at a time in a process: a new epoch (a new iterator) before a pass
    finished supersedes it (its iterator was dropped, or still runs and serves its images
    without writing them), and removes its files.
    """

    def __init__(self, cache: DiskCache, key: str, layout: _BlockLayout) -> None:
        self.cache, self.key, self.layout = cache, key, layout
        self.final = os.path.join(cache.root, key)
        self.written = 0
        self.blocks = 0

    def begin(self) -> tf.Tensor:
        with _PASSES_LOCK:
            if os.path.isdir(self.final):
                return tf.constant(-1, tf.int64)
            if self.final in _PASSES:
                shutil.rmtree(_PASSES.pop(self.final)[1], ignore_errors=True)
            self.cache._remove_partials(self.key)
            partial = f"{self.final}{_PARTIAL}{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.makedirs(partial)
            pass_id = next(_pass_ids)
            _PASSES[self.final] = (pass_id, partial)
            self.written = self.blocks = 0
        logger.info("decoding the split once, during this epoch, into %s", partial)
        return tf.constant(pass_id, tf.int64)

    def _current(self, pass_id: tf.Tensor) -> str | None:
        """The pass's directory if it is still the one writing (call with the lock held)."""
        current = _PASSES.get(self.final)
        return current[1] if current is not None and current[0] == int(pass_id) else None

    def _abandon(self, partial: str, reason: str) -> None:
        logger.warning("disk cache %s not written: %s", self.final, reason)
        del _PASSES[self.final]
        shutil.rmtree(partial, ignore_errors=True)

    def write(self, pass_id: tf.Tensor, images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with _PASSES_LOCK:
            partial = self._current(pass_id)
            if partial is not None:
                try:
                    self.layout.write_block(partial, self.blocks, images.numpy(), labels.numpy())
                except OSError as error:  # disk full, say: the epoch goes on, from memory
                    self._abandon(partial, str(error))
                else:
                    self.blocks += 1
                    self.written += len(labels)
        return tf.constant(True)

    def finish(self, pass_id: tf.Tensor) -> tf.Tensor:
        with _PASSES_LOCK:
            partial = self._current(pass_id)
            if partial is None:
                return tf.constant(True)
            if self.written != self.layout.num_examples:
                self._abandon(
                    partial,
                    f"the split holds {self.written} examples, not the "
                    f"{self.layout.num_examples} it declares",
                )
                return tf.constant(True)
            del _PASSES[self.final]
            try:
                os.rename(partial, self.final)
            except OSError:
                if not os.path.isdir(self.final):
                    raise
                # Another process with the same key finished first: its copy is as good.
                logger.info("disk cache %s appeared meanwhile; using it", self.final)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
        logger.info("disk cache %s written: later epochs read it", self.final)
        return tf.constant(True)


_BLOCK = "block-"
_IMAGES = ".images"
_LABELS = ".labels"


@dataclass(frozen=True)
class _BlockLayout:
    """Blocks of raw uint8 pixels: block ``i`` holds images ``i * block_size`` onwards, the
    pixels of one image after another in ``block-<i>.images`` and their labels in
    ``block-<i>.labels``. Each file is read whole (``read_file`` + ``decode_raw``), so
    tf.data's per-element work (read, parse, pass along) is paid once per block rather than
    once per image: ~0.07 CPU-ms per 300px image through to batches, against ~0.11 for one
    fixed-length record per image followed by a shuffle buffer and ``batch`` (the copies
    of the pixels are most of what remains: read, ``decode_raw``, ``rebatch``).
    """

    image_shape: tuple[int, ...]
    label_dtype: tf.DType
    num_examples: int
    block_size: int

    @classmethod
    def of(cls, element_spec: object, num_examples: int, block_size: int) -> _BlockLayout:
        if num_examples < 1 or block_size < 1:
            raise ValueError(f"num_examples {num_examples} and block_size {block_size} < 1")
        match element_spec:
            case (tf.TensorSpec() as image, tf.TensorSpec() as label) if (
                image.dtype == tf.uint8
                and image.shape.is_fully_defined()
                and label.shape.rank in (0, None)  # None: from a py_function, say
                and label.dtype.is_integer
            ):
                return cls(tuple(image.shape.as_list()), label.dtype, num_examples, block_size)
        raise ValueError(
            "the disk cache stores (image, label) pairs: a uint8 image of a static shape and "
            f"an integer scalar label; got {element_spec}"
        )

    @property
    def num_blocks(self) -> int:
        return -(-self.num_examples // self.block_size)

    def blocks(self, decoded: tf.data.Dataset) -> tf.data.Dataset:
        """``decoded`` in blocks, as they are written."""
        return decoded.batch(self.block_size)

    def write_block(self, path: str, index: int, images: np.ndarray, labels: np.ndarray) -> None:
        """One block's files. ``images`` is C-contiguous: one write, no copy but the kernel's."""
        name = os.path.join(path, f"{_BLOCK}{index:06d}")
        values = np.ascontiguousarray(labels, self.label_dtype.as_numpy_dtype)
        if values.shape != (len(images),):
            raise ValueError(f"the disk cache stores scalar labels; got shape {values.shape[1:]}")
        with open(name + _IMAGES, "wb") as images_file:
            images_file.write(np.ascontiguousarray(images).data)
        values.tofile(name + _LABELS)

    def check(self, path: str) -> None:
        """Raise unless ``path`` holds this layout's first and last blocks."""
        for index in (0, self.num_blocks - 1):
            if not os.path.isfile(os.path.join(path, f"{_BLOCK}{index:06d}{_LABELS}")):
                raise ValueError(
                    f"the disk cache {path} lacks block {index}: not written by this release "
                    f"({CACHE_FORMAT}) for this split; remove it"
                )

    def read(self, path: str, *, shuffle: bool, parallel_reads: int) -> tf.data.Dataset:
        """The blocks under ``path``, which need not exist until an iterator reads them."""
        prefix = os.path.join(path, _BLOCK)

        def load(index: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            name = tf.strings.join([prefix, tf.strings.as_string(index, width=6, fill="0")])
            images = tf.io.decode_raw(tf.io.read_file(name + _IMAGES), tf.uint8)
            labels = tf.io.decode_raw(tf.io.read_file(name + _LABELS), self.label_dtype)
            return tf.reshape(images, (-1, *self.image_shape)), labels

        indices = tf.data.Dataset.range(self.num_blocks)
        if shuffle:
            # The whole split's block order, drawn anew every epoch (a few bytes per block).
            indices = indices.shuffle(self.num_blocks, reshuffle_each_iteration=True)
        return indices.map(load, num_parallel_calls=parallel_reads, deterministic=not shuffle)
