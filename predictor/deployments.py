"""The models one endpoint serves, and the traffic split between them (the local twin).

On Vertex each deployed model runs in containers of its own and the endpoint's frontend
routes a request by the traffic split, adding which deployed model answered. Locally one
server process is the endpoint: it loads every deployed model and does the routing itself.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Deployment", "DeploymentsError", "TrafficSplit", "read_deployments"]


class DeploymentsError(ValueError):
    """The deployments file is not a valid list of deployed models with a traffic split."""


@dataclass(frozen=True)
class Deployment:
    """One model deployed on the endpoint."""

    deployed_model_id: str
    model: str
    """The model's resource name, as Vertex reports it in a prediction."""
    model_version_id: str
    model_dir: str
    """The SavedModel: a local path or a ``gs://`` URI."""
    traffic_percent: int
    max_batch_size: int | None = None
    """How this deployed model gathers requests (:class:`predictor.batching.Batching`);
    None: the server's flag."""
    max_wait_ms: float | None = None
    max_queued: int | None = None
    batch_threads: int | None = None

    def metadata(self) -> dict[str, str]:
        """What Vertex's frontend adds to a prediction."""
        return {
            "deployedModelId": self.deployed_model_id,
            "model": self.model,
            "modelVersionId": self.model_version_id,
        }


_FIELDS = {
    "deployedModelId": "deployed_model_id",
    "model": "model",
    "modelVersionId": "model_version_id",
    "modelDir": "model_dir",
    "trafficPercent": "traffic_percent",
}
_BATCHING_FIELDS = {
    "maxBatchSize": "max_batch_size",
    "maxWaitMs": "max_wait_ms",
    "maxQueued": "max_queued",
    "batchThreads": "batch_threads",
}


def _valid(key: str, value: Any) -> tuple[bool, str]:
    """Whether ``value`` is valid for ``key``, and what would be."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key == "trafficPercent":
        return isinstance(value, int) and number and 0 <= value <= 100, "an integer from 0 to 100"
    if key == "maxWaitMs":
        return number and value >= 0, "a number of milliseconds, at least 0"
    if key in _BATCHING_FIELDS:
        return isinstance(value, int) and number and value >= 1, "an integer of at least 1"
    return isinstance(value, str) and value != "", "a string"


def _deployment(raw: Any, where: str) -> Deployment:
    if not isinstance(raw, dict) or not set(_FIELDS) <= set(raw) <= set(_FIELDS) | set(
        _BATCHING_FIELDS
    ):
        keys = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise DeploymentsError(
            f"{where}: expected an object with {sorted(_FIELDS)} "
            f"and optionally {sorted(_BATCHING_FIELDS)}, got {keys}"
        )
    for key, value in raw.items():
        valid, expected = _valid(key, value)
        if not valid:
            raise DeploymentsError(f"{where}.{key}: expected {expected}, got {value!r}")
    fields = _FIELDS | _BATCHING_FIELDS
    return Deployment(**{fields[key]: value for key, value in raw.items()})


def read_deployments(path: str | Path) -> list[Deployment]:
    """The deployments in ``path`` (a JSON list), checked: unique ids, split summing to 100."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise DeploymentsError(f"--deployments {path}: {error}") from None
    if not isinstance(raw, list) or not raw:
        raise DeploymentsError(f"--deployments {path}: expected a non-empty JSON list")
    deployments = [_deployment(item, f"{path}[{i}]") for i, item in enumerate(raw)]
    ids = [d.deployed_model_id for d in deployments]
    if len(set(ids)) != len(ids):
        raise DeploymentsError(f"{path}: deployedModelId values repeat: {ids}")
    total = sum(d.traffic_percent for d in deployments)
    if total != 100:
        raise DeploymentsError(f"{path}: trafficPercent sums to {total}; it must sum to 100")
    return deployments


class TrafficSplit:
    """Picks the deployed model for each request at random, weighted by its percentage (as
    Vertex's frontend does); a model at 0 % gets no request."""

    def __init__(self, deployments: Sequence[Deployment], rng: random.Random | None = None):
        self._deployments = [d for d in deployments if d.traffic_percent > 0]
        self._weights = [d.traffic_percent for d in self._deployments]
        self._rng = rng or random.Random()

    def choose(self) -> Deployment:
        return self._rng.choices(self._deployments, weights=self._weights)[0]
