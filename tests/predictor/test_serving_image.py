"""The serving image cannot be built here (no Docker engine): check what can be checked.

Its TensorFlow equals the locked one (the trainer's, which writes the models), the server
imports nothing the base image lacks and nothing of ours, the entry point is the module
the tests run, and hadolint is clean."""

from __future__ import annotations

import re

from tests.trainer.test_docker import (
    LOCK,
    REPO,
    dockerfile_instructions,
    hadolint_problems,
    pins,
    third_party_imports,
)

DOCKERFILE = REPO / "docker" / "serving.Dockerfile"


def test_base_image_tensorflow_equals_the_locked_tensorflow() -> None:
    (base,) = [args for op, args in dockerfile_instructions(DOCKERFILE) if op == "FROM"]
    match = re.fullmatch(r"tensorflow/tensorflow:(\d+\.\d+\.\d+)-gpu", base.strip())
    assert match, f"expected the official TensorFlow GPU image, got {base!r}"
    assert match.group(1) == pins(LOCK)["tensorflow"]
    assert f"assert v == '{match.group(1)}'" in DOCKERFILE.read_text()


def test_the_server_needs_only_what_the_base_image_has_and_nothing_of_ours() -> None:
    # tensorflow/tensorflow images ship TensorFlow and numpy; the rest is the stdlib.
    assert third_party_imports("predictor") <= {"tensorflow", "numpy"}


def test_it_copies_the_server_and_runs_it() -> None:
    instructions = dockerfile_instructions(DOCKERFILE)
    assert ("COPY", "--chown=10001:10001 predictor/ /app/predictor/") in instructions
    assert ("USER", "10001:10001") in instructions
    assert instructions[-1] == ("ENTRYPOINT", '["python", "-m", "predictor"]')
    assert "!predictor/" in (REPO / ".dockerignore").read_text().split()


def test_hadolint_is_clean() -> None:
    assert hadolint_problems(DOCKERFILE) == ""
