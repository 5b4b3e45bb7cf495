"""The price catalog: ``prices.json`` next to this module, read into typed rows.

Every row carries its source and the date it was read, so an estimate can say where a
number comes from and how old it is. A row that lacks either, a negative price or a
duplicate row is a ``PriceCatalogError``: a catalog that cannot be trusted is refused
whole, never half-used. Stdlib only, like the hardware catalog: estimating runs at
program evaluation and in policy packs.
"""

from __future__ import annotations

import datetime
import enum
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PRICES_PATH = Path(__file__).with_name("prices.json")
"""The data file ``price_catalog()`` reads and ``refresh`` rewrites."""

Target = Literal["training", "workbench"]
"""What the hardware is for, in this catalog and the hardware catalog alike: ``training``:
Vertex AI custom training (Vertex's own machine and GPU tables and prices);
``workbench``: the Compute Engine VM under a Workbench instance."""
PriceTarget = Literal["training", "workbench", "prediction"]
"""The targets this catalog prices: the hardware catalog's, and ``prediction``: a Vertex AI
online prediction node (machines and GPUs of ``serving/prediction_catalog.json``)."""
ItemKind = Literal["machines", "accelerators"]
TARGETS: tuple[Target, ...] = ("training", "workbench")
PRICE_TARGETS: tuple[PriceTarget, ...] = (*TARGETS, "prediction")
ITEM_KINDS: tuple[ItemKind, ...] = ("machines", "accelerators")
_ITEM_KEY: Mapping[ItemKind, str] = {"machines": "machine_type", "accelerators": "accelerator_type"}


class Pricing(enum.StrEnum):
    """Which price applies: Vertex ``scheduling.strategy: SPOT`` is billed at Spot prices."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"


class PriceCatalogError(ValueError):
    """``prices.json`` (or a refreshed copy) is malformed; the message names the row."""


@dataclass(frozen=True)
class PriceRow:
    """The hourly price of one machine type or accelerator in one region."""

    region: str
    item: str
    """Machine type (``n1-standard-8``) or accelerator enum name (``NVIDIA_TESLA_V100``)."""
    on_demand: float | None
    spot: float | None
    source: str
    """Where the price was read: a pricing page or a Billing Catalog SKU."""
    as_of: datetime.date

    def price(self, pricing: Pricing) -> float | None:
        return self.on_demand if pricing is Pricing.ON_DEMAND else self.spot


@dataclass(frozen=True)
class PriceCatalog:
    """Rows by (target, kind, region, item); an absent key is an unknown price."""

    rows: Mapping[tuple[PriceTarget, ItemKind, str, str], PriceRow]
    """In USD (``parse_price_catalog`` refuses another currency)."""

    def row(self, target: PriceTarget, kind: ItemKind, region: str, item: str) -> PriceRow | None:
        return self.rows.get((target, kind, region, item))


def _price(value: Any, where: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PriceCatalogError(f"{where}: {name} must be a price >= 0 or absent, got {value!r}")
    return float(value)


def _text(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise PriceCatalogError(f"{where}: '{key}' is missing or empty; every row names it")
    return value


def _checked_row(entry: Any, kind: ItemKind, where: str) -> PriceRow:
    """The row ``entry`` holds, or a ``PriceCatalogError`` naming its first problem."""
    if not isinstance(entry, Mapping):
        raise PriceCatalogError(f"{where}: must be an object")
    item = _text(entry, _ITEM_KEY[kind], where)
    region = _text(entry, "region", where)
    try:
        as_of = datetime.date.fromisoformat(_text(entry, "as_of", where))
    except ValueError as error:
        raise PriceCatalogError(f"{where}: as_of must be YYYY-MM-DD: {error}") from None
    row = PriceRow(
        region=region,
        item=item,
        on_demand=_price(entry.get("on_demand"), where, "on_demand"),
        spot=_price(entry.get("spot"), where, "spot"),
        source=_text(entry, "source", where),
        as_of=as_of,
    )
    if row.on_demand is None and row.spot is None:
        raise PriceCatalogError(f"{where}: {item} in {region} has no price at all")
    return row


def parse_price_catalog(data: Mapping[str, Any]) -> PriceCatalog:
    """Validate the JSON document of ``prices.json`` into a ``PriceCatalog``."""
    if data.get("currency", "USD") != "USD":
        raise PriceCatalogError(f"currency must be USD, got {data.get('currency')!r}")
    rows: dict[tuple[PriceTarget, ItemKind, str, str], PriceRow] = {}
    for target in PRICE_TARGETS:
        section = data.get(target) or {}
        if not isinstance(section, Mapping):
            raise PriceCatalogError(f"{target}: must be an object with machines/accelerators")
        for kind in ITEM_KINDS:
            entries = section.get(kind) or []
            if not isinstance(entries, list):
                raise PriceCatalogError(f"{target}.{kind}: must be a list of rows")
            for index, entry in enumerate(entries):
                row = _checked_row(entry, kind, f"{target}.{kind}[{index}]")
                key = (target, kind, row.region, row.item)
                if key in rows:
                    raise PriceCatalogError(
                        f"{target}.{kind}[{index}]: {row.item} in {row.region} is listed twice"
                    )
                rows[key] = row
    return PriceCatalog(rows)


def load_price_catalog(path: Path) -> PriceCatalog:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise PriceCatalogError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, Mapping):
        raise PriceCatalogError(f"{path}: expected a JSON object")
    return parse_price_catalog(data)


@functools.cache
def price_catalog() -> PriceCatalog:
    """The catalog shipped with the package (read once per process)."""
    return load_price_catalog(PRICES_PATH)


__all__ = [
    "ITEM_KINDS",
    "PRICES_PATH",
    "PRICE_TARGETS",
    "TARGETS",
    "ItemKind",
    "PriceCatalog",
    "PriceCatalogError",
    "PriceRow",
    "PriceTarget",
    "Pricing",
    "Target",
    "load_price_catalog",
    "parse_price_catalog",
    "price_catalog",
]
