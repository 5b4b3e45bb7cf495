"""The serving image cannot be built here (no Docker engine): check what can be checked.

Its TensorFlow equals the locked one (the trainer's, which writes the models), what it
installs is pinned as locked, the server imports nothing the image lacks and nothing of
ours, the entry point is the module the tests run, and hadolint is clean."""

from __future__ import annotations

import re

from tests.trainer.test_docker import (
    LOCK,
    REPO,
    canonical,
    dockerfile_instructions,
    hadolint_problems,
    pins,
    third_party_imports,
)

DOCKERFILE = REPO / "docker" / "serving.Dockerfile"
IMAGE_REQUIREMENTS = REPO / "docker" / "serving-requirements.txt"


def test_base_image_tensorflow_equals_the_locked_tensorflow() -> None:
    (base,) = [args for op, args in dockerfile_instructions(DOCKERFILE) if op == "FROM"]
    match = re.fullmatch(r"tensorflow/tensorflow:(\d+\.\d+\.\d+)-gpu", base.strip())
    assert match, f"expected the official TensorFlow GPU image, got {base!r}"
    assert match.group(1) == pins(LOCK)["tensorflow"]
    assert f"assert v == '{match.group(1)}'" in DOCKERFILE.read_text()


def test_what_the_image_installs_is_pinned_as_locked_and_constrained_by_the_lock() -> None:
    image, lock = pins(IMAGE_REQUIREMENTS), pins(LOCK)
    assert image and all(lock.get(name) == version for name, version in image.items()), image
    runs = " ".join(args for op, args in dockerfile_instructions(DOCKERFILE) if op == "RUN")
    assert "-r /tmp/requirements/serving-requirements.txt" in runs
    assert "-c /tmp/requirements/requirements.lock" in runs
    rules = (REPO / ".dockerignore").read_text().split()
    assert {"!docker/serving-requirements.txt", "!requirements.lock"} <= set(rules)


def test_the_server_needs_only_what_the_image_has_and_nothing_of_ours() -> None:
    # tensorflow/tensorflow images ship TensorFlow and numpy; the rest is installed.
    installed = {"tensorflow", "numpy"} | {canonical(name) for name in pins(IMAGE_REQUIREMENTS)}
    assert third_party_imports("predictor") <= installed


def test_it_copies_the_server_and_runs_it() -> None:
    instructions = dockerfile_instructions(DOCKERFILE)
    assert ("COPY", "--chown=10001:10001 predictor/ /app/predictor/") in instructions
    assert ("USER", "10001:10001") in instructions
    assert instructions[-1] == ("ENTRYPOINT", '["python", "-m", "predictor"]')
    assert "!predictor/" in (REPO / ".dockerignore").read_text().split()


def test_hadolint_is_clean() -> None:
    assert hadolint_problems(DOCKERFILE) == ""
