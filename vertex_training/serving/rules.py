"""What Vertex would refuse in a model or an endpoint, judged before anything is created.

Every function returns problems as ``"<field path>: <what is wrong>; valid: ..."`` with the
path relative to the declaration (camelCase, as in a stack's YAML and the API), so the
Python resources and the stack reader phrase them with their own prefix. Machines and
accelerators come from ``prediction_catalog.json`` (a catalog of its own: prediction's
differ from training's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

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

    @property
    def accelerators(self) -> frozenset[str]:
        return frozenset(self.accelerator_regions)


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


INT32_MAX = 2**31 - 1
"""The most an int32 field of the protos (a replica count) holds."""


def deployment_problems(
    path: str,
    *,
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int | None,
    min_replica_count: int,
    max_replica_count: int | None,
    region: str | None,
) -> tuple[list[str], list[str]]:
    """Errors and warnings of one deployment's ``dedicatedResources`` (``path``: where it
    is declared). ``region`` None: local, where only the shape is judged."""
    catalog = prediction_catalog()
    errors: list[str] = []
    warnings: list[str] = []
    spec = f"{path}.dedicatedResources"
    if machine_type not in catalog.machine_types:
        errors.append(
            f"{spec}.machineSpec.machineType: {machine_type!r} is not a prediction machine "
            f"type (catalog as of {catalog.as_of}); valid: {_listed(catalog.machine_types)}"
        )
    built_in = catalog.gpu_machines.get(machine_type)
    family = machine_type.rsplit("-", 1)[0]
    if built_in is not None:
        gpu, count = built_in
        if accelerator_type not in (None, gpu) or accelerator_count not in (None, 0, count):
            errors.append(
                f"{spec}.machineSpec: {machine_type} comes with {count} x {gpu}; valid: "
                f"acceleratorType {gpu!r} with acceleratorCount {count}, or neither"
            )
        accelerator_type, accelerator_count = gpu, count
    elif accelerator_type is not None:
        counts = catalog.attachable.get(accelerator_type)
        if counts is None:
            errors.append(
                f"{spec}.machineSpec.acceleratorType: {accelerator_type!r} does not attach "
                f"to a prediction machine {machine_type}; valid: {_listed(catalog.attachable)}"
                " (on n1 machines), or a machine that comes with its GPU (a2, a3, g2)"
            )
        elif family not in catalog.attachable_families:
            errors.append(
                f"{spec}.machineSpec.machineType: {accelerator_type} attaches only to "
                f"{_listed(catalog.attachable_families)} machines, not {machine_type}"
            )
        elif (accelerator_count or 1) not in counts:
            errors.append(
                f"{spec}.machineSpec.acceleratorCount: {accelerator_count} x "
                f"{accelerator_type} is not allowed; valid: {', '.join(map(str, counts))}"
            )
    elif accelerator_count:
        errors.append(
            f"{spec}.machineSpec.acceleratorCount: {accelerator_count} without an "
            "acceleratorType; valid: set acceleratorType too, or leave the count out"
        )
    if region is not None:
        if region not in catalog.regions:
            warnings.append(
                f"{path}: region {region!r} is not in the prediction catalog (as of "
                f"{catalog.as_of}); its machines are not checked there"
            )
        elif accelerator_type is not None and accelerator_type in catalog.accelerator_regions:
            where = catalog.accelerator_regions[accelerator_type]
            if region not in where:
                errors.append(
                    f"{spec}.machineSpec.acceleratorType: {accelerator_type} serves no "
                    f"predictions in {region}; valid: one of the regions {_listed(where)}"
                )
    for key, replicas in (("min", min_replica_count), ("max", max_replica_count)):
        if replicas is not None and replicas > INT32_MAX:  # an int32 field of the protos
            digits = len(str(replicas))
            shown = str(replicas) if digits <= 20 else f"a number of {digits} digits"
            errors.append(
                f"{spec}.{key}ReplicaCount: {shown} is more than the field holds; valid: 1 "
                f"to {INT32_MAX}"
            )
            return errors, warnings
    if min_replica_count < 1:
        errors.append(
            f"{spec}.minReplicaCount: {min_replica_count}; valid: 1 or more (a dedicated "
            "deployment keeps at least one replica)"
        )
    if max_replica_count is not None and max_replica_count < min_replica_count:
        errors.append(
            f"{spec}.maxReplicaCount: {max_replica_count} is below minReplicaCount "
            f"{min_replica_count}; valid: {min_replica_count} or more"
        )
    return errors, warnings


def traffic_problems(
    path: str, traffic: Mapping[str, Any], deployments: Sequence[str]
) -> list[str]:
    """A traffic split: percents (whole numbers 0-100) of named deployments, summing to 100."""
    problems: list[str] = []
    unknown = sorted(set(traffic) - set(deployments))
    if unknown:
        problems.append(
            f"{path}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a "
            f"deployment of this endpoint; valid: {', '.join(sorted(deployments)) or 'none'}"
        )
    total = 0.0
    for name, percent in sorted(traffic.items()):
        if not isinstance(percent, int | float) or isinstance(percent, bool):
            problems.append(f"{path}.{name}: {percent!r} is not a number; valid: 0 to 100")
            continue
        if percent != int(percent) or not 0 <= percent <= 100:
            problems.append(f"{path}.{name}: {percent}; valid: a whole percent from 0 to 100")
        total += percent
    if deployments and not problems and total != 100:
        split = ", ".join(f"{k}: {v:g}" for k, v in sorted(traffic.items())) or "empty"
        problems.append(f"{path}: sums to {total:g} ({split}); valid: percents summing to 100")
    return problems


def image_problems(path: str, image: str, *, environment: str) -> tuple[list[str], list[str]]:
    """The serving image: by digest in prod; a prebuilt TensorFlow image older than the
    TensorFlow that saved the model is a warning (it may not load it)."""
    errors: list[str] = []
    warnings: list[str] = []
    if environment == "prod" and not is_by_digest(image):
        errors.append(
            f"{path}: {image!r} is not an image by digest (a tag can move under a served "
            f"model in prod); valid: {DIGEST_FORM}"
        )
    catalog = prediction_catalog()
    prebuilt = catalog.prebuilt_pattern.search(image)
    if prebuilt is not None:
        saved_with = trainer_tensorflow()
        served = f"2.{prebuilt.group(2)}"
        if saved_with is None or _version(saved_with) > _version(served):
            warnings.append(
                f"{path}: Google's prebuilt TensorFlow prediction images stop at "
                f"{catalog.prebuilt_newest} and this one serves TF {served}, while the "
                f"trainer saves with TensorFlow {saved_with or '2.21'}: a SavedModel may use "
                "ops the older runtime lacks. Our serving image (docker/serving.Dockerfile) "
                "serves with the trainer's TensorFlow"
            )
    return errors, warnings


LOCAL_REFUSED: Mapping[str, Mapping[str, str]] = {
    "Model": {
        "explanationSpec": "explanations run on Vertex only",
        "containerSpec.command": "the local twin runs our prediction server, not a container",
        "containerSpec.args": "the local twin runs our prediction server, not a container",
    },
    "Endpoint": {
        "network": "private endpoints run on Vertex only",
        "privateServiceConnectConfig": "private endpoints run on Vertex only",
        "dedicatedEndpointEnabled": "dedicated endpoints run on Vertex only",
    },
    "DeployedModel": {
        "explanationSpec": "explanations run on Vertex only",
        "privateEndpoints": "private endpoints run on Vertex only",
        "sharedResources": "deployment resource pools run on Vertex only",
    },
}
"""Fields the local twin cannot honour, refused before anything is created (docs/serving.md
lists what it records and what only matters on Google Cloud)."""


def local_refusals(message: str, body: Mapping[str, Any]) -> list[str]:
    """``"<path>: runs on Vertex only ..."`` for each field of ``body`` the twin refuses."""
    problems = []
    for path, why in LOCAL_REFUSED[message].items():
        value: Any = body
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value not in (None, False, "", [], {}):
            problems.append(f"{path}: {why}; valid on the local stack: leave it out")
    return problems


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
    "deployment_problems",
    "image_problems",
    "local_refusals",
    "prediction_catalog",
    "traffic_problems",
]
