"""What Vertex would refuse in a model or an endpoint, judged before anything is created.

Every function returns ``Finding`` values whose path is relative to what it judges (a
``DeployedModel`` body, a traffic split, an image), so the Python resources and the stack
reader place them at their own caller's path. Machines and
accelerators come from ``prediction_catalog.json`` (a catalog of its own: prediction's
differ from training's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vertex_training.findings import INT32_MAX, Finding, beyond
from vertex_training.jobs.rules.image import DIGEST_FORM, is_by_digest

CATALOG_FILE = Path(__file__).with_name("prediction_catalog.json")


@dataclass(frozen=True)
class PredictionCatalog:
    as_of: str
    regions: frozenset[str]
    machine_types: frozenset[str]
    gpu_machines: Mapping[str, tuple[str, int]]
    attachable_families: frozenset[str]
    attachable: Mapping[str, tuple[int, ...]]
    accelerator_regions: Mapping[str, frozenset[str]]
    prebuilt_pattern: re.Pattern[str]
    prebuilt_newest: str


@cache
def prediction_catalog() -> PredictionCatalog:
    data: dict[str, Any] = json.loads(CATALOG_FILE.read_text())
    machines = {
        f"{family}-{size}" for family, sizes in data["machine_types"].items() for size in sizes
    }
    gpu_machines = {k: (v[0], int(v[1])) for k, v in data["gpu_machines"].items()}
    return PredictionCatalog(
        as_of=data["as_of"],
        regions=frozenset(data["regions"]),
        machine_types=frozenset(machines | set(gpu_machines)),
        gpu_machines=gpu_machines,
        attachable_families=frozenset(data["attachable"]["families"]),
        attachable={k: tuple(v) for k, v in data["attachable"]["accelerators"].items()},
        accelerator_regions={k: frozenset(v) for k, v in data["accelerator_regions"].items()},
        prebuilt_pattern=re.compile(data["prebuilt_tensorflow"]["image_pattern"]),
        prebuilt_newest=data["prebuilt_tensorflow"]["newest"],
    )


def _listed(values: Iterable[str], limit: int = 12) -> str:
    ordered = sorted(values)
    more = f" ... ({len(ordered)} in all, {CATALOG_FILE.name})" if len(ordered) > limit else ""
    return ", ".join(ordered[:limit]) + more


def deployment_findings(body: Mapping[str, Any], region: str | None) -> list[Finding]:
    """What is wrong with the ``dedicatedResources`` of a ``DeployedModel`` REST body (paths
    in it). ``region`` None: local, where only the shape is judged."""
    resources = body.get("dedicatedResources")
    if not isinstance(resources, Mapping):
        return []  # no dedicated resources: the proto and Vertex judge the rest
    found, accelerator_type = _machine_findings(resources.get("machineSpec") or {})
    if region is not None:
        found += _region_findings(region, accelerator_type)
    return found + _replica_findings(resources)


_SPEC = "dedicatedResources.machineSpec"


def _machine_findings(machine: Mapping[str, Any]) -> tuple[list[Finding], str | None]:
    """A ``machineSpec``'s machine against the prediction catalog, and the GPU it serves
    with (its own, for a machine that comes with one)."""
    machine_type = str(machine.get("machineType", ""))
    accelerator_type = machine.get("acceleratorType")
    accelerator_count = machine.get("acceleratorCount")
    catalog = prediction_catalog()
    found: list[Finding] = []
    if machine_type not in catalog.machine_types:
        found.append(
            Finding(
                f"{_SPEC}.machineType",
                f"{machine_type!r} is not a prediction machine type (catalog as of "
                f"{catalog.as_of})",
                valid=_listed(catalog.machine_types),
            )
        )
    built_in = catalog.gpu_machines.get(machine_type)
    family = machine_type.rsplit("-", 1)[0]
    if built_in is not None:
        gpu, count = built_in
        if accelerator_type not in (None, gpu) or accelerator_count not in (None, 0, count):
            found.append(
                Finding(
                    _SPEC,
                    f"{machine_type} comes with {count} x {gpu}",
                    valid=f"acceleratorType {gpu!r} with acceleratorCount {count}, or neither",
                )
            )
        accelerator_type, accelerator_count = gpu, count
    elif accelerator_type is not None:
        counts = catalog.attachable.get(accelerator_type)
        if counts is None:
            found.append(
                Finding(
                    f"{_SPEC}.acceleratorType",
                    f"{accelerator_type!r} does not attach to a prediction machine {machine_type}",
                    valid=f"{_listed(catalog.attachable)} (on n1 machines), or a machine that "
                    "comes with its GPU (a2, a3, g2)",
                )
            )
        elif family not in catalog.attachable_families:
            found.append(
                Finding(
                    f"{_SPEC}.machineType",
                    f"{accelerator_type} attaches only to "
                    f"{_listed(catalog.attachable_families)} machines, not {machine_type}",
                )
            )
        elif (accelerator_count or 1) not in counts:
            found.append(
                Finding(
                    f"{_SPEC}.acceleratorCount",
                    f"{accelerator_count} x {accelerator_type} is not allowed",
                    valid=", ".join(map(str, counts)),
                )
            )
    elif accelerator_count:
        found.append(
            Finding(
                f"{_SPEC}.acceleratorCount",
                f"{accelerator_count} without an acceleratorType",
                valid="set acceleratorType too, or leave the count out",
            )
        )
    return found, accelerator_type


def _region_findings(region: str, accelerator_type: str | None) -> list[Finding]:
    """Whether ``region`` serves predictions on ``accelerator_type``, as far as the
    catalog knows."""
    catalog = prediction_catalog()
    found: list[Finding] = []
    if region not in catalog.regions:
        found.append(
            Finding(
                "",
                f"region {region!r} is not in the prediction catalog (as of "
                f"{catalog.as_of}); its machines are not checked there",
                severity="warning",
            )
        )
    elif accelerator_type is not None and accelerator_type in catalog.accelerator_regions:
        where = catalog.accelerator_regions[accelerator_type]
        if region not in where:
            found.append(
                Finding(
                    f"{_SPEC}.acceleratorType",
                    f"{accelerator_type} serves no predictions in {region}",
                    valid=f"one of the regions {_listed(where)}",
                )
            )
    return found


def _replica_findings(resources: Mapping[str, Any]) -> list[Finding]:
    """The replica counts: in their int32 fields, at least one, max not below min."""
    min_replica_count = resources.get("minReplicaCount", 1)
    max_replica_count = resources.get("maxReplicaCount")
    found: list[Finding] = []
    for key, replicas in (("min", min_replica_count), ("max", max_replica_count)):
        if replicas is not None and replicas > INT32_MAX:  # an int32 field of the protos
            return [beyond(f"dedicatedResources.{key}ReplicaCount", replicas, INT32_MAX)]
    if min_replica_count < 1:
        found.append(
            Finding(
                "dedicatedResources.minReplicaCount",
                f"{min_replica_count}",
                valid="1 or more (a dedicated deployment keeps at least one replica)",
            )
        )
    if max_replica_count is not None and max_replica_count < min_replica_count:
        found.append(
            Finding(
                "dedicatedResources.maxReplicaCount",
                f"{max_replica_count} is below minReplicaCount {min_replica_count}",
                valid=f"{min_replica_count} or more",
            )
        )
    return found


def traffic_findings(traffic: Mapping[str, Any], deployments: Iterable[str]) -> list[Finding]:
    """A traffic split: percents (whole numbers 0-100) of named deployments, summing to 100
    (paths in the split: a deployment's name, or ``""`` for the whole)."""
    names = sorted(deployments)
    found: list[Finding] = []
    unknown = sorted(set(traffic) - set(names))
    if unknown:
        found.append(
            Finding(
                "",
                f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a "
                "deployment of this endpoint",
                valid=", ".join(names) or "none",
            )
        )
    total = 0.0
    for name, percent in sorted(traffic.items()):
        if not isinstance(percent, int | float) or isinstance(percent, bool):
            found.append(Finding(name, f"{percent!r} is not a number", valid="0 to 100"))
            continue
        if percent != int(percent) or not 0 <= percent <= 100:
            found.append(Finding(name, f"{percent}", valid="a whole percent from 0 to 100"))
        total += percent
    if names and not found and total != 100:
        split = ", ".join(f"{k}: {v:g}" for k, v in sorted(traffic.items())) or "empty"
        found.append(Finding("", f"sums to {total:g} ({split})", valid="percents summing to 100"))
    return found


def image_findings(image: str, *, environment: str) -> list[Finding]:
    """The serving image: by digest in prod; a prebuilt TensorFlow image older than the
    TensorFlow that saved the model is a warning (it may not load it)."""
    found: list[Finding] = []
    if environment == "prod" and not is_by_digest(image):
        found.append(
            Finding(
                "",
                f"{image!r} is not an image by digest (a tag can move under a served model "
                "in prod)",
                valid=DIGEST_FORM,
            )
        )
    catalog = prediction_catalog()
    prebuilt = catalog.prebuilt_pattern.search(image)
    if prebuilt is not None:
        saved_with = trainer_tensorflow()
        served = f"2.{prebuilt.group(2)}"
        if saved_with is None or _version(saved_with) > _version(served):
            found.append(
                Finding(
                    "",
                    f"Google's prebuilt TensorFlow prediction images stop at "
                    f"{catalog.prebuilt_newest} and this one serves TF {served}, while the "
                    f"trainer saves with TensorFlow {saved_with or '2.21'}: a SavedModel may "
                    "use ops the older runtime lacks. Our serving image "
                    "(docker/serving.Dockerfile) serves with the trainer's TensorFlow",
                    severity="warning",
                )
            )
    return found


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


@cache
def trainer_tensorflow() -> str | None:
    """The TensorFlow version installed here (the trainer's, from the lock), if any."""
    from importlib import metadata

    try:
        return metadata.version("tensorflow")
    except metadata.PackageNotFoundError:
        return None


__all__ = [
    "CATALOG_FILE",
    "PredictionCatalog",
    "deployment_findings",
    "image_findings",
    "prediction_catalog",
    "traffic_findings",
]
