"""The two codelab networks, taking uint8 images and rescaling to [0, 1] inside the model.

Keeping the rescale in the graph means the input pipeline moves a quarter of the bytes
(uint8, not float32) and the cast runs on the accelerator.
"""

from __future__ import annotations

from typing import Any

import tf_keras

from trainer.config import TrainConfig

__all__ = ["build_model"]


def _image_input(image_size: int) -> tuple[Any, Any]:
    inputs = tf_keras.Input(shape=(image_size, image_size, 3), dtype="uint8", name="image")
    scaled = tf_keras.layers.Rescaling(1.0 / 255.0, name="scale_to_unit")(inputs)
    return inputs, scaled


def build_cassava_model(config: TrainConfig, *, jit_compile: bool = False) -> tf_keras.Model:
    """ResNet50 (no top) + global average pooling + Dense 1016 relu + softmax; Adam."""
    inputs, scaled = _image_input(config.image_size)
    base = tf_keras.applications.ResNet50(
        weights=None if config.weights == "none" else config.weights,
        include_top=False,
        input_tensor=scaled,
    )
    x = tf_keras.layers.GlobalAveragePooling2D()(base.output)
    x = tf_keras.layers.Dense(1016, activation="relu")(x)
    # float32 output keeps the softmax and the loss stable under mixed precision.
    outputs = tf_keras.layers.Dense(
        config.workload.num_classes, activation="softmax", dtype="float32"
    )(x)
    model = tf_keras.Model(inputs, outputs, name="cassava_resnet50")
    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=tf_keras.optimizers.Adam(config.learning_rate),
        metrics=["accuracy"],
        jit_compile=jit_compile,
    )
    return model


def build_horses_or_humans_model(
    config: TrainConfig, *, jit_compile: bool = False
) -> tf_keras.Model:
    """Conv16-Pool-Conv32-Pool-Conv64-Pool-Flatten-Dense(num_units)-Dense(1, sigmoid); SGD
    with momentum (the codelab), or Adam with ``--optimizer adam``."""
    inputs, x = _image_input(config.image_size)
    for filters in (16, 32, 64):
        x = tf_keras.layers.Conv2D(filters, (3, 3), activation="relu")(x)
        x = tf_keras.layers.MaxPooling2D((2, 2))(x)
    x = tf_keras.layers.Flatten()(x)
    x = tf_keras.layers.Dense(config.num_units, activation="relu")(x)
    outputs = tf_keras.layers.Dense(1, activation="sigmoid", dtype="float32")(x)
    model = tf_keras.Model(inputs, outputs, name="horses_or_humans_cnn")
    model.compile(
        loss="binary_crossentropy",
        optimizer=(
            tf_keras.optimizers.Adam(learning_rate=config.learning_rate)
            if config.optimizer == "adam"
            else tf_keras.optimizers.SGD(
                learning_rate=config.learning_rate, momentum=config.momentum
            )
        ),
        metrics=["accuracy"],
        jit_compile=jit_compile,
    )
    return model


def build_model(config: TrainConfig, *, jit_compile: bool = False) -> tf_keras.Model:
    """Build and compile the workload's model; call inside ``strategy.scope()``.

    ``jit_compile`` (XLA) is for GPUs; on CPU it makes these models slower.
    """
    if config.workload.name == "cassava":
        return build_cassava_model(config, jit_compile=jit_compile)
    return build_horses_or_humans_model(config, jit_compile=jit_compile)
