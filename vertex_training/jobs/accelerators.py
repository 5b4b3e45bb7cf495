"""Which accelerators fit which machine, and where: the rules Vertex enforces at submit time.

Sources: the GPU compatibility table and GPU region list of the AI Platform Training
guide "Using GPUs for training models in the cloud" (``seeds/004``), copied row by row,
plus the machine families Vertex added later (a2-ultragpu A100 80GB, g2 L4, a3 H100)
from Vertex's "Configure compute resources for custom training" page.

Zones are modelled only as far as the rule "all GPU types of one job must be offered
together in one zone of the region" needs: a region maps to the sets of GPU types its
zones offer. For regions where we know no finer split we list one set, which makes the
rule a plain per-region check. The tables are data: when Google adds a GPU somewhere,
add it here (and a test row) rather than teaching the validator about exceptions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

A100 = "NVIDIA_TESLA_A100"
A100_80GB = "NVIDIA_A100_80GB"
K80 = "NVIDIA_TESLA_K80"
P4 = "NVIDIA_TESLA_P4"
P100 = "NVIDIA_TESLA_P100"
T4 = "NVIDIA_TESLA_T4"
V100 = "NVIDIA_TESLA_V100"
L4 = "NVIDIA_L4"
H100 = "NVIDIA_H100_80GB"
H100_MEGA = "NVIDIA_H100_MEGA_80GB"

ACCELERATOR_TYPES: frozenset[str] = frozenset(
    {A100, A100_80GB, K80, P4, P100, T4, V100, L4, H100, H100_MEGA}
)
"""Accelerator enum names (``aiplatform_v1.AcceleratorType``) this project validates."""

_ONE_TO_FOUR = (1, 2, 4)
_ONE_TO_EIGHT = (1, 2, 4, 8)


def _row(
    k80: tuple[int, ...] = (),
    p4: tuple[int, ...] = (),
    p100: tuple[int, ...] = (),
    t4: tuple[int, ...] = (),
    v100: tuple[int, ...] = (),
) -> Mapping[str, frozenset[int]]:
    cells = {K80: k80, P4: p4, P100: p100, T4: t4, V100: v100}
    return MappingProxyType({gpu: frozenset(counts) for gpu, counts in cells.items() if counts})


# The seed table, column order A100 | K80 | P4 | P100 | T4 | V100. The A100 column is empty
# for every n1 machine (A100 only attaches to a2), and the sparse rows (n1-*-64, n1-*-96)
# offer P4, T4 and V100 only: P100 stops at 64 vCPUs and 8 x K80 at 208 GB of memory.
_N1_SMALL = _row(_ONE_TO_EIGHT, _ONE_TO_FOUR, _ONE_TO_FOUR, _ONE_TO_FOUR, _ONE_TO_EIGHT)
_N1_16 = _row((2, 4, 8), _ONE_TO_FOUR, _ONE_TO_FOUR, _ONE_TO_FOUR, (2, 4, 8))
_N1_32 = _row((4, 8), (2, 4), (2, 4), (2, 4), (4, 8))
_N1_BIG = _row(p4=(4,), t4=(4,), v100=(8,))

SEED_GPU_TABLE: Mapping[str, Mapping[str, frozenset[int]]] = MappingProxyType(
    {
        "n1-standard-4": _N1_SMALL,
        "n1-standard-8": _N1_SMALL,
        "n1-standard-16": _N1_16,
        "n1-standard-32": _N1_32,
        "n1-standard-64": _N1_BIG,
        "n1-standard-96": _N1_BIG,
        "n1-highmem-2": _N1_SMALL,
        "n1-highmem-4": _N1_SMALL,
        "n1-highmem-8": _N1_SMALL,
        "n1-highmem-16": _N1_16,
        "n1-highmem-32": _N1_32,
        "n1-highmem-64": _N1_BIG,
        "n1-highmem-96": _N1_BIG,
        "n1-highcpu-16": _N1_16,
        "n1-highcpu-32": _N1_32,
        "n1-highcpu-64": _row((8,), (4,), (4,), (4,), (8,)),
        "n1-highcpu-96": _N1_BIG,
        "a2-highgpu-1g": MappingProxyType({A100: frozenset({1})}),
        "a2-highgpu-2g": MappingProxyType({A100: frozenset({2})}),
        "a2-highgpu-4g": MappingProxyType({A100: frozenset({4})}),
        "a2-highgpu-8g": MappingProxyType({A100: frozenset({8})}),
        "a2-megagpu-16g": MappingProxyType({A100: frozenset({16})}),
    }
)
"""Valid accelerator counts per machine type, exactly as the seed table lists them."""


def _fixed(gpu: str, count: int) -> Mapping[str, frozenset[int]]:
    return MappingProxyType({gpu: frozenset({count})})


CURRENT_FAMILIES_TABLE: Mapping[str, Mapping[str, frozenset[int]]] = MappingProxyType(
    {
        **{f"a2-ultragpu-{n}g": _fixed(A100_80GB, n) for n in (1, 2, 4, 8)},
        **{f"g2-standard-{cpus}": _fixed(L4, 1) for cpus in (4, 8, 12, 16, 32)},
        "g2-standard-24": _fixed(L4, 2),
        "g2-standard-48": _fixed(L4, 4),
        "g2-standard-96": _fixed(L4, 8),
        **{f"a3-highgpu-{n}g": _fixed(H100, n) for n in (1, 2, 4, 8)},
        "a3-megagpu-8g": _fixed(H100_MEGA, 8),
    }
)
"""Machine families with built-in GPUs that postdate the seed (Vertex docs)."""

ACCELERATOR_COUNTS: Mapping[str, Mapping[str, frozenset[int]]] = MappingProxyType(
    {**SEED_GPU_TABLE, **CURRENT_FAMILIES_TABLE}
)

GPU_BUILT_IN_PREFIXES = ("a2-", "a3-", "g2-")
"""Families whose machines come with their GPUs: they never run without them."""

_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9]+(-[a-z0-9]+)*$")

# Regions from the seed list with the GPU types each offers (AI Platform / Vertex region
# guide); zones split only where we know the types are not offered together. us-central1
# is split so that the seed's own example (T4 + K80 + P100 in one job) is refused.
GPU_ZONES_BY_REGION: Mapping[str, tuple[frozenset[str], ...]] = MappingProxyType(
    {
        "us-central1": (
            frozenset({K80, P4, T4, V100, A100, L4}),
            frozenset({P4, T4, V100, A100, L4}),
            frozenset({P4, P100, T4, V100, A100, A100_80GB, H100, H100_MEGA}),
            frozenset({P4, P100, T4, V100, A100, L4}),
        ),
        "us-west1": (frozenset({K80, P100, T4, V100, L4}),),
        "us-west2": (frozenset({P4, T4}),),
        "us-east1": (frozenset({K80, P100, T4, V100, L4}),),
        "us-east4": (frozenset({P4, T4, A100_80GB, H100, H100_MEGA, L4}),),
        "northamerica-northeast1": (frozenset({P4, T4}),),
        "southamerica-east1": (frozenset({T4}),),
        "europe-west1": (frozenset({K80, P100, T4}),),
        "europe-west2": (frozenset({T4}),),
        "europe-west4": (frozenset({A100, A100_80GB, P4, T4, V100, L4, H100, H100_MEGA}),),
        "asia-south1": (frozenset({T4}),),
        "asia-southeast1": (frozenset({A100, A100_80GB, P4, T4, L4, H100}),),
        "asia-east1": (frozenset({K80, P100, T4, V100, L4}),),
        "asia-northeast1": (frozenset({A100, T4, L4}),),
        "asia-northeast3": (frozenset({A100, T4}),),
        "australia-southeast1": (frozenset({P4, T4}),),
    }
)

GPU_REGIONS: frozenset[str] = frozenset(GPU_ZONES_BY_REGION)
"""The seed's list of regions that offer GPUs for training."""


