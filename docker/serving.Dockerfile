# syntax=docker/dockerfile:1
# Serving image: the prediction server (predictor/) under Vertex AI's custom-container
# contract (AIP_HTTP_PORT, AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE, AIP_STORAGE_URI).
# Build context: the repository root.  docker build -f docker/serving.Dockerfile .
#
# The base image's TensorFlow must equal the tensorflow pin in requirements.lock, the one
# the trainer saves its models with (tests/predictor/test_serving_image.py checks the tag;
# the build checks the installed version). The GPU variant, as the trainer's: one image
# serves on machines with and without accelerators.
FROM tensorflow/tensorflow:2.21.0-gpu

# The server needs TensorFlow and numpy (both in the base image) and aiohttp, installed
# here at the locked versions (the lock is a constraints file: aiohttp's own dependencies
# get the locked versions too). The base image's Python is the application environment,
# so PEP 668's "externally managed" guard, where the base has it, does not apply.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TF_CPP_MIN_LOG_LEVEL=1

COPY requirements.lock docker/serving-requirements.txt /tmp/requirements/
# Unprivileged at run time (uid 10001: 1000 is taken in some Ubuntu bases).
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install --no-cache-dir \
        -r /tmp/requirements/serving-requirements.txt \
        -c /tmp/requirements/requirements.lock \
    && python -c "import tensorflow as tf; v = tf.__version__; assert v == '2.21.0', v" \
    && rm -rf /tmp/requirements \
    && useradd --no-log-init --create-home --uid 10001 predictor
WORKDIR /app
COPY --chown=10001:10001 predictor/ /app/predictor/
USER 10001:10001

# Vertex's default AIP_HTTP_PORT; the server binds 0.0.0.0 unless told --host.
EXPOSE 8080
ENTRYPOINT ["python", "-m", "predictor"]
