"""A small price catalog with round numbers, so that expected costs are easy to check by hand."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_training.cost.catalog import PriceCatalog, parse_price_catalog

SOURCE = "https://example.test/prices"


def row(
    region: str, key: str, item: str, on_demand: float | None, spot: float | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"region": region, key: item, "source": SOURCE, "as_of": "2026-01-02"}
    if on_demand is not None:
        out["on_demand"] = on_demand
    if spot is not None:
        out["spot"] = spot
    return out


def machine(
    region: str, name: str, on_demand: float | None, spot: float | None = None
) -> dict[str, Any]:
    return row(region, "machine_type", name, on_demand, spot)


def accelerator(
    region: str, name: str, on_demand: float | None, spot: float | None = None
) -> dict[str, Any]:
    return row(region, "accelerator_type", name, on_demand, spot)


TEST_PRICES: dict[str, Any] = {
    "schema": 1,
    "currency": "USD",
    "training": {
        "machines": [
            machine("us-central1", "n1-standard-8", 0.5, spot=0.1),
            machine("us-central1", "n1-standard-4", 0.25),
        ],
        "accelerators": [accelerator("us-central1", "NVIDIA_TESLA_V100", 3.0, spot=1.0)],
    },
    "workbench": {
        "machines": [machine("us-central1", "n1-standard-8", 0.4)],
        "accelerators": [accelerator("us-central1", "NVIDIA_TESLA_T4", 0.35)],
    },
}


@pytest.fixture
def prices() -> PriceCatalog:
    return parse_price_catalog(TEST_PRICES)
