"""What the serving backend reports (models' versions, endpoints) and its errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vertex_training._dynamic import NotFoundError


class ServingNotFoundError(NotFoundError):
    """The named model, version or endpoint does not exist (any more)."""


class ModelInUseError(RuntimeError):
    """A model version that is still deployed to an endpoint cannot be deleted."""


class ServingRefusedError(ValueError):
    """The backend cannot do what the body asks; raised before anything is created."""


@dataclass(frozen=True)
class ModelVersionRecord:
    """One version of a registered model, as the registry reports it."""

    model: str
    """``projects/P/locations/L/models/ID`` (no version)."""
    version_id: str
    artifact_uri: str = ""
    display_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    create_time: str | None = None

    @property
    def version_name(self) -> str:
        """``<model>@<version id>``: what a deployment names."""
        return f"{self.model}@{self.version_id}"


@dataclass(frozen=True)
class DeployedModelRecord:
    id: str
    model: str
    """The model's resource name (no version)."""
    model_version_id: str


@dataclass(frozen=True)
class EndpointRecord:
    name: str
    """``projects/P/locations/L/endpoints/ID``."""
    display_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    deployed: tuple[DeployedModelRecord, ...] = ()
    traffic: Mapping[str, int] = field(default_factory=dict)
    """Percent of requests by deployed model id."""
    predict_url: str = ""
    serving: bool = True
    """Whether something answers at ``predict_url`` (the local server is alive)."""

    @property
    def deployed_ids(self) -> set[str]:
        return {d.id for d in self.deployed}


__all__ = [
    "DeployedModelRecord",
    "EndpointRecord",
    "ModelInUseError",
    "ModelVersionRecord",
    "ServingNotFoundError",
    "ServingRefusedError",
]
