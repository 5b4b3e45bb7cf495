"""A SavedModel the trainer exported, behind the predict JSON: real TensorFlow, in process."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from predictor import BadRequestError
from predictor.model import ServedModel


@pytest.fixture(scope="module")
def served(model_dir: Path) -> ServedModel:
    return ServedModel(str(model_dir))


def pixels(height: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def b64(image: np.ndarray, encode: Any = tf.io.encode_png) -> dict[str, str]:
    return {"b64": base64.b64encode(encode(image).numpy()).decode()}


def assert_one_probability_per_class(predictions: list[Any], instances: int) -> None:
    assert len(predictions) == instances
    for prediction in predictions:
        assert len(prediction) == 2 and all(0 <= p <= 1 for p in prediction)
        assert sum(prediction) == pytest.approx(1.0, rel=1e-5)


def test_b64_jpeg_and_png_of_different_sizes_in_one_request(served: ServedModel) -> None:
    instances = [b64(pixels(50, 70), tf.io.encode_jpeg), b64(pixels(20, 33, 1)), b64(pixels(9, 9))]
    assert_one_probability_per_class(served.predict(instances), 3)


def test_uint8_lists_of_different_sizes_predict_as_their_png(served: ServedModel) -> None:
    images = [pixels(32, 32, 2), pixels(45, 17, 3)]
    from_lists = served.predict([image.tolist() for image in images])
    assert_one_probability_per_class(from_lists, 2)
    from_png = served.predict([b64(image) for image in images])
    np.testing.assert_allclose(from_lists, from_png, rtol=1e-5)


def test_a_named_instance_reaches_the_signature_with_that_input(served: ServedModel) -> None:
    image = pixels(32, 32, 4)
    assert served.predict([{"image_bytes": b64(image)}]) == served.predict([b64(image)])
    assert served.predict([{"image": image.tolist()}]) == served.predict([image.tolist()])


@pytest.mark.parametrize(
    ("instances", "message"),
    [
        ([], '"instances" must be a non-empty list'),
        ({"b64": "x"}, '"instances" must be a non-empty list'),
        ([{"b64": "!!"}], "instances[0]: 'b64' is not valid base64"),
        ([{"b64": "eHg="}], "the model refused the input: Unknown image file format"),
        ([[[[1, 2, 300]]]], "instances[0]: values must be within [0, 255] for a uint8 input"),
        ([[[[1, 2, 3.5]]]], "instances[0]: expected integers for a uint8 input"),
        ([[1, 2]], "instances[0]: shape [2]; expected ['any', 'any', 3]"),
        ([[[[1, 2, 3]], [[4]]]], "instances[0]: not a rectangular array"),
        ([{"b64": "eHg="}, [[[1, 2, 3]]]], "instances[1] has another form than instances[0]"),
        ([{"pixels": [1]}], "no signature of this model takes an instance with inputs ['pixels']"),
        (["text"], "no signature of this model takes a string instance; its signatures: "),
        ([{"image_bytes": "eHg="}], "instances[0].image_bytes: input 'image_bytes' takes {\"b64\""),
    ],
)
def test_what_cannot_be_served_is_a_bad_request_saying_why(
    served: ServedModel, instances: Any, message: str
) -> None:
    with pytest.raises(BadRequestError) as raised:
        served.predict(instances)
    assert message in str(raised.value)
