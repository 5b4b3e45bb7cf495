"""The shipped price catalog: well-formed, sourced and dated, and within the hardware catalog."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.cost.conftest import TEST_PRICES, priced
from vertex_training.cost.catalog import (
    PRICES_PATH,
    PriceCatalogError,
    load_price_catalog,
    parse_price_catalog,
    price_catalog,
)
from vertex_training.jobs.rules.catalog import catalog as hardware_catalog
from vertex_training.stack.config import load_stack_config


def test_shipped_catalog_rows_are_sourced_and_dated() -> None:
    raw = json.loads(PRICES_PATH.read_text())
    rows = [
        r
        for t in ("training", "workbench")
        for k in ("machines", "accelerators")
        for r in raw[t][k]
    ]
    assert rows
    for entry in rows:
        assert entry["source"].startswith("https://"), entry
        assert entry["as_of"], entry


def test_shipped_catalog_only_prices_what_the_hardware_catalog_knows() -> None:
    hardware = hardware_catalog()
    prices = price_catalog()
    assert priced(prices, "training") <= set(hardware.regions)
    assert priced(prices, "training", "machines") <= set(hardware.machines["training"])
    assert priced(prices, "training", "accelerators") <= set(hardware.accelerators)
    for _target, kind, region, item in prices.rows:
        if kind == "accelerators":
            assert item in hardware.regions[region].accelerators, (item, region)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_machine_and_gpu_of_the_cloud_stacks_is_priced(stack: str) -> None:
    from vertex_training.stack.estimate import estimate_stack

    total = estimate_stack(load_stack_config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    assert total.unknown == ()


def _broken(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(TEST_PRICES)
    target, kind, index, key = path.split(".")
    row = data[target][kind][int(index)]
    if value is None:
        del row[key]
    else:
        row[key] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("training.machines.0.source", None, r"training\.machines\[0\]: 'source' is missing"),
        ("training.machines.0.as_of", None, r"'as_of' is missing"),
        ("training.machines.0.as_of", "last week", "as_of must be YYYY-MM-DD"),
        ("training.accelerators.0.on_demand", -1, "on_demand must be a price >= 0"),
        ("training.accelerators.0.on_demand", "3", "on_demand must be a price >= 0"),
        ("workbench.machines.0.region", None, "'region' is missing"),
    ],
)
def test_malformed_rows_are_refused_naming_the_row(path: str, value: Any, message: str) -> None:
    with pytest.raises(PriceCatalogError, match=message):
        parse_price_catalog(_broken(path, value))


def test_a_row_without_any_price_is_refused() -> None:
    data = _broken("training.machines.1.on_demand", None)
    with pytest.raises(PriceCatalogError, match="n1-standard-4 in us-central1 has no price at all"):
        parse_price_catalog(data)


def test_duplicate_rows_are_refused() -> None:
    data = copy.deepcopy(TEST_PRICES)
    data["training"]["machines"].append(dict(data["training"]["machines"][0]))
    with pytest.raises(PriceCatalogError, match="listed twice"):
        parse_price_catalog(data)


def test_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text("{")
    with pytest.raises(PriceCatalogError, match="not JSON"):
        load_price_catalog(path)
