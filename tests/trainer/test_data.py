"""The input pipeline, in-process on TFDS mock data and generated images (no network)."""

from __future__ import annotations

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from trainer.data import (
    ImagePipeline,
    decode_and_resize,
    load_tfds_split,
    synthetic_split,
)


@pytest.mark.parametrize(
    ("name", "split", "num_classes"),
    [("cassava", "train", 5), ("horses_or_humans", "train", 2), ("horses_or_humans", "test", 2)],
)
def test_tfds_split_gives_uint8_batches_of_the_requested_size(
    name: str, split: str, num_classes: int
) -> None:
    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        loaded = load_tfds_split(name, split, data_dir=None, shuffle_files=True)
        assert loaded.num_classes == num_classes
        assert loaded.examples.element_spec[0].dtype == tf.string  # still encoded
        batches = list(
            ImagePipeline(image_size=32, global_batch_size=4).build(loaded, training=True)
        )
    images = np.concatenate([b[0].numpy() for b in batches])
    labels = np.concatenate([b[1].numpy() for b in batches])
    assert images.shape == (6, 32, 32, 3)
    assert images.dtype == np.uint8
    assert set(labels) <= set(range(num_classes))


def test_decode_and_resize_reads_jpeg_and_png_into_uint8() -> None:
    pixels = np.full((40, 60, 3), 200, np.uint8)
    for encoded in (tf.io.encode_jpeg(pixels), tf.io.encode_png(pixels)):
        image, label = decode_and_resize(encoded, tf.constant(1), 32)
        assert image.dtype == tf.uint8
        assert image.shape == (32, 32, 3)
        assert abs(int(image.numpy().mean()) - 200) <= 2
        assert int(label) == 1


def test_small_splits_are_cached_decoded_large_ones_are_not() -> None:
    pipeline = ImagePipeline(image_size=150, global_batch_size=64)
    assert pipeline.fits_cache(1027)  # horses_or_humans train: ~70 MB decoded
    assert not pipeline.fits_cache(None)  # unknown size: never
    assert not ImagePipeline(image_size=300, global_batch_size=64).fits_cache(5656)  # cassava


def test_synthetic_split_is_deterministic_balanced_and_learnable() -> None:
    first = synthetic_split(num_examples=20, num_classes=5, image_size=32, seed=1)
    second = synthetic_split(num_examples=20, num_classes=5, image_size=32, seed=1)
    a = [(bytes(x.numpy()), int(y)) for x, y in first.examples]
    assert a == [(bytes(x.numpy()), int(y)) for x, y in second.examples]
    labels = [label for _, label in a]
    assert sorted(labels) == sorted(list(range(5)) * 4)
    # Classes differ in mean colour: the per-class means are far apart.
    batch = next(iter(ImagePipeline(32, 20).build(first, training=False)))
    images, labels_t = batch[0].numpy().astype(float), batch[1].numpy()
    means = np.stack([images[labels_t == c].mean(axis=(0, 1, 2)) for c in range(5)])
    assert np.ptp(means, axis=0).max() > 20


def test_synthetic_splits_share_the_class_colours() -> None:
    """Training and validation splits (different seeds) carry the same class signal."""
    means = []
    for seed in (1, 2):
        split = synthetic_split(num_examples=40, num_classes=2, image_size=32, seed=seed)
        images, labels = next(iter(ImagePipeline(32, 40).build(split, training=False)))
        pixels, classes = images.numpy().astype(float), labels.numpy()
        means.append(np.stack([pixels[classes == c].mean(axis=(0, 1, 2)) for c in range(2)]))
    # Same class, different split: close. Different classes: far apart.
    assert np.abs(means[0] - means[1]).max() < 10
    assert np.abs(means[0][0] - means[0][1]).max() > 20
