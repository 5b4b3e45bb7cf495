"""Decode once per job: a split too large for memory is decoded into uint8 files on local disk.

The first pass decodes and resizes every image once and writes their raw pixels and labels,
in blocks of a few images (one file each, read back whole), into
``<key>.partial-<pid>-<random>``, then renames that directory to
``<key>``: a rename is atomic on a local file system, so a complete cache is the only thing
that can carry the final name. A writer killed half-way leaves a ``.partial-*`` directory
that is never read and is removed by the next build for the same key.

The key holds the split's identity, the image size, the example count and the replica's
place in the cluster: two workers on one host, a different image size or another dataset
version never share files.

A bounded cache (``max_bytes``, which the local backend sets for the one directory all of
a stack's replicas share) makes room by removing the least recently used complete splits.
A process using a split holds a shared ``flock`` on ``<key>.lock`` for as long as it runs
(the kernel drops it when the process ends, however it ends), and a split is removed only
under an exclusive one: never while a live job reads it.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
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
CACHE_FORMAT = "blocks2"
"""In every key: a cache written by an earlier release, in another layout, is never read
(cache directories outlive jobs on a machine that runs several)."""


def decoded_size_bytes(num_examples: int, image_size: int) -> int:
    """The decoded uint8 split: examples x height x width x 3 channels."""
    return num_examples * image_size * image_size * 3


_LOCK = ".lock"
_held: dict[str, int] = {}
"""Lock file -> the descriptor holding a shared lock on it, for this process's lifetime."""