class AcceleratorError(ValueError):
    """A machine / accelerator / region combination Vertex would refuse."""


def accelerator_counts_allowed(machine_type: str, accelerator_type: str) -> frozenset[int]:
    """Counts of ``accelerator_type`` that ``machine_type`` takes (empty: none)."""
    return ACCELERATOR_COUNTS.get(machine_type, {}).get(accelerator_type, frozenset())


def _fmt(counts: Iterable[int]) -> str:
    return ", ".join(str(c) for c in sorted(counts))


def check_machine(machine_type: str, accelerator_type: str | None, accelerator_count: int) -> None:
    """Raise ``AcceleratorError`` unless Vertex accepts this machine/accelerator pair."""
    if not _MACHINE_TYPE.match(machine_type):
        raise AcceleratorError(
            f"machine_type {machine_type!r} is not a Compute Engine machine type name "
            "(lowercase words joined by '-', e.g. 'n1-standard-8')"
        )
    offered = ACCELERATOR_COUNTS.get(machine_type, {})
    if accelerator_type is None:
        if accelerator_count:
            raise AcceleratorError(
                f"accelerator_count is {accelerator_count} but accelerator_type is unset; "
                "set accelerator_type or use accelerator_count 0"
            )
        if machine_type.startswith(GPU_BUILT_IN_PREFIXES):
            options = "; ".join(f"{g} x {_fmt(c)}" for g, c in sorted(offered.items()))
            raise AcceleratorError(
                f"machine_type {machine_type!r} comes with GPUs and needs its "
                f"accelerator: {options or 'no known configuration (unknown machine type)'}"
            )
        return
    if accelerator_type not in ACCELERATOR_TYPES:
        raise AcceleratorError(
            f"accelerator_type {accelerator_type!r} is unknown; valid: "
            f"{', '.join(sorted(ACCELERATOR_TYPES))}"
        )
    if not offered:
        attaching = sorted(m for m, row in ACCELERATOR_COUNTS.items() if accelerator_type in row)
        raise AcceleratorError(
            f"machine_type {machine_type!r} takes no GPUs; {accelerator_type} attaches to: "
            f"{', '.join(attaching)}"
        )
    counts = offered.get(accelerator_type)
    if not counts:
        raise AcceleratorError(
            f"machine_type {machine_type!r} does not take {accelerator_type}; it takes "
            + "; ".join(f"{g} x {_fmt(c)}" for g, c in sorted(offered.items()))
        )
    if accelerator_count not in counts:
        raise AcceleratorError(
            f"accelerator_count {accelerator_count} of {accelerator_type} on {machine_type!r} "
            f"is not valid; valid counts: {_fmt(counts)}"
        )


