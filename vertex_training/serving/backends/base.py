"""The one small protocol every serving backend (vertex, local) implements, and the records
they report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

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


class ServingBackend(Protocol):
    # -- Model Registry -----------------------------------------------------------------
    def find_version(self, model_id: str, labels: Mapping[str, str]) -> ModelVersionRecord | None:
        """The newest version of model ``model_id`` carrying every label (adoption after
        an interrupted upload); None when there is none or no such model."""
        ...

    def upload(self, model_id: str, body: Mapping[str, Any]) -> ModelVersionRecord:
        """Upload ``body`` (a Vertex ``Model`` REST body) as model ``model_id``, or as its
        new version when the model exists (``parentModel``). Not retried: callers
        ``find_version`` first."""
        ...

    def get_version(self, model: str, version_id: str) -> ModelVersionRecord:
        """Raises ``ServingNotFoundError`` when the version is gone."""
        ...

    def update_version(self, model: str, version_id: str, body: Mapping[str, Any]) -> None:
        """Display name, description and labels of ``body`` (a ``Model`` REST body) in place."""
        ...

    def move_aliases(self, model: str, version_id: str, aliases: Sequence[str]) -> None:
        """Give ``aliases`` to this version, taking each away from any other version first;
        aliases of this version not in ``aliases`` are removed."""
        ...

    def delete_version(self, model: str, version_id: str) -> None:
        """Delete the version, and the model with its last version; a version still
        deployed raises ``ModelInUseError``; one already gone is fine."""
        ...

    # -- endpoints ---------------------------------------------------------------------
    def get_endpoint(self, name: str) -> EndpointRecord: ...

    def create_endpoint(self, endpoint_id: str, body: Mapping[str, Any]) -> EndpointRecord:
        """Create the endpoint, or return it when it exists (ids are ours)."""
        ...

    def update_endpoint(self, name: str, body: Mapping[str, Any]) -> None:
        """Display name, description and labels in place."""
        ...

    def deploy(
        self, name: str, deployed_model: Mapping[str, Any], traffic: Mapping[str, int]
    ) -> None:
        """Deploy a ``DeployedModel`` body (its ``id`` set), the endpoint's traffic split
        becoming ``traffic``."""
        ...

    def set_traffic(self, name: str, traffic: Mapping[str, int]) -> None: ...

    def undeploy(self, name: str, deployed_model_id: str, traffic: Mapping[str, int]) -> None:
        """Undeploy; ``traffic`` is the split of those left (empty when none is)."""
        ...

    def delete_endpoint(self, name: str) -> None:
        """Delete an endpoint with nothing deployed; one already gone is fine."""
        ...


__all__ = [
    "DeployedModelRecord",
    "EndpointRecord",
    "ModelInUseError",
    "ModelVersionRecord",
    "ServingBackend",
    "ServingNotFoundError",
    "ServingRefusedError",
]
