"""A small price catalog with round numbers, so that expected costs are easy to check by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.cost.bodies import custom_job, pool
from vertex_training.cost.catalog import PriceCatalog, parse_price_catalog
from vertex_training.cost.estimate import JobEstimate, WorkbenchEstimate, estimate_workbench
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.records import JobKind

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


def priced(prices: PriceCatalog, target: str, kind: str | None = None) -> set[str]:
    """The items of ``kind`` that ``prices`` prices for ``target``; without ``kind``, the
    regions it prices ``target`` in."""
    if kind is None:
        return {region for (t, _, region, _) in prices.rows if t == target}
    return {item for (t, k, _, item) in prices.rows if (t, k) == (target, kind)}


@pytest.fixture
def prices() -> PriceCatalog:
    return parse_price_catalog(TEST_PRICES)


@dataclass(frozen=True)
class SmallStack:
    exact: JobEstimate
    """``a``: 2 x (n1-standard-8 + a V100) for its expected hour: $7.00."""
    bounded: JobEstimate
    """``b``: one n1-standard-4 bounded by a 4 h timeout: $0.00 - $1.00."""
    workbench: WorkbenchEstimate
    """An n1-standard-8 Workbench for one hour: $0.40."""


def custom_job_estimate(
    prices: PriceCatalog, *pools: dict[str, Any], timeout: str = "7200s", **options: Any
) -> JobEstimate:
    """A custom job of ``pools`` in us-central1, priced by ``prices``; ``options`` as
    ``estimate_job`` takes them (``name``, ``expected_duration_seconds``)."""
    body = custom_job(*pools, timeout=timeout)
    return estimate_job(JobKind.CUSTOM_JOB, body, "us-central1", catalog=prices, **options)


@pytest.fixture
def small_stack(prices: PriceCatalog) -> SmallStack:
    """Two jobs, one of them bounded only by its timeout, and a Workbench."""
    v100s = pool("n1-standard-8", 2, "NVIDIA_TESLA_V100", 1)
    return SmallStack(
        exact=custom_job_estimate(prices, v100s, name="a", expected_duration_seconds=3600),
        bounded=custom_job_estimate(prices, pool("n1-standard-4"), timeout="14400s", name="b"),
        workbench=estimate_workbench(
            machine_type="n1-standard-8",
            gpu_type=None,
            gpu_count=0,
            region="us-central1",
            hours=1,
            catalog=prices,
        ),
    )
