"""Decode once per job: a split too large for memory is decoded into uint8 files on local disk.

The first pass decodes and resizes every image once and writes them with
``tf.data.Dataset.save`` into ``<key>.partial-<pid>-<random>``, then renames that directory to
``<key>``: a rename is atomic on a local file system, so a complete cache is the only thing
that can carry the final name. A writer killed half-way leaves a ``.partial-*`` directory
that is never read and is removed by the next build for the same key.

The key holds the split's identity, the image size, the example count and the replica's
place in the cluster: two workers on one host, a different image size or another dataset
version never share files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import tensorflow as tf

__all__ = ["DISK_HEADROOM_BYTES", "DiskCache", "decoded_size_bytes"]

logger = logging.getLogger(__name__)

DISK_HEADROOM_BYTES = 1024**3
"""Free space left untouched after the cache is written (logs, checkpoints, the OS)."""
_FORMAT_OVERHEAD = 1.05
"""Record framing and the label and index stored next to each image, generously."""
_PARTIAL = ".partial-"


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
            f"{identity}|{image_size}|{num_examples}|{replica}".encode()
        ).hexdigest()[:12]
        return f"{_slug(identity)}-{image_size}px-{num_examples}-{replica}-{digest}"

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
        if os.path.isdir(final):
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
        logger.info("disk cache %s written", final)
        return final

    def decoded(
        self,
        decoded: tf.data.Dataset,
        *,
        key: str,
        shard_size: int,
        interleave: int,
    ) -> tf.data.Dataset:
        """``decoded`` saved once under ``key`` in shards of ``shard_size`` elements, read back
        with the shard order shuffled every epoch and ``interleave`` shards read at a time."""

        def write(path: str) -> None:
            indexed = decoded.enumerate()
            indexed.save(path, shard_func=lambda index, _element: index // shard_size)

        def reader(shards: tf.data.Dataset) -> tf.data.Dataset:
            return shards.shuffle(1 << 16, reshuffle_each_iteration=True).interleave(
                lambda shard: shard,
                cycle_length=interleave,
                num_parallel_calls=interleave,
                deterministic=False,
            )

        path = self.directory(key, write)
        loaded = tf.data.Dataset.load(path, reader_func=reader)
        return loaded.map(lambda _index, element: element)
