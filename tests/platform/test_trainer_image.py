"""Trainer image: built for linux/amd64, pushed with a Google token, consumed by digest."""

from __future__ import annotations

from pathlib import Path

from pulumi.runtime import rpc

from tests.pulumi_mocks import MOCK_ACCESS_TOKEN, run_pulumi
from vertex_training.platform.trainer_image import TrainerImage, TrainerImageArgs, content_tag
from vertex_training.stack.definition import IMAGE_SOURCES

IMAGE = "docker-build:index:Image"
REPOSITORY = "us-central1-docker.pkg.dev/p-1/trainers"


def args(root: Path, tag: str = "src-0123456789abcdef") -> TrainerImageArgs:
    return TrainerImageArgs(
        repository_url=REPOSITORY,
        registry_host="us-central1-docker.pkg.dev",
        registry_token=MOCK_ACCESS_TOKEN,
        context_dir=root,
        dockerfile=root / "docker" / "trainer.Dockerfile",
        tag=tag,
    )


def test_build_and_push(tmp_path: Path) -> None:
    run = run_pulumi(lambda: TrainerImage("trainer-image", args(tmp_path)).reference)
    image = run.one(IMAGE)
    assert image.name == "trainer-image-image"
    assert image.inputs["push"] is True
    assert image.inputs["platforms"] == ["linux/amd64"]
    assert image.inputs["buildOnPreview"] is False
    assert image.inputs["context"] == {"location": str(tmp_path)}
    assert image.inputs["dockerfile"] == {"location": str(tmp_path / "docker/trainer.Dockerfile")}
    assert image.inputs["tags"] == [f"{REPOSITORY}/trainer:src-0123456789abcdef"]
    assert image.parent == run.one("vertex-training:platform:TrainerImage").urn


def test_registry_auth_is_the_google_token_kept_secret(tmp_path: Path) -> None:
    image = run_pulumi(lambda: TrainerImage("t", args(tmp_path)).reference).one(IMAGE)
    registries = image.inputs["registries"]
    # The whole list arrives wrapped as a secret: the token never lands in plain state.
    assert registries[rpc._special_sig_key] == rpc._special_secret_sig
    assert registries["value"] == [
        {
            "address": "us-central1-docker.pkg.dev",
            "username": "oauth2accesstoken",
            "password": MOCK_ACCESS_TOKEN,
        }
    ]


def test_reference_is_the_digest_never_a_tag(tmp_path: Path) -> None:
    references: list[str] = []
    run_pulumi(lambda: TrainerImage("t", args(tmp_path)).reference.apply(references.append))
    (reference,) = references
    assert reference.startswith(f"{REPOSITORY}/trainer@sha256:")
    assert len(reference.rsplit(":", 1)[1]) == 64
    assert ":latest" not in reference


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_content_tag_follows_the_sources(tmp_path: Path) -> None:
    write(tmp_path, "trainer/task.py", "print(1)\n")
    write(tmp_path, "docker/trainer.Dockerfile", "FROM python:3.11\n")
    write(tmp_path, "requirements.lock", "tensorflow==2.21.0\n")
    first = content_tag(tmp_path, IMAGE_SOURCES)
    assert first.startswith("src-") and len(first) == 20
    assert content_tag(tmp_path, IMAGE_SOURCES) == first

    write(tmp_path, "trainer/__pycache__/task.cpython-311.pyc", "bytecode")
    write(tmp_path, "README.md", "not in the image")
    assert content_tag(tmp_path, IMAGE_SOURCES) == first, (
        "build by-products and other files do not count"
    )

    write(tmp_path, "trainer/task.py", "print(2)\n")
    changed = content_tag(tmp_path, IMAGE_SOURCES)
    assert changed != first

    (tmp_path / "trainer" / "task.py").rename(tmp_path / "trainer" / "main.py")
    assert content_tag(tmp_path, IMAGE_SOURCES) not in {first, changed}, (
        "a rename changes the tag too"
    )


def test_content_tag_of_the_repository_is_stable() -> None:
    root = Path(__file__).resolve().parents[2]
    assert content_tag(root, IMAGE_SOURCES) == content_tag(root, IMAGE_SOURCES)
