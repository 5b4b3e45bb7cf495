"""The hardware catalog: ``hardware_catalog.json`` read into typed rows (machines,
accelerators, TPU topologies, regions and zones). Each section of the file names its
sources and the date it was read (a test holds them to the file). ``rules.hardware``
applies it.

Stdlib only, and loaded lazily: validating a job must not import TensorFlow or the
``aiplatform_v1`` client.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_training.cost.catalog import Target

CATALOG_PATH = Path(__file__).with_name("hardware_catalog.json")
"""The data file this module reads."""

MACHINE_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
TOPOLOGY = re.compile(r"^[1-9][0-9]*(x[1-9][0-9]*){1,2}$")
REGION_NAME = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")


class CatalogError(ValueError):
    """The data file contradicts itself (an unknown accelerator, region or zone)."""


@dataclass(frozen=True)
class AcceleratorType:
    """An ``aiplatform_v1.AcceleratorType`` value the catalog knows."""

    regions_complete: bool
    """True: a region the catalog does not list for it does not offer it (error)."""
    retired: str | None = None
    """Why it can no longer be used, when Google retired it."""
    replacement: str | None = None
    absent_regions: frozenset[str] = frozenset()
    """Regions known not to offer it, so refused even when ``regions_complete`` is false."""


@dataclass(frozen=True)
class MachineType:
    """A machine type as one target sees it, with the accelerators it takes."""

    name: str
    family: str
    vcpus: int | None
    memory_gb: float | None
    accelerators: Mapping[str, Collection[int]]
    """Accelerator type -> valid counts; empty when the machine takes none."""
    accelerator_required: bool = False
    """The machine comes with its accelerators (a2/a3/a4/a4x/g2/g4, cloud-tpu)."""
    counts_complete: bool = True
    topologies: Sequence[str] = ()
    topologies_complete: bool = True
    provisioning: Sequence[str] = ()
    """``scheduling.strategy`` values it is sold under, when not every one (e.g. SPOT,
    FLEX_START); empty: any."""


@dataclass(frozen=True)
class Region:
    """A Vertex AI region: its zones and the accelerator types offered in them."""

    zones: tuple[str, ...]
    accelerators: frozenset[str]
    zone_accelerators: Mapping[str, frozenset[str]]
    """Per zone name, where the split is known; empty otherwise."""


@dataclass(frozen=True)
class HardwareCatalog:
    """The parsed data file."""

    as_of: str
    """The date the sources were read (YYYY-MM-DD)."""
    accelerators: Mapping[str, AcceleratorType]
    families: Mapping[str, bool]
    """Each machine family (``n1``, ``a3``, ``ct5lp``) -> complete: True when a type of it
    the catalog does not list does not exist (error)."""
    machines: Mapping[Target, Mapping[str, MachineType]]
    """Each target's machine types by name (a target spelt otherwise is a KeyError, never
    another target's table)."""
    regions: Mapping[str, Region]
    attach_families_complete: bool = False
    """True: an accelerator attaches only to the families of the machines listed for it."""


# --- loading ---------------------------------------------------------------------------

_SIZES: Mapping[Target, str] = {"training": "vertex_sizes", "workbench": "compute_engine_sizes"}
"""Where a series lists its sizes for each target."""


def _workbench_gpus(
    vcpus: int, memory_gb: float, limits: Mapping[str, Sequence[Mapping[str, float]]]
) -> dict[str, frozenset[int]]:
    """The GPU counts Compute Engine attaches to a machine of this size: each count has a
    vCPU and a memory limit."""
    offered = {
        gpu: frozenset(
            int(row["count"])
            for row in rows
            if vcpus <= row["max_vcpus"] and memory_gb <= row["max_memory_gb"]
        )
        for gpu, rows in limits.items()
    }
    return {gpu: counts for gpu, counts in offered.items() if counts}


