"""The disk cache of decoded splits: written once, never half-read, keyed per replica."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest
import tensorflow as tf

import trainer.disk_cache as disk_cache_module
from trainer.data import EncodedSplit, ImagePipeline
from trainer.disk_cache import DiskCache

REPO = Path(__file__).resolve().parents[2]
SIZE = 16


def numbered_split(num_examples: int, identity: str = "numbered") -> EncodedSplit:
    """PNGs whose label is their index, so each image can be told apart after decoding."""
    pixels = np.zeros((8, 8, 3), np.uint8)
    encoded = tf.io.encode_png(pixels).numpy()
    examples = tf.data.Dataset.from_tensor_slices(
        ([encoded] * num_examples, np.arange(num_examples, dtype=np.int64))
    )
    return EncodedSplit(examples, num_examples, num_classes=num_examples, identity=identity)


def counting(split: EncodedSplit) -> tuple[EncodedSplit, list[int]]:
    """The split with every read of an encoded example recorded."""
    reads: list[int] = []

    def record(label: tf.Tensor) -> tf.Tensor:
        reads.append(int(label))
        return label

    examples = split.examples.map(
        lambda encoded, label: (encoded, tf.py_function(record, [label], tf.int64))
    )
    return EncodedSplit(examples, split.num_examples, split.num_classes, split.identity), reads


def disk_pipeline(root: Path, **replica: object) -> ImagePipeline:
    # No memory budget: without the disk cache every epoch would decode again.
    cache = DiskCache(str(root), **replica)  # type: ignore[arg-type]
    return ImagePipeline(SIZE, 4, cache_budget_bytes=0, disk_cache=cache)


def epoch_labels(dataset: tf.data.Dataset) -> list[int]:
    return [int(label) for _, labels in dataset for label in labels.numpy()]


def test_split_is_decoded_once_and_later_epochs_read_no_encoded_data(tmp_path: Path) -> None:
    split, reads = counting(numbered_split(40))
    dataset = disk_pipeline(tmp_path).build(split, training=True)
    epochs = [epoch_labels(dataset) for _ in range(3)]
    assert sorted(reads) == list(range(40))  # every example read once, at build time
    for labels in epochs:
        assert sorted(labels) == list(range(40))
    # Later epochs still reshuffle the cached images.
    assert len({tuple(labels) for labels in epochs}) == 3
    (cache,) = [p for p in tmp_path.iterdir()]
    assert ".partial-" not in cache.name

    # A new job (a restart) with the same key reads the cache and no encoded example.
    again, reads_again = counting(numbered_split(40))
    assert sorted(epoch_labels(disk_pipeline(tmp_path).build(again, training=True))) == list(
        range(40)
    )
    assert reads_again == []


def test_each_image_comes_back_whole_with_its_own_label(tmp_path: Path) -> None:
    # Solid colours: image i is filled with i, so a pixel tells which label it belongs with.
    encoded = [tf.io.encode_png(np.full((8, 8, 3), i, np.uint8)).numpy() for i in range(30)]
    examples = tf.data.Dataset.from_tensor_slices((encoded, np.arange(30, dtype=np.int64)))
    split = EncodedSplit(examples, 30, num_classes=30, identity="solid")
    for _ in range(2):  # written, then read from the complete cache
        dataset = disk_pipeline(tmp_path).build(split, training=True)
        pairs = [
            (int(label), np.unique(image).tolist())
            for images, labels in dataset
            for image, label in zip(images.numpy(), labels.numpy(), strict=True)
        ]
        assert sorted(pairs) == [(i, [i]) for i in range(30)]
        assert all(images.shape[1:] == (SIZE, SIZE, 3) for images, _ in dataset)


def test_evaluation_split_keeps_its_order(tmp_path: Path) -> None:
    dataset = disk_pipeline(tmp_path).build(numbered_split(10), training=False)
    assert sorted(epoch_labels(dataset)) == list(range(10))


def test_half_written_cache_is_never_read_and_is_rebuilt(tmp_path: Path) -> None:
    cache = DiskCache(str(tmp_path))
    key = cache.key("numbered", SIZE, 12)
    # What a writer killed mid-save leaves: a partial directory with some files.
    partial = tmp_path / f"{key}.partial-12345-deadbeef"
    tf.data.Dataset.range(3).save(str(partial))
    split, reads = counting(numbered_split(12))
    dataset = disk_pipeline(tmp_path).build(split, training=True)
    assert sorted(epoch_labels(dataset)) == list(range(12))
    assert sorted(reads) == list(range(12))  # rebuilt from the source
    assert sorted(p.name for p in tmp_path.iterdir()) == [key]


@pytest.mark.slow
def test_writer_killed_mid_save_leaves_nothing_a_later_job_reads(tmp_path: Path) -> None:
    # The writer stops for good at image 100, after saying so: killed there, mid-save.
    stuck = tmp_path.parent / "writer-stuck"
    script = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
import numpy as np, tensorflow as tf
from trainer.disk_cache import DiskCache
def stop_at_100(x):
    if int(x) == 100:
        open({str(stuck)!r}, "w").close()
        while True:
            time.sleep(1)
    return x
images = tf.data.Dataset.range(400).map(
    lambda i: (tf.fill((8, 8, 3), tf.cast(i % 200, tf.uint8)),
               tf.py_function(stop_at_100, [i], tf.int64)))
DiskCache({str(tmp_path)!r}).decoded(
    images, key="k", num_examples=400, block_size=10, shuffle=True
)
"""
    writer = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    deadline = time.monotonic() + 120
    while not stuck.exists():
        assert writer.poll() is None, "the writer ended before it was killed"
        assert time.monotonic() < deadline, "the writer never reached image 100"
        time.sleep(0.05)
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert not (tmp_path / "k").exists()
    assert list(tmp_path.glob("k.partial-*"))

    rebuilt = (
        DiskCache(str(tmp_path))
        .decoded(
            tf.data.Dataset.range(5).map(lambda i: (tf.fill((8, 8, 3), tf.cast(i, tf.uint8)), i)),
            key="k",
            num_examples=5,
            block_size=2,
            shuffle=True,
        )
        .unbatch()
    )
    assert sorted((int(label), int(image[0, 0, 0])) for image, label in rebuilt) == [
        (i, i) for i in range(5)
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]