def _tree_bytes(path: str) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except FileNotFoundError:
                continue  # removed meanwhile (a writer's partial)
    return total


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
    max_bytes: int | None = None
    """At most this much under ``root``: least recently used splits not in use are removed
    to make room, and a split that cannot fit is not cached. None: no bound (a directory
    of one job's own)."""

    def key(self, identity: str, image_size: int, num_examples: int) -> str:
        """A readable, collision-free directory name for one split on one replica."""
        replica = f"{self.task_type}{self.task_index}-of{self.num_workers}"
        digest = hashlib.sha256(
            f"{identity}|{image_size}|{num_examples}|{replica}|{CACHE_FORMAT}".encode()
        ).hexdigest()[:12]
        return f"{_slug(identity)}-{image_size}px-{num_examples}-{replica}-{CACHE_FORMAT}-{digest}"

    def has_room(self, needed_bytes: int, key: str | None = None) -> bool:
        """Whether a split of ``needed_bytes`` decoded can be written under ``key`` (True
        at once when it is there already), making room in a bounded cache."""
        os.makedirs(self.root, exist_ok=True)
        if key is not None and os.path.isdir(os.path.join(self.root, key)):
            return True
        if self.max_bytes is not None and not self._make_room(int(needed_bytes * _FORMAT_OVERHEAD)):
            return False
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

    def _make_room(self, size: int) -> bool:
        assert self.max_bytes is not None
        if size > self.max_bytes:
            logger.info(
                "disk cache skipped: the decoded split needs %.1f GiB, more than the cache's "
                "bound of %.1f GiB under %s; every epoch decodes again",
                size / 1024**3,
                self.max_bytes / 1024**3,
                self.root,
            )
            return False
        splits = []  # (last use, name, bytes) of complete splits
        used = 0
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name.endswith(_LOCK) or not os.path.isdir(path):
                continue
            nbytes = _tree_bytes(path)
            used += nbytes
            if _PARTIAL not in name:
                splits.append((os.stat(path).st_mtime, name, nbytes))
        for _, name, nbytes in sorted(splits):
            if used + size <= self.max_bytes:
                break
            if self._remove_unused(name):
                used -= nbytes
        if used + size > self.max_bytes:
            logger.info(
                "disk cache skipped: %s is at its bound of %.1f GiB with splits in use; "
                "every epoch decodes again",
                self.root,
                self.max_bytes / 1024**3,
            )
            return False
        return True

    def _remove_unused(self, name: str) -> bool:
        """Remove the split ``name`` unless a live process holds it."""
        lock = os.path.join(self.root, name + _LOCK)
        if lock in _held:
            return False
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        try:
            logger.info("disk cache: removing %s, the least recently used, to make room", name)
            shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
            os.unlink(lock)
        finally:
            os.close(descriptor)
        return True

    def _hold(self, key: str) -> bool:
        """Hold ``key`` (shared) for this process's lifetime, marking it used now; False
        when it was removed before the hold was taken."""
        if self.max_bytes is None:
            return True  # unbounded: nothing removes splits, nothing to hold
        lock = os.path.join(self.root, key + _LOCK)
        if lock not in _held:
            descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(descriptor, fcntl.LOCK_SH)
            _held[lock] = descriptor
        final = os.path.join(self.root, key)
        if not os.path.isdir(final):
            os.close(_held.pop(lock))
            return False
        os.utime(final)
        return True

    def _remove_partials(self, key: str) -> None:
        """Remove what writers that died left behind; a live writer's files stay (two local
        trials of the same split may write the same key at once)."""
        for name in os.listdir(self.root):
            if name.startswith(key + _PARTIAL) and not _writer_alive(name):
                logger.info("removing a half-written disk cache %s", name)
                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)

    def directory(
        self,
        key: str,
        write: Callable[[str], None],
    ) -> str:
        """The complete cache directory for ``key``, calling ``write(path)`` if there is none.

        ``write`` must fill ``path`` completely (e.g. ``Dataset.save``); only then is it
        renamed to its final name.
        """
        final = os.path.join(self.root, key)
        if os.path.isdir(final) and self._hold(key):
            logger.info("disk cache %s is complete: no decoding in this job", final)
            return final
        os.makedirs(self.root, exist_ok=True)
        self._remove_partials(key)
        partial = f"{final}{_PARTIAL}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        logger.info("decoding the split once into %s", partial)
        try:
            write(partial)
            os.rename(partial, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            # Another process with the same key finished first: its copy is as good.
            logger.info("disk cache %s appeared meanwhile; using it", final)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        self._hold(key)
        logger.info("disk cache %s written", final)
        return final

    def decoded(
        self,
        decoded: tf.data.Dataset,
        *,
        key: str,
        num_examples: int,
        block_size: int,
        shuffle: bool,
    ) -> tf.data.Dataset:
        """``decoded`` (``(uint8 image, label)`` pairs of one static shape) saved once under
        ``key`` in blocks of ``block_size`` images, read back as blocks: ``(images, labels)``
        with a leading dimension of ``block_size`` (less for the last block), in an order
        shuffled anew every epoch if ``shuffle``. ``num_examples`` is what ``decoded`` holds."""
        layout = _BlockLayout.of(decoded.element_spec, num_examples, block_size)
        path = self.directory(key, lambda partial: layout.write(decoded, partial))
        return layout.read(path, shuffle=shuffle)


_BLOCK = "block-"
_LABELS = "labels"
_BLOCK_SIZE = "block_size"
_WRITE_BLOCKS = 2
"""Blocks handed from tf.data to the writer at a time (fewer Python iterations)."""


@dataclass(frozen=True)
class _BlockLayout:
    """Blocks of raw uint8 pixels: block ``i`` holds images ``i * block_size`` onwards, the
    pixels of one image after another, in the file ``block-<i>``; every label, in order, in
    the file ``labels``, loaded into the pipeline when it is built; the block size in the
    file ``block_size``.

    Each block file is read whole (``read_file`` + ``decode_raw``), so tf.data's
    per-element work (read, parse, pass along) is paid once per block rather than once per
    image: ~0.06-0.07 CPU-ms per 300px image through to batches, against ~0.11 for one
    fixed-length record per image followed by a shuffle buffer and ``batch``. The copies
    of the pixels are most of what remains (read, ``decode_raw``, ``rebatch``).
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

    def write(self, decoded: tf.data.Dataset, path: str) -> None:
        os.makedirs(path)
        labels: list[np.ndarray] = []
        block = 0
        # tf.data decodes on its threads meanwhile; each write (larger than the file buffer,
        # so unbuffered) is one copy into the page cache, with the GIL released.
        chunks = decoded.batch(self.block_size * _WRITE_BLOCKS).prefetch(1)
        options = tf.data.Options()
        # Without the autotuner, AUTOTUNE parallelism is every core. With it, this pass
        # settled on one decode at a time in 2 of 5 runs on 2 cores (780 against 1,100
        # cassava images/s, the same CPU per image): the writer's loop, not tf.data, is the
        # consumer here, and the autotuner's model misreads it.
        options.autotune.enabled = False
        for images, chunk_labels in chunks.with_options(options):
            pixels = images.numpy()
            for start in range(0, len(pixels), self.block_size):
                with open(os.path.join(path, f"{_BLOCK}{block:06d}"), "wb") as block_file:
                    block_file.write(pixels[start : start + self.block_size].data)
                block += 1
            labels.append(chunk_labels.numpy())
        values = np.concatenate(labels) if labels else np.zeros(0)
        if values.shape != (self.num_examples,):
            raise ValueError(
                f"the disk cache stores {self.num_examples} scalar labels (the split's declared "
                f"size); got labels of shape {values.shape}"
            )
        values.astype(self.label_dtype.as_numpy_dtype).tofile(os.path.join(path, _LABELS))
        with open(os.path.join(path, _BLOCK_SIZE), "w") as block_size_file:
            block_size_file.write(f"{self.block_size}\n")

    def read(self, path: str, *, shuffle: bool) -> tf.data.Dataset:
        """The blocks under ``path``, in the block size they were written in (a job with
        another batch size reads the same cache)."""
        try:
            with open(os.path.join(path, _BLOCK_SIZE)) as block_size_file:
                written = dataclasses.replace(self, block_size=int(block_size_file.read()))
            labels = np.fromfile(os.path.join(path, _LABELS), self.label_dtype.as_numpy_dtype)
        except (OSError, ValueError):
            written, labels = self, np.zeros(0)
        last_block = os.path.join(path, f"{_BLOCK}{written.num_blocks - 1:06d}")
        if labels.shape != (self.num_examples,) or not os.path.isfile(last_block):
            raise ValueError(
                f"the disk cache {path} is not a complete {CACHE_FORMAT} cache of "
                f"{self.num_examples} examples; remove it"
            )
        all_labels = tf.constant(labels)
        prefix = os.path.join(path, _BLOCK)
        block_size = written.block_size

        def load(index: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            name = tf.strings.join([prefix, tf.strings.as_string(index, width=6, fill="0")])
            images = tf.io.decode_raw(tf.io.read_file(name), tf.uint8)
            start = index * block_size
            count = tf.minimum(tf.constant(block_size, tf.int64), self.num_examples - start)
            return (
                tf.reshape(images, (-1, *self.image_shape)),
                tf.slice(all_labels, [start], [count]),
            )

        indices = tf.data.Dataset.range(written.num_blocks)
        if shuffle:
            # The whole split's block order, drawn anew every epoch (a few bytes per block).
            indices = indices.shuffle(written.num_blocks, reshuffle_each_iteration=True)
        # One block read at a time: ~15k images/s at 300px on one core; two at a time read
        # no faster on 2 cores and raised the peak by ~15 MiB.
        return indices.map(load, num_parallel_calls=1, deterministic=not shuffle)
