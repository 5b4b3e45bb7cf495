"""The serving signatures the trainer exports with its SavedModel.

What a client sends a Vertex endpoint is JSON: an image arrives base64-encoded as
``{"b64": ...}``, which the TensorFlow prediction containers decode into the bytes of a
string input *whose name ends in* ``_bytes``, or as a nested list of pixel values. One
tensor cannot take both, so the SavedModel carries two signatures over the same weights:

- ``serving_default``: ``image_bytes`` (string, one JPEG or PNG per instance, any size),
  decoded and resized inside the graph exactly as the training pipeline does it;
- ``serving_images``: ``image`` (uint8, ``[batch, height, width, 3]``, any size), resized
  inside the graph the same way.

Both return ``probabilities``: one per class, float32, summing to 1 (the binary
horses_or_humans model's single sigmoid unit becomes ``[P(class 0), P(class 1)]``).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tf_keras

from trainer.data import decode_image, resize_image

__all__ = [
    "BYTES_INPUT",
    "BYTES_SIGNATURE",
    "IMAGE_INPUT",
    "IMAGE_SIGNATURE",
    "OUTPUT",
    "serving_signatures",
]

BYTES_SIGNATURE = "serving_default"
IMAGE_SIGNATURE = "serving_images"
BYTES_INPUT = "image_bytes"
"""Ends in ``_bytes``: the TensorFlow prediction containers base64-decode into it."""
IMAGE_INPUT = "image"
OUTPUT = "probabilities"


def _class_probabilities(model: tf_keras.Model, images: tf.Tensor, num_classes: int) -> Any:
    scores = tf.cast(model(images, training=False), tf.float32)
    if num_classes == 2 and scores.shape[-1] == 1:
        # One sigmoid unit scores class 1; class 0 is its complement.
        return tf.concat([1.0 - scores, scores], axis=-1)
    return scores


def serving_signatures(
    model: tf_keras.Model, *, image_size: int, num_classes: int
) -> dict[str, Any]:
    """The concrete functions to pass as ``signatures`` to ``model.save``."""
    outputs = int(model.output_shape[-1])
    if outputs != num_classes and not (num_classes == 2 and outputs == 1):
        raise ValueError(
            f"model {model.name!r} has {outputs} outputs; expected {num_classes} "
            "(or one sigmoid unit for two classes)"
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=BYTES_INPUT)])
    def from_bytes(image_bytes: tf.Tensor) -> dict[str, Any]:
        images = tf.map_fn(
            lambda encoded: decode_image(encoded, image_size),
            image_bytes,
            fn_output_signature=tf.TensorSpec((image_size, image_size, 3), tf.uint8),
        )
        return {OUTPUT: _class_probabilities(model, images, num_classes)}

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name=IMAGE_INPUT)])
    def from_images(image: tf.Tensor) -> dict[str, Any]:
        return {OUTPUT: _class_probabilities(model, resize_image(image, image_size), num_classes)}

    return {
        BYTES_SIGNATURE: from_bytes.get_concrete_function(),
        IMAGE_SIGNATURE: from_images.get_concrete_function(),
    }
