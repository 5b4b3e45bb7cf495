"""Validating a body whose values are not all known yet.

A job's body may hold values that come from other resources (the image digest, the
bucket, the service account): Outputs at program time, unknowns in ``pulumi preview``.
``with_placeholders`` stands a harmless value in for each, so that the real protos and
the rules can read the rest of the body, and ``drop_unknown`` discards the findings that
are about the stand-ins (or about their siblings, which a real value could change).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from vertex_training._checks import LEAVES, is_known
from vertex_training.findings import Finding

__all__ = [
    "PLACEHOLDER_BUCKET",
    "PLACEHOLDER_IMAGE",
    "PLACEHOLDER_SERVICE_ACCOUNT",
    "drop_unknown",
    "masked",
    "typed",
    "with_placeholders",
]

PLACEHOLDER_IMAGE = "placeholder/trainer@sha256:" + "0" * 64
PLACEHOLDER_BUCKET = "gs://placeholder-bucket"
PLACEHOLDER_SERVICE_ACCOUNT = "training@placeholder.iam.gserviceaccount.com"

_BY_KEY: Mapping[str, Any] = {
    "imageUri": PLACEHOLDER_IMAGE,
    "serviceAccount": PLACEHOLDER_SERVICE_ACCOUNT,
    "outputUriPrefix": PLACEHOLDER_BUCKET + "/jobs/placeholder",
    "machineType": "n1-standard-4",
    "acceleratorCount": 1,
    "replicaCount": "1",
    "bootDiskSizeGb": 100,
    "maxTrialCount": 1,
    "parallelTrialCount": 1,
    "maxFailedTrialCount": 0,
    "args": [],
    "command": [],
    "env": [],
    "values": [],
    "labels": {},
    "timeout": "3600s",
    "maxWaitDuration": "3600s",
}


def typed(unknown: Collection[str]) -> bool:
    """Whether each stand-in at the API paths ``unknown`` has its field's type (a field this
    module knows), so that what the protos refuse of the body is about known values."""
    return all(path.rsplit(".", 1)[-1].split("[", 1)[0] in _BY_KEY for path in unknown)


def with_placeholders(body: Any, path: str = "") -> tuple[Any, list[str]]:
    """``body`` with each value not known yet (``is_known``) replaced by a stand-in of the
    field's shape, and the API paths of those values
    (``jobSpec.workerPoolSpecs[0].containerSpec.imageUri``)."""
    unknown: list[str] = []

    def walk(value: Any, where: str, key: str) -> Any:
        if not is_known(value):
            unknown.append(where)
            return _BY_KEY.get(key, "placeholder")
        if type(value) in LEAVES:
            return value
        if isinstance(value, Mapping):
            return {
                k: walk(v, f"{where}.{k}" if where else str(k), str(k)) for k, v in value.items()
            }
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            return [walk(v, f"{where}[{i}]", key) for i, v in enumerate(value)]
        return value

    return walk(body, path, ""), unknown


_JUDGED_TOGETHER = frozenset({"machineType", "acceleratorType", "acceleratorCount", "tpuTopology"})
"""Keys of a ``machineSpec``: one not known yet leaves the others unjudged (whether the
GPUs fit depends on the machine)."""


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def drop_unknown(findings: list[Finding], unknown: list[str]) -> list[Finding]:
    """The findings that no unknown value could change: not at or under an unknown path,
    and not in a machine spec with an unknown part (an unknown machine type leaves its
    accelerator unjudged)."""
    if not unknown:
        return findings
    scopes = set(unknown) | {
        _parent(u) for u in unknown if u.rsplit(".", 1)[-1] in _JUDGED_TOGETHER
    }

    def affected(path: str) -> bool:
        return any(path == scope or path.startswith((f"{scope}.", f"{scope}[")) for scope in scopes)

    return [f for f in findings if not affected(f.path)]


def masked(body: Any, paths: Collection[str]) -> Any:
    """``body`` with the values at the API paths ``paths``, and any not known yet, as one
    mark: what a digest of the judged inputs reads (``_dynamic.digest``), the same whether
    those values are known by now or not."""

    def walk(value: Any, where: str) -> Any:
        if where in paths or not is_known(value):
            return "<not known yet>"
        if isinstance(value, Mapping):
            return {k: walk(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    return walk(body, "")