def test_not_enough_disk_skips_the_cache_with_a_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    usage = namedtuple("usage", "total used free")
    free = disk_cache_module.DISK_HEADROOM_BYTES + 100  # less than headroom + 40 images
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**12, 0, free))
    split, reads = counting(numbered_split(40))
    with caplog.at_level(logging.INFO, logger="trainer"):
        dataset = disk_pipeline(tmp_path).build(split, training=True)
        for _ in range(2):
            assert sorted(epoch_labels(dataset)) == list(range(40))
    assert "disk cache skipped" in caplog.text
    assert "decoded cache: none" in caplog.text
    assert len(reads) == 80  # decoded again in every epoch
    assert list(tmp_path.iterdir()) == []


def test_disk_cache_comes_before_memory_which_serves_when_the_disk_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fits_memory = ImagePipeline(SIZE, 4, disk_cache=DiskCache(str(tmp_path)))
    assert fits_memory.fits_cache(40)
    with caplog.at_level(logging.INFO, logger="trainer"):
        split, reads = counting(numbered_split(40))
        for _ in range(2):
            assert sorted(epoch_labels(fits_memory.build(split, training=True))) == list(range(40))
        assert "decoded cache: disk" in caplog.text
        assert "decoded cache: memory" not in caplog.text
        assert len(reads) == 40  # the second build found the cache complete
        caplog.clear()
        usage = namedtuple("usage", "total used free")
        monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**12, 0, 0))
        split, reads = counting(numbered_split(41))
        dataset = fits_memory.build(split, training=True)
        for _ in range(2):
            assert sorted(epoch_labels(dataset)) == list(range(41))
        assert "decoded cache: memory" in caplog.text
        assert len(reads) == 41


def test_a_live_writers_partial_cache_is_left_alone(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f"k.partial-{sleeper.pid}-0000abcd"
        dead = tmp_path / "k.partial-999999999-0000abcd"
        live.mkdir()
        dead.mkdir()
        cache = DiskCache(str(tmp_path))
        images = tf.data.Dataset.range(3).map(
            lambda i: (tf.fill((8, 8, 3), tf.cast(i, tf.uint8)), i)
        )
        loaded = cache.decoded(
            images, key="k", num_examples=3, block_size=2, shuffle=False
        ).unbatch()
        assert sorted(int(label) for _, label in loaded) == [0, 1, 2]
        assert live.exists()
        assert not dead.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_enough_disk_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    usage = namedtuple("usage", "total used free")
    free = disk_cache_module.DISK_HEADROOM_BYTES + 10 * 1024**2
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**12, 0, free))
    assert DiskCache(str(tmp_path)).has_room(9 * 1024**2)
    assert not DiskCache(str(tmp_path)).has_room(10 * 1024**2)


