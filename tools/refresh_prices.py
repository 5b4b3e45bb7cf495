"""``.venv/bin/python -m tools.refresh_prices``: rewrite ``prices.json`` from the Cloud Billing
Catalog API (``services.list`` and ``services.skus.list``, REST).

Vertex AI custom training and Compute Engine bill machines by their family's per-vCPU
("Core") and per-GiB ("Ram") SKUs and GPUs by a SKU per GPU type, each per region and,
for Spot ("Spot Preemptible ..."), separately. A machine's hourly price is therefore
``vCPUs x core + memory x RAM`` with the vCPUs and memory of the hardware catalog; a row
is written for every machine and GPU of the hardware catalog in every region of it that
the API prices, with the SKU ids as its source and the SKU's effective date as its as-of.
Rows the API did not give (another family, a region it does not list) are kept as they
were, with their own older as-of.

Credentials: Application Default Credentials (``gcloud auth application-default login``
or ``GOOGLE_APPLICATION_CREDENTIALS``); without them the command says so and changes
nothing. The HTTP layer is one function (``Fetch``), so tests replay a recorded response.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.google_api import Fetch, RefreshError, authorized_fetch, pages, run_refresh
from vertex_training.cost.catalog import (
    ITEM_KINDS,
    PRICES_PATH,
    TARGETS,
    Pricing,
    Target,
    parse_price_catalog,
)
from vertex_training.jobs.rules.catalog import HardwareCatalog
from vertex_training.jobs.rules.catalog import catalog as hardware_catalog

BILLING_API = "https://cloudbilling.googleapis.com/v1"
BILLING_SCOPE = "https://www.googleapis.com/auth/cloud-billing.readonly"
SERVICE_NAMES: Mapping[Target, str] = {"training": "Vertex AI", "workbench": "Compute Engine"}
"""The Billing Catalog service whose SKUs price each target."""


_MACHINE_PART = re.compile(
    r"\b(?P<family>[A-Z][0-9][A-Z]?|E2) (?:Predefined )?Instance (?P<part>Core|Ram)\b", re.I
)
_GPU = re.compile(r"\bNvidia (?P<gpu>.+?) GPU\b", re.I)
_SPOT = re.compile(r"\b(Spot|Preemptible)\b", re.I)
_TRAINING = re.compile(r"\btrain", re.I)

GPU_NAMES: Mapping[str, str] = {
    "TESLA_K80": "NVIDIA_TESLA_K80",
    "TESLA_P4": "NVIDIA_TESLA_P4",
    "TESLA_P100": "NVIDIA_TESLA_P100",
    "TESLA_V100": "NVIDIA_TESLA_V100",
    "TESLA_T4": "NVIDIA_TESLA_T4",
    "TESLA_A100": "NVIDIA_TESLA_A100",
    "A100": "NVIDIA_TESLA_A100",
    "A100_80GB": "NVIDIA_A100_80GB",
    "L4": "NVIDIA_L4",
    "H100_80GB": "NVIDIA_H100_80GB",
    "H100_80GB_MEGA": "NVIDIA_H100_MEGA_80GB",
    "H100_MEGA_80GB": "NVIDIA_H100_MEGA_80GB",
    "H200_141GB": "NVIDIA_H200_141GB",
    "B200": "NVIDIA_B200",
    "RTX_PRO_6000": "NVIDIA_RTX_PRO_6000",
}
"""The GPU names of SKU descriptions ("Nvidia Tesla V100 GPU ...") -> Vertex enum names."""


@dataclass(frozen=True)
class SkuPrice:
    """One priced component: a family's core or RAM, or a GPU, in one region."""

    target: Target
    region: str
    component: str
    """``N1:Core``, ``N1:Ram`` or a GPU enum name (``NVIDIA_TESLA_V100``)."""
    pricing: Pricing
    usd: float
    """Per hour (per vCPU, per GiB or per GPU)."""
    sku_id: str
    as_of: datetime.date


@dataclass
class RefreshResult:
    document: dict[str, Any]
    updated: int = 0
    kept: int = 0
    unclassified: list[str] = field(default_factory=list)
    """SKU descriptions of the right services that matched no pattern (for a look)."""


# ----------------------------------------------------------------------- HTTP


def _pages(fetch: Fetch, url: str, key: str, params: Mapping[str, str]) -> Iterable[Any]:
    for page in pages(fetch, url, params):
        yield from page.get(key, [])


def service_id(fetch: Fetch, display_name: str) -> str:
    for service in _pages(fetch, f"{BILLING_API}/services", "services", {"pageSize": "5000"}):
        if service.get("displayName") == display_name:
            return str(service["serviceId"])
    raise RefreshError(f"the Billing Catalog lists no service named {display_name!r}")


# ----------------------------------------------------------------------- SKUs


def _unit_price(sku: Mapping[str, Any]) -> tuple[float, datetime.date] | None:
    infos = sku.get("pricingInfo") or []
    if not infos:
        return None
    info = infos[0]
    rates = (info.get("pricingExpression") or {}).get("tieredRates") or []
    # The list price is the first tier (later tiers are volume discounts).
    base = [r for r in rates if float(r.get("startUsageAmount") or 0) == 0] or rates[:1]
    if not base:
        return None
    money = base[0].get("unitPrice") or {}
    usd = int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9
    effective = str(info.get("effectiveTime") or "")[:10]
    try:
        as_of = datetime.date.fromisoformat(effective)
    except ValueError:
        as_of = datetime.date.today()
    return usd, as_of


def gpu_enum(text: str) -> str | None:
    key = re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")
    return GPU_NAMES.get(key)


