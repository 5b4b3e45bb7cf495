"""The serving export: real TensorFlow, a tiny untrained model, CPU.

The signatures take what a client sends a Vertex endpoint (JPEG/PNG bytes of any size,
uint8 arrays of any size) and return one probability per class; only the chief keeps a
model. Training runs that export through the entry point are in ``test_training.py``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # before TensorFlow loads, as trainer.task

import numpy as np
import tensorflow as tf

from trainer.cluster import ClusterRole
from trainer.config import parse_config
from trainer.distribution import save_model
from trainer.export import (
    BYTES_INPUT,
    BYTES_SIGNATURE,
    IMAGE_INPUT,
    IMAGE_SIGNATURE,
    OUTPUT,
    serving_signatures,
)
from trainer.models import build_model

IMAGE_SIZE = 32


def export(model_dir: Path, role: ClusterRole | None = None) -> str | None:
    config = parse_config(
        ["--workload", "horses_or_humans", "--image-size", str(IMAGE_SIZE), "--num_units", "4"],
        environ={"AIP_MODEL_DIR": str(model_dir)},
    )
    model = build_model(config)
    signatures = serving_signatures(model, image_size=IMAGE_SIZE, num_classes=2)
    return save_model(model, config.paths.model_dir, role or ClusterRole(), signatures)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    model_dir = tmp_path_factory.mktemp("export") / "model"
    assert export(model_dir) == str(model_dir)
    return tf.saved_model.load(str(model_dir))


def pixels(height: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def probabilities(loaded: Any, signature: str, **inputs: Any) -> np.ndarray:
    result = loaded.signatures[signature](**inputs)
    assert list(result) == [OUTPUT]
    return np.asarray(result[OUTPUT].numpy())


def assert_one_probability_per_class(values: np.ndarray, instances: int) -> None:
    assert values.shape == (instances, 2)
    assert np.all((values >= 0) & (values <= 1))
    np.testing.assert_allclose(values.sum(axis=1), 1.0, rtol=1e-5)


def encoded(images: Sequence[np.ndarray], formats: Sequence[str]) -> tf.Tensor:
    encoders = {"jpeg": tf.io.encode_jpeg, "png": tf.io.encode_png}
    return tf.constant(
        [encoders[f](image).numpy() for image, f in zip(images, formats, strict=True)]
    )


def test_serving_default_takes_jpeg_and_png_bytes_of_any_size(served: Any) -> None:
    signature = served.signatures[BYTES_SIGNATURE]
    (spec,) = signature.structured_input_signature[1].values()
    assert spec.name == BYTES_INPUT and spec.name.endswith("_bytes") and spec.dtype == tf.string
    images = [pixels(50, 70), pixels(20, 33, seed=1), pixels(300, 120, seed=2)]
    values = probabilities(
        served, BYTES_SIGNATURE, image_bytes=encoded(images, ["jpeg", "png", "jpeg"])
    )
    assert_one_probability_per_class(values, 3)


def test_uint8_arrays_of_any_size_give_what_their_lossless_bytes_give(served: Any) -> None:
    for shape in ((IMAGE_SIZE, IMAGE_SIZE), (45, 17)):
        image = pixels(*shape, seed=3)
        from_array = probabilities(served, IMAGE_SIGNATURE, image=tf.constant(image[None]))
        assert_one_probability_per_class(from_array, 1)
        # The same resize in both graphs: a PNG of the array predicts the same.
        from_png = probabilities(served, BYTES_SIGNATURE, image_bytes=encoded([image], ["png"]))
        np.testing.assert_allclose(from_array, from_png, rtol=1e-5)
    (spec,) = served.signatures[IMAGE_SIGNATURE].structured_input_signature[1].values()
    assert (spec.name, spec.dtype) == (IMAGE_INPUT, tf.uint8)


def test_bytes_that_are_no_image_are_refused(served: Any) -> None:
    with pytest.raises(tf.errors.InvalidArgumentError):
        served.signatures[BYTES_SIGNATURE](image_bytes=tf.constant([b"not an image"]))


def test_only_the_chief_keeps_a_model(tmp_path: Path) -> None:
    workers = {"worker": ("w0:1", "w1:1")}
    assert export(tmp_path / "w1", ClusterRole("worker", 1, workers)) is None
    assert not (tmp_path / "w1").exists()
    # Worker 0 of a cluster without a chief is the chief; so is a single replica.
    assert export(tmp_path / "w0", ClusterRole("worker", 0, workers)) == str(tmp_path / "w0")
    assert (tmp_path / "w0" / "saved_model.pb").is_file()
    assert export(tmp_path / "single") == str(tmp_path / "single")
    assert (tmp_path / "single" / "saved_model.pb").is_file()
