# syntax=docker/dockerfile:1
# Trainer image for both codelab workloads (cassava, horses_or_humans).
# Build context: the repository root.  docker build -f docker/trainer.Dockerfile .
#
# The base image's TensorFlow must equal the tensorflow pin in requirements.lock
# (tests/trainer/test_docker.py checks the tag; the build checks the installed version).
FROM tensorflow/tensorflow:2.21.0-gpu

# TF 2.21 ships Keras 3, whose fit() fails under MultiWorkerMirroredStrategy
# (keras-team/keras#20585): the trainer uses tf-keras, selected by this variable.
# MALLOC_ARENA_MAX: tf.data's many threads each get a glibc malloc arena and freed image
# buffers stay mapped; two arenas cut the input pipeline's peak memory by ~1/3
# (bench/input_pipeline.py measures both settings).
ENV TF_USE_LEGACY_KERAS=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TF_CPP_MIN_LOG_LEVEL=1 \
    MALLOC_ARENA_MAX=2

# The lock is a constraints file: transitive dependencies get the locked versions too.
# The base image's Python *is* the application environment (TensorFlow lives there), so
# PEP 668's "externally managed" guard, where the base has it, does not apply.
COPY requirements.lock docker/trainer-requirements.txt /tmp/requirements/
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install --no-cache-dir \
        -r /tmp/requirements/trainer-requirements.txt \
        -c /tmp/requirements/requirements.lock \
    && python -c "import tensorflow as tf; v = tf.__version__; assert v == '2.21.0', v" \
    && rm -rf /tmp/requirements

# Unprivileged at run time (uid 10001: 1000 is taken in some Ubuntu bases); TFDS
# downloads go to the user's home.
RUN useradd --no-log-init --create-home --uid 10001 trainer
WORKDIR /app
COPY --chown=10001:10001 trainer/ /app/trainer/
USER 10001:10001

ENTRYPOINT ["python", "-m", "trainer.task"]
