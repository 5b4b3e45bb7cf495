"""The platform's images (the trainer, the serving image): built from ``docker/``, pushed,
and consumed by digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_docker_build as docker_build

from vertex_training.platform._component import PlatformComponent

__all__ = ["TrainerImage", "TrainerImageArgs", "content_tag"]

_SKIPPED_PARTS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


def content_tag(root: Path, sources: Iterable[str]) -> str:
    """A tag that changes exactly when a file under ``sources`` (paths relative to
    ``root``) changes, its name or its bytes."""
    digest = hashlib.sha256()
    for source in sorted(sources):
        path = root / source
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            relative = file.relative_to(root)
            if _SKIPPED_PARTS.intersection(relative.parts) or file.suffix in _SKIPPED_SUFFIXES:
                continue  # build by-products, not sources
            if not file.exists():
                continue
            digest.update(relative.as_posix().encode() + b"\0")
            digest.update(file.read_bytes() + b"\0")
    return f"src-{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class TrainerImageArgs:
    repository_url: pulumi.Input[str]
    """``REGION-docker.pkg.dev/PROJECT/REPOSITORY``."""
    registry_host: str
    """``REGION-docker.pkg.dev``."""
    registry_token: pulumi.Input[str]
    """A Google OAuth access token; stored as a secret."""
    context_dir: Path
    dockerfile: Path
    tag: str
    """Content tag, see ``content_tag``."""
    image_name: str = "trainer"


class TrainerImage(PlatformComponent[TrainerImageArgs]):
    """Builds a Dockerfile of ``docker/`` (the trainer's, the serving image's) for linux/amd64
    and pushes it to the repository."""

    image: docker_build.Image
    tagged_reference: pulumi.Output[str]
    """``REPOSITORY/IMAGE:src-<hash>``, for people."""
    reference: pulumi.Output[str]
    """``REPOSITORY/IMAGE@sha256:<digest>``: what jobs run; a digest cannot move."""

    def _build(self, name: str, args: TrainerImageArgs) -> dict[str, Any]:
        repository_image = pulumi.Output.concat(args.repository_url, "/", args.image_name)
        self.tagged_reference = pulumi.Output.concat(repository_image, ":", args.tag)
        self.image = docker_build.Image(
            f"{name}-image",
            context=docker_build.BuildContextArgs(location=str(args.context_dir)),
            dockerfile=docker_build.DockerfileArgs(location=str(args.dockerfile)),
            # Vertex training machines are x86_64, whatever the laptop building the image is.
            platforms=[docker_build.Platform.LINUX_AMD64],
            tags=[self.tagged_reference],
            push=True,
            # A preview must not need a Docker engine or push anything.
            build_on_preview=False,
            registries=[
                docker_build.RegistryArgs(
                    address=args.registry_host,
                    username="oauth2accesstoken",
                    password=pulumi.Output.secret(args.registry_token),
                )
            ],
            opts=self._child(),
        )
        self.reference = pulumi.Output.concat(repository_image, "@", self.image.digest)
        return {"reference": self.reference}
