"""``.venv/bin/python -m tools.refresh_hardware --project P``: rebuild the hardware
catalog's availability rows (which GPU is offered in which zone) from the Compute Engine
API, ``acceleratorTypes.aggregatedList`` and ``machineTypes.aggregatedList``.

What the API says replaces the GPU rows of every region the catalog lists: each zone's
GPUs (attachable ones from ``acceleratorTypes``, built-in ones from the ``accelerators``
of ``machineTypes``), and a GPU the API reports anywhere gets ``regions_complete: true``
(the API lists every zone that offers it to the project), its ``absent_regions`` pruned
of regions where it now appears. TPU rows are kept: TPUs are not Compute Engine
accelerator types. Machine types the catalog does not know are reported, not added (the
Vertex training table is not the Compute Engine one). The catalog records when and from
what it was refreshed under ``refreshed``.

Credentials: Application Default Credentials with read access to Compute Engine; without
them the command says so and changes nothing. The HTTP layer is one function (``Fetch``),
so tests replay a recorded response.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.google_api import Fetch, RefreshError, authorized_fetch, pages, run_refresh
from vertex_training.jobs.rules.catalog import CATALOG_PATH, parse_catalog

COMPUTE_API = "https://compute.googleapis.com/compute/v1"
COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute.readonly"
SOURCES = (
    "acceleratorTypes.aggregatedList",
    "machineTypes.aggregatedList",
)


@dataclass
class AvailabilityResult:
    document: dict[str, Any]
    zones_seen: int = 0
    regions_updated: list[str] = field(default_factory=list)
    new_machine_types: list[str] = field(default_factory=list)
    """Machine types with GPUs the API lists and the catalog does not (for a look)."""
    unknown_accelerators: list[str] = field(default_factory=list)
    """Compute Engine accelerator names no catalog accelerator maps to."""


def _aggregated(fetch: Fetch, url: str, key: str) -> Iterable[tuple[str, Mapping[str, Any] | None]]:
    """(zone, item) over every page of an ``aggregatedList``; a zone without items (a
    ``warning`` entry such as NO_RESULTS_ON_PAGE) still exists: (zone, None)."""
    for page in pages(fetch, url, {}):
        for scope, entry in (page.get("items") or {}).items():
            if not scope.startswith("zones/"):
                continue
            zone = scope.removeprefix("zones/")
            items = entry.get(key) or []
            if not items:
                yield zone, None
            for item in items:
                yield zone, item


def _deprecated(item: Mapping[str, Any]) -> bool:
    state = (item.get("deprecated") or {}).get("state")
    return state in ("DEPRECATED", "OBSOLETE", "DELETED")


def zone_accelerators(
    fetch: Fetch, project: str, names: Mapping[str, str], result: AvailabilityResult
) -> dict[str, set[str]]:
    """Zone -> catalog accelerator names offered there, from both aggregated lists."""
    zones: dict[str, set[str]] = {}
    base = f"{COMPUTE_API}/projects/{project}/aggregated"
    unknown: set[str] = set()
    for zone, item in _aggregated(fetch, f"{base}/acceleratorTypes", "acceleratorTypes"):
        zones.setdefault(zone, set())
        if item is None or _deprecated(item):
            continue
        name = names.get(str(item.get("name")))
        if name is None:
            unknown.add(str(item.get("name")))
        else:
            zones[zone].add(name)
    known_machines = set(json_machine_names(result.document))
    new: set[str] = set()
    for zone, item in _aggregated(fetch, f"{base}/machineTypes", "machineTypes"):
        zones.setdefault(zone, set())
        built_in = (item or {}).get("accelerators") or []
        if item is None or not built_in or _deprecated(item):
            continue
        for accelerator in built_in:
            name = names.get(str(accelerator.get("guestAcceleratorType")))
            if name is not None:
                zones[zone].add(name)
        if str(item.get("name")) not in known_machines:
            new.add(str(item.get("name")))
    result.unknown_accelerators = sorted(unknown)
    result.new_machine_types = sorted(new)
    return zones


def json_machine_names(document: Mapping[str, Any]) -> list[str]:
    return [
        name
        for family in document.get("families", {}).values()
        for name in family.get("machines", {})
    ]


def refreshed_catalog(
    fetch: Fetch, project: str, existing: Mapping[str, Any], *, now: datetime.datetime
) -> AvailabilityResult:
    """``existing`` (the catalog's JSON) with its GPU availability rebuilt from the API."""
    document: dict[str, Any] = json.loads(json.dumps(existing))  # a deep copy, plain JSON
    result = AvailabilityResult(document)
    items = document["accelerators"]["items"]
    names = {
        spec["compute_engine_name"]: name
        for name, spec in items.items()
        if spec.get("compute_engine_name") and not spec.get("retired")
    }
    zones = zone_accelerators(fetch, project, names, result)
    if not zones:
        raise RefreshError(f"the Compute Engine API listed no zone for project {project!r}")
    result.zones_seen = len(zones)
    gpus = {name for name, spec in items.items() if spec.get("kind") == "gpu"}
    seen_gpus: set[str] = set()
    for region_name, region in document["regions"]["items"].items():
        api_zones = sorted(z for z in zones if z.rsplit("-", 1)[0] == region_name)
        if not api_zones:
            continue  # a Vertex region the project sees no zone of: left as it was
        old_split = region.get("zone_accelerators") or dict.fromkeys(
            region["zones"], region.get("accelerators", [])
        )
        split = {}
        for zone in api_zones:
            # TPUs are not Compute Engine accelerator types: their rows stay as they were.
            kept = [a for a in old_split.get(zone, []) if a not in gpus]
            split[zone] = sorted(zones[zone] | set(kept))
            seen_gpus |= zones[zone]
        region["zones"] = api_zones
        region["zone_accelerators"] = split
        region.pop("accelerators", None)
        result.regions_updated.append(region_name)
    # The API lists every zone offering a GPU to the project: where it answered for every
    # region of the catalog, each GPU's region list is complete.
    every_region = set(result.regions_updated) == set(document["regions"]["items"])
    for name in seen_gpus:
        spec = items[name]
        if every_region:
            spec["regions_complete"] = True
        offered = {
            r
            for r, region in document["regions"]["items"].items()
            for accs in (region.get("zone_accelerators") or {}).values()
            if name in accs
        } | {
            r
            for r, region in document["regions"]["items"].items()
            if name in region.get("accelerators", [])
        }
        absent = [r for r in spec.get("absent_regions", []) if r not in offered]
        if absent:
            spec["absent_regions"] = absent
        else:
            spec.pop("absent_regions", None)
    today = now.date().isoformat()
    document["regions"]["as_of"] = today
    document["accelerators"]["as_of"] = today
    document["refreshed"] = {
        "at": now.isoformat(timespec="seconds"),
        "from": [f"{COMPUTE_API} {source} (project {project})" for source in SOURCES],
        "zones": result.zones_seen,
        "regions": sorted(result.regions_updated),
        "every_region": every_region,
    }
    parse_catalog(document)  # never write a catalog that would not load
    return result


def main(argv: list[str] | None = None, fetch: Fetch | None = None) -> int:
    def refresh(args: argparse.Namespace, existing: Any) -> tuple[Any, list[str]]:
        get, project = (fetch, None) if fetch is not None else authorized_fetch(COMPUTE_SCOPE)
        project = args.project or project
        if not project:
            raise RefreshError("no project: pass --project P")
        result = refreshed_catalog(get, project, existing, now=datetime.datetime.now(datetime.UTC))
        report = [
            f"{result.zones_seen} zones from the Compute Engine API; regions rebuilt: "
            f"{', '.join(sorted(result.regions_updated))}"
        ]
        if result.new_machine_types:
            report.append(
                f"machine types with GPUs the catalog lacks: {', '.join(result.new_machine_types)}"
            )
        if result.unknown_accelerators:
            report.append(
                f"accelerator types the catalog lacks: {', '.join(result.unknown_accelerators)}"
            )
        return result.document, report

    return run_refresh(argv, __doc__, CATALOG_PATH, refresh, indent=2, project=True)


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "COMPUTE_API",
    "AvailabilityResult",
    "main",
    "refreshed_catalog",
    "zone_accelerators",
]