def check_region(region: str, accelerator_types: Iterable[str]) -> None:
    """Raise ``AcceleratorError`` unless one zone of ``region`` offers every type."""
    wanted = frozenset(accelerator_types)
    if not wanted:
        return
    zones = GPU_ZONES_BY_REGION.get(region)
    if zones is None:
        raise AcceleratorError(
            f"region {region!r} offers no GPUs for training; GPU regions: "
            f"{', '.join(sorted(GPU_REGIONS))}"
        )
    offered = frozenset().union(*zones)
    missing = sorted(wanted - offered)
    if missing:
        where = sorted(
            r for r, zs in GPU_ZONES_BY_REGION.items() if set(missing) <= set().union(*zs)
        )
        raise AcceleratorError(
            f"{', '.join(missing)} not offered in region {region!r} (it offers "
            f"{', '.join(sorted(offered))}); regions offering it: {', '.join(where) or 'none'}"
        )
    if not any(wanted <= zone for zone in zones):
        raise AcceleratorError(
            f"GPU types {', '.join(sorted(wanted))} are each offered in {region!r} but no "
            "single zone offers them together; a job's GPUs must share a zone: use fewer "
            "GPU types"
        )


__all__ = [
    "ACCELERATOR_COUNTS",
    "ACCELERATOR_TYPES",
    "CURRENT_FAMILIES_TABLE",
    "GPU_REGIONS",
    "GPU_ZONES_BY_REGION",
    "SEED_GPU_TABLE",
    "AcceleratorError",
    "accelerator_counts_allowed",
    "check_machine",
    "check_region",
]