def classify_sku(target: Target, sku: Mapping[str, Any]) -> tuple[list[SkuPrice], bool]:
    """The prices one SKU gives (one per region it serves) and whether it was recognised."""
    description = str(sku.get("description") or "")
    category = sku.get("category") or {}
    if target == "training" and not _TRAINING.search(description):
        return [], True  # prediction, pipelines ...: not ours, not a miss either
    if category.get("usageType") not in (None, "OnDemand", "Preemptible"):
        return [], True  # commitments
    spot = bool(_SPOT.search(description)) or category.get("usageType") == "Preemptible"
    machine = _MACHINE_PART.search(description)
    gpu = _GPU.search(description)
    if machine is not None:
        component = f"{machine['family'].upper()}:{machine['part'].capitalize()}"
    elif gpu is not None and (name := gpu_enum(gpu["gpu"])) is not None:
        component = name
    else:
        return [], False
    price = _unit_price(sku)
    if price is None:
        return [], False
    usd, as_of = price
    return [
        SkuPrice(
            target=target,
            region=str(region),
            component=component,
            pricing=Pricing.SPOT if spot else Pricing.ON_DEMAND,
            usd=usd,
            sku_id=str(sku.get("skuId") or sku.get("name") or "?"),
            as_of=as_of,
        )
        for region in sku.get("serviceRegions") or []
    ], True


# ----------------------------------------------------------------------- rows


def _rows(
    prices: Sequence[SkuPrice], hardware: HardwareCatalog, service: Mapping[Target, str]
) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """``prices.json`` rows keyed by (target, kind, region, item)."""
    index: dict[tuple[Target, str, str, Pricing], SkuPrice] = {}
    for price in prices:
        index[(price.target, price.region, price.component, price.pricing)] = price
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def put(target: Target, kind: str, region: str, item: str, found: dict[Pricing, Any]) -> None:
        if not found:
            return
        skus = sorted({sku for _, skus, _ in found.values() for sku in skus})
        row: dict[str, Any] = {
            "region": region,
            ("machine_type" if kind == "machines" else "accelerator_type"): item,
        }
        for pricing, (usd, _skus, _date) in found.items():
            row[pricing.value] = round(usd, 6)
        row["source"] = f"{BILLING_API}/services/{service[target]}/skus ({', '.join(skus)})"
        row["as_of"] = max(date for _, _, date in found.values()).isoformat()
        rows[(target, kind, region, item)] = row

    for target in TARGETS:
        machines = hardware.machines[target]
        for region, region_info in hardware.regions.items():
            for name, machine in machines.items():
                if machine.vcpus is None or machine.memory_gb is None:
                    continue
                family = name.split("-")[0].upper()
                found: dict[Pricing, Any] = {}
                for pricing in Pricing:
                    core = index.get((target, region, f"{family}:Core", pricing))
                    ram = index.get((target, region, f"{family}:Ram", pricing))
                    if core and ram:
                        usd = machine.vcpus * core.usd + machine.memory_gb * ram.usd
                        found[pricing] = (
                            usd,
                            (core.sku_id, ram.sku_id),
                            max(core.as_of, ram.as_of),
                        )
                put(target, "machines", region, name, found)
            for accelerator in sorted(region_info.accelerators):
                found = {}
                for pricing in Pricing:
                    gpu = index.get((target, region, accelerator, pricing))
                    if gpu:
                        found[pricing] = (gpu.usd, (gpu.sku_id,), gpu.as_of)
                put(target, "accelerators", region, accelerator, found)
    return rows


def refreshed_document(fetch: Fetch, existing: Mapping[str, Any]) -> RefreshResult:
    """``existing`` (the JSON of ``prices.json``) with every row the API prices replaced."""
    hardware = hardware_catalog()
    services = {target: service_id(fetch, name) for target, name in SERVICE_NAMES.items()}
    prices: list[SkuPrice] = []
    unclassified: list[str] = []
    for target, sid in services.items():
        url = f"{BILLING_API}/services/{sid}/skus"
        for sku in _pages(fetch, url, "skus", {"currencyCode": "USD", "pageSize": "5000"}):
            found, recognised = classify_sku(target, sku)
            prices.extend(found)
            if not recognised:
                unclassified.append(str(sku.get("description")))
    fresh = _rows(prices, hardware, services)
    document = json.loads(json.dumps(existing))  # a deep copy, plain JSON
    result = RefreshResult(document, unclassified=unclassified)
    for target in TARGETS:
        section = document.setdefault(target, {})
        for kind in ITEM_KINDS:
            key_name = "machine_type" if kind == "machines" else "accelerator_type"
            kept = [
                row
                for row in section.get(kind, [])
                if (target, kind, row["region"], row[key_name]) not in fresh
            ]
            result.kept += len(kept)
            new = [row for key, row in fresh.items() if key[:2] == (target, kind)]
            result.updated += len(new)
            section[kind] = sorted(kept + new, key=lambda r: (r["region"], r[key_name]))
    parse_price_catalog(document)  # never write a catalog that would not load
    return result


def main(argv: list[str] | None = None, fetch: Fetch | None = None) -> int:
    def refresh(_args: argparse.Namespace, existing: Any) -> tuple[Any, list[str]]:
        result = refreshed_document(fetch or authorized_fetch(BILLING_SCOPE)[0], existing)
        report = [
            f"{result.updated} rows from the Billing Catalog, {result.kept} kept as they were"
        ]
        if result.unclassified:
            report.append(
                f"{len(result.unclassified)} SKUs not recognised, e.g. {result.unclassified[:3]}"
            )
        return result.document, report

    return run_refresh(argv, __doc__, PRICES_PATH, refresh, indent=1)


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "BILLING_API",
    "GPU_NAMES",
    "SERVICE_NAMES",
    "RefreshResult",
    "SkuPrice",
    "classify_sku",
    "gpu_enum",
    "main",
    "refreshed_document",
    "service_id",
]