def test_keys_differ_per_replica_and_per_setting(tmp_path: Path) -> None:
    two_workers = [
        DiskCache(str(tmp_path), task_type="chief", task_index=0, num_workers=2),
        DiskCache(str(tmp_path), task_type="worker", task_index=0, num_workers=2),
    ]
    keys = {cache.key("tfds-cassava-0.1.0-train", 300, 5656) for cache in two_workers}
    assert len(keys) == 2
    single = DiskCache(str(tmp_path))
    variants = {
        single.key("tfds-cassava-0.1.0-train", 300, 5656),
        single.key("tfds-cassava-0.1.0-train", 224, 5656),
        single.key("tfds-cassava-0.1.0-validation", 300, 5656),
        single.key("tfds-cassava-0.1.0-train", 300, 5000),
        DiskCache(str(tmp_path), num_workers=2).key("tfds-cassava-0.1.0-train", 300, 5656),
    }
    assert len(variants) == 5
    assert all("/" not in key for key in keys | variants)


def test_two_workers_on_one_host_write_separate_complete_caches(tmp_path: Path) -> None:
    for task_type in ("chief", "worker"):
        dataset = disk_pipeline(tmp_path, task_type=task_type, num_workers=2).build(
            numbered_split(8), training=True
        )
        assert sorted(epoch_labels(dataset)) == list(range(8))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2
    assert "chief0-of2" in names[0] and "worker0-of2" in names[1]


def solid_split(num_examples: int, identity: str = "solid") -> EncodedSplit:
    """Image i is filled with i % 256: a pixel tells which label it belongs with."""
    encoded = [
        tf.io.encode_png(np.full((8, 8, 3), i % 256, np.uint8)).numpy() for i in range(num_examples)
    ]
    examples = tf.data.Dataset.from_tensor_slices(
        (encoded, np.arange(num_examples, dtype=np.int64))
    )
    return EncodedSplit(examples, num_examples, num_classes=num_examples, identity=identity)


def epoch_pairs(dataset: tf.data.Dataset) -> tuple[list[tuple[int, int]], list[int]]:
    """(label, pixel value) per image in the order served, and the batch sizes."""
    pairs, sizes = [], []
    for images, labels in dataset:
        sizes.append(int(labels.shape[0]))
        for image, label in zip(images.numpy(), labels.numpy(), strict=True):
            values = np.unique(image)
            assert len(values) == 1, "an image came back mixed with another"
            pairs.append((int(label), int(values[0])))
    return pairs, sizes


def test_blocks_round_trip_every_image_and_label_once_per_epoch(tmp_path: Path) -> None:
    # Batch 24: blocks of 3 images (24 // MIN_BLOCKS_PER_BATCH); 40 = 13 blocks of 3 + 1.
    pipeline = ImagePipeline(SIZE, 24, cache_budget_bytes=0, disk_cache=DiskCache(str(tmp_path)))
    assert pipeline.disk_cache_block_size() == 3
    split, reads = counting(solid_split(40))
    for build in range(2):  # written, then a new job reads the complete cache
        dataset = pipeline.build(split, training=True)
        orders = []
        for _ in range(3):
            pairs, sizes = epoch_pairs(dataset)
            assert sorted(pairs) == [(i, i) for i in range(40)]
            assert sizes == [24, 16]  # full batches across block boundaries, then the rest
            orders.append([label for label, _ in pairs])
        assert len({tuple(order) for order in orders}) == 3  # a new block order every epoch
        for order in orders:
            # Blocks stay whole: images 3k, 3k+1, 3k+2 are served one after another.
            starts = [i for i, label in enumerate(order) if label % 3 == 0]
            for start in starts:
                block = list(range(order[start], min(order[start] + 3, 40)))
                assert order[start : start + len(block)] == block
        assert sorted(reads) == list(range(40)), f"build {build}"  # decoded once, in all
    (cache,) = tmp_path.iterdir()
    assert disk_cache_module.CACHE_FORMAT in cache.name


def test_a_job_with_another_batch_size_reads_the_same_cache(tmp_path: Path) -> None:
    def pipeline(batch: int) -> ImagePipeline:
        cache = DiskCache(str(tmp_path))
        return ImagePipeline(SIZE, batch, cache_budget_bytes=0, disk_cache=cache)

    split, reads = counting(solid_split(30))
    assert pipeline(40).disk_cache_block_size() == 5
    assert pipeline(16).disk_cache_block_size() == 2
    for batch, sizes in ((40, [30]), (16, [16, 14])):
        pairs, served = epoch_pairs(pipeline(batch).build(split, training=True))
        assert sorted(pairs) == [(i, i) for i in range(30)]
        assert served == sizes
    assert sorted(reads) == list(range(30))  # written once, in blocks of 5, read in both