def _series_machines(family: str, fam: Mapping[str, Any], target: Target) -> dict[str, MachineType]:
    """The machines of a family's series on ``target``, each with the GPUs it takes there:
    Vertex's table row by row (``vertex_gpu_counts``), Compute Engine's per-count limits
    (``workbench_gpu_limits``)."""
    table = fam.get("vertex_gpu_counts", {"columns": [], "rows": {}})
    vertex_gpus = {
        machine: {gpu: frozenset(c) for gpu, c in zip(table["columns"], row, strict=True) if c}
        for machine, row in table["rows"].items()
    }
    limits = fam.get("workbench_gpu_limits", {}).get("limits", {})
    machines = {}
    for series_name, spec in fam.get("series", {}).items():
        for size in spec[_SIZES[target]]:
            if "memory_gb_per_vcpu" in spec:
                memory = round(size * spec["memory_gb_per_vcpu"], 2)
            else:
                memory = spec["memory_gb"][str(size)]
            name = f"{family}-{series_name}-{size}"
            if target == "training":
                gpus = vertex_gpus.pop(name, {})
            else:
                gpus = _workbench_gpus(size, memory, limits)
            machines[name] = MachineType(name, family, size, memory, gpus)
    if target == "training" and vertex_gpus:
        raise CatalogError(f"{sorted(vertex_gpus)} have GPU counts but no Vertex {family} size")
    return machines


def parse_catalog(data: Mapping[str, Any]) -> HardwareCatalog:
    """Build a ``HardwareCatalog`` from the data file's JSON, checking its cross-references."""
    acc_section = data["accelerators"]
    accelerators = {
        name: AcceleratorType(
            regions_complete=spec["regions_complete"],
            retired=spec.get("retired"),
            replacement=spec.get("replacement"),
            absent_regions=frozenset(spec.get("absent_regions", ())),
        )
        for name, spec in acc_section["items"].items()
    }

    machines: dict[Target, dict[str, MachineType]] = {target: {} for target in _SIZES}
    for fam_name, fam in data["families"].items():
        kind = fam["kind"]
        built_in = {"accelerator_required": kind == "gpu_built_in"}
        for target, table in machines.items():
            table.update(_series_machines(fam_name, fam, target))
            # Workbench instances are Compute Engine VMs: TPU VMs are not among them.
            if target == "training" or kind != "tpu":
                # The file spells a listed machine's fields as MachineType does.
                table.update(
                    (name, MachineType(name, fam_name, **{**built_in, **spec}))
                    for name, spec in fam.get("machines", {}).items()
                )

    def known(owner: str, named: Collection[str]) -> None:
        if unknown := sorted(set(named) - set(accelerators)):
            raise CatalogError(f"{owner} names unknown accelerators {unknown}")

    for machine in (m for table in machines.values() for m in table.values()):
        known(f"machine {machine.name}", machine.accelerators)

    regions = {}
    for name, spec in data["regions"]["items"].items():
        split = {z: frozenset(a) for z, a in spec.get("zone_accelerators", {}).items()}
        named = frozenset().union(*split.values()) if split else frozenset(spec["accelerators"])
        known(f"region {name}", named)
        if set(split) - set(spec["zones"]):
            raise CatalogError(f"region {name} splits zones it does not list")
        regions[name] = Region(tuple(spec["zones"]), named, split)

    for name, accelerator in accelerators.items():
        absent = accelerator.absent_regions
        if bad := sorted(r for r in absent if r not in regions or name in regions[r].accelerators):
            raise CatalogError(f"{name}: absent_regions {bad} unknown, or offering it")

    attach_complete = bool(acc_section.get("attach_families_complete", False))
    families = {name: fam["complete"] for name, fam in data["families"].items()}
    return HardwareCatalog(
        data["as_of"], accelerators, families, machines, regions, attach_complete
    )


@functools.cache
def catalog() -> HardwareCatalog:
    """The catalog from ``hardware_catalog.json``, parsed once per process."""
    return parse_catalog(json.loads(CATALOG_PATH.read_text(encoding="utf-8")))
