"""The two codelabs' input pipelines and model setups, kept faithfully as the bench baseline.

Copied from the codelabs (seeds 000 multi-worker cassava, 001 hyperparameter tuning
horses_or_humans) with only what a bench needs changed: ``tfds.load`` gets a ``data_dir`` and
a dataset ``name`` (so both pipelines read the same generated data), the image size and
ImageNet weights are parameters (offline), their one preprocess_data is written once, and
``tf.keras`` is tf-keras (TF_USE_LEGACY_KERAS).
Do not "improve" this file: it is what we measure against.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf
import tensorflow_datasets as tfds

CASSAVA_IMAGE_SIZE = 300
HORSES_IMAGE_SIZE = 150


# Both codelabs' own preprocess_data, the same code but for its default image size.
def preprocess_data(image, label, image_size):  # type: ignore[no-untyped-def]
    """Resizes and scales images."""
    image = tf.image.resize(image, (image_size, image_size))
    return tf.cast(image, tf.float32) / 255.0, label


# --- seed 000: multi-worker cassava --------------------------------------------------------
def cassava_create_dataset(
    batch_size, name="cassava", data_dir=None, image_size=CASSAVA_IMAGE_SIZE
):  # type: ignore[no-untyped-def]
    """Loads Cassava dataset and preprocesses data."""
    data, info = tfds.load(name=name, as_supervised=True, with_info=True, data_dir=data_dir)
    number_of_classes = info.features["label"].num_classes
    train_data = data["train"].map(
        lambda image, label: preprocess_data(image, label, image_size),
        num_parallel_calls=tf.data.experimental.AUTOTUNE,
    )
    train_data = train_data.shuffle(1000)
    train_data = train_data.batch(batch_size)
    train_data = train_data.prefetch(tf.data.experimental.AUTOTUNE)
    # Set AutoShardPolicy
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    train_data = train_data.with_options(options)
    return train_data, number_of_classes


def cassava_create_model(number_of_classes, weights="imagenet", image_size=None):  # type: ignore[no-untyped-def]
    """Creates and compiles pretrained ResNet50 model."""
    input_shape = None if image_size is None else (image_size, image_size, 3)
    base_model = tf.keras.applications.ResNet50(
        weights=weights, include_top=False, input_shape=input_shape
    )
    x = base_model.output
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(1016, activation="relu")(x)
    predictions = tf.keras.layers.Dense(number_of_classes, activation="softmax")(x)
    model = tf.keras.Model(inputs=base_model.input, outputs=predictions)
    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=tf.keras.optimizers.Adam(0.0001),
        metrics=["accuracy"],
    )
    return model


# --- seed 001: hyperparameter tuning, horses_or_humans -------------------------------------
def horses_create_dataset(
    batch_size, name="horses_or_humans", data_dir=None, image_size=HORSES_IMAGE_SIZE
):  # type: ignore[no-untyped-def]
    """Loads Horses Or Humans dataset and preprocesses data."""
    data, info = tfds.load(name=name, as_supervised=True, with_info=True, data_dir=data_dir)  # noqa: RUF059

    def preprocess(image, label):  # type: ignore[no-untyped-def]
        return preprocess_data(image, label, image_size)

    # Create train dataset
    train_data = data["train"].map(preprocess)
    train_data = train_data.shuffle(1000)
    train_data = train_data.batch(batch_size)

    # Create validation dataset
    validation_data = data["test"].map(preprocess)
    validation_data = validation_data.batch(batch_size)

    return train_data, validation_data


def horses_create_model(num_units, learning_rate, momentum, image_size=HORSES_IMAGE_SIZE):  # type: ignore[no-untyped-def]
    """Defines and compiles model."""
    inputs = tf.keras.Input(shape=(image_size, image_size, 3))
    x = tf.keras.layers.Conv2D(16, (3, 3), activation="relu")(inputs)
    x = tf.keras.layers.MaxPooling2D((2, 2))(x)
    x = tf.keras.layers.Conv2D(32, (3, 3), activation="relu")(x)
    x = tf.keras.layers.MaxPooling2D((2, 2))(x)
    x = tf.keras.layers.Conv2D(64, (3, 3), activation="relu")(x)
    x = tf.keras.layers.MaxPooling2D((2, 2))(x)
    x = tf.keras.layers.Flatten()(x)
    x = tf.keras.layers.Dense(num_units, activation="relu")(x)
    outputs = tf.keras.layers.Dense(1, activation="sigmoid")(x)
    model = tf.keras.Model(inputs, outputs)
    model.compile(
        loss="binary_crossentropy",
        optimizer=tf.keras.optimizers.SGD(learning_rate=learning_rate, momentum=momentum),
        metrics=["accuracy"],
    )
    return model