def test_evaluation_reads_the_blocks_in_order(tmp_path: Path) -> None:
    pipeline = ImagePipeline(SIZE, 16, cache_budget_bytes=0, disk_cache=DiskCache(str(tmp_path)))
    for _ in range(2):
        pairs, sizes = epoch_pairs(pipeline.build(solid_split(21), training=False))
        assert pairs == [(i, i) for i in range(21)]
        assert sizes == [16, 5]


def test_an_incomplete_cache_under_the_final_name_is_refused(tmp_path: Path) -> None:
    pipeline = ImagePipeline(SIZE, 24, cache_budget_bytes=0, disk_cache=DiskCache(str(tmp_path)))
    pipeline.build(solid_split(10), training=True)
    (cache,) = tmp_path.iterdir()
    (cache / "labels").write_bytes((cache / "labels").read_bytes()[:-8])  # one label short
    with pytest.raises(ValueError, match="not a complete"):
        pipeline.build(solid_split(10), training=True)


def test_batches_from_blocks_split_per_replica_under_a_distribution_strategy(
    tmp_path: Path,
) -> None:
    from tensorflow.python.data.experimental.ops import distribute

    dataset = disk_pipeline(tmp_path).build(numbered_split(10), training=True)
    # ``rebatch`` hides the batch size from tf.distribute, which then splits every global
    # batch into one sub-batch per replica (its fallback): the same as for ``batch``.
    assert int(distribute.compute_batch_size(dataset)) == -1
    per_replica = distribute._LegacyRebatchDataset(dataset, num_replicas=2)
    sizes = [int(labels.shape[0]) for _, labels in per_replica]
    assert sizes == [2, 2, 2, 2, 1, 1]  # global batches of 4, 4, 2
    assert sorted(int(label) for _, labels in per_replica for label in labels) == list(range(10))


def fill(cache: DiskCache, key: str, size: int) -> str:
    def write(path: str) -> None:
        os.makedirs(path)
        Path(path, "block-000000").write_bytes(b"x" * size)

    return cache.directory(key, write)


def test_a_bounded_cache_removes_the_least_recently_used_split_to_make_room(
    tmp_path: Path,
) -> None:
    writer = DiskCache(str(tmp_path), max_bytes=int(2.5 * 1024**2))
    old = fill(writer, "old", 1024**2)
    recent = fill(writer, "recent", 1024**2)
    os.utime(old, (1, 1))  # used long ago
    # Held by nobody now: their readers (this process's cache objects) are gone, as when
    # the process that used them ends.
    for descriptor in disk_cache_module._held.values():
        os.close(descriptor)
    disk_cache_module._held.clear()
    assert writer.has_room(1024**2 // 2, key="new")
    assert not os.path.exists(old) and os.path.isdir(recent)


def test_a_split_in_use_by_a_live_reader_is_never_removed(tmp_path: Path) -> None:
    reader = DiskCache(str(tmp_path), max_bytes=int(1.5 * 1024**2))
    in_use = fill(reader, "in-use", 1024**2)
    # Another process's cache (its own open file), bounded the same way, needs room.
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from trainer.disk_cache import DiskCache; "
            f"print(DiskCache({str(tmp_path)!r}, max_bytes={int(1.5 * 1024**2)})"
            ".has_room(1024**2, key='new'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert other.stdout.strip() == "False"
    assert os.path.isdir(in_use)


def test_a_split_larger_than_the_bound_skips_the_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert not DiskCache(str(tmp_path), max_bytes=1024**2).has_room(2 * 1024**2)
    assert "disk cache skipped" in caplog.text and "bound" in caplog.text


def test_the_trainer_says_where_its_cache_is_and_bounds_it_as_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from trainer.cluster import ClusterRole
    from trainer.config import CACHE_DIR_ENV, CACHE_MAX_BYTES_ENV, parse_config
    from trainer.training import disk_cache_for

    argv = ["--workload", "cassava", "--job-dir", "/j"]
    shared = parse_config(argv, environ={CACHE_DIR_ENV: "/root/decoded", CACHE_MAX_BYTES_ENV: "5"})
    with caplog.at_level(logging.INFO, logger="trainer"):
        cache = disk_cache_for(shared, ClusterRole("worker", 1))
    assert cache is not None and (cache.root, cache.max_bytes) == ("/root/decoded", 5)
    assert (cache.task_type, cache.task_index) == ("worker", 1)
    assert "decoded-image disk cache: /root/decoded (this machine's local disk" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainer"):
        assert (
            disk_cache_for(parse_config([*argv, "--no-disk-cache"], environ={}), ClusterRole())
            is None
        )
    assert "decoded-image disk cache: off" in caplog.text
