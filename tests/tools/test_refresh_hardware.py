"""Rebuilding the catalog's availability rows from a recorded Compute Engine API response
(acceleratorTypes.aggregatedList, machineTypes.aggregatedList); no network."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.google_api import Replay
from tools import refresh_hardware as refresh
from tools.google_api import RefreshError
from tools.refresh_hardware import main, refreshed_catalog
from vertex_training.jobs.rules.catalog import CATALOG_PATH, parse_catalog

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "compute_aggregated.json").read_text())
NOW = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.UTC)


def _existing() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CATALOG_PATH.read_text())
    return data


def test_zones_are_rebuilt_from_both_lists_and_every_page() -> None:
    replay = Replay(RECORDED)
    result = refreshed_catalog(replay, "demo-project", _existing(), now=NOW)
    assert [params.get("pageToken", "") for _, params in replay.asked] == ["", "page-2", ""]
    regions = result.document["regions"]["items"]
    central = regions["us-central1"]["zone_accelerators"]
    # Built in to a g2 machine type in -f: the API says L4 is there, so it is.
    assert "NVIDIA_L4" in central["us-central1-f"]
    assert "NVIDIA_TESLA_P4" not in central["us-central1-f"]
    assert "NVIDIA_H100_MEGA_80GB" in central["us-central1-b"]
    # Retired (OBSOLETE in the API) is not offered; TPU rows stay as they were.
    assert "NVIDIA_TESLA_K80" not in central["us-central1-a"]
    assert "TPU_V5_LITEPOD" in central["us-central1-a"]
    west4 = regions["europe-west4"]
    assert west4["zones"] == ["europe-west4-a", "europe-west4-b", "europe-west4-c"]
    assert "NVIDIA_TESLA_P100" in west4["zone_accelerators"]["europe-west4-c"]
    assert not any("NVIDIA_B200" in z for z in west4["zone_accelerators"].values())
    assert sorted(result.regions_updated) == ["europe-west4", "us-central1"]
    assert result.new_machine_types == ["a3-edgegpu-8g"]
    assert result.unknown_accelerators == ["nvidia-tesla-x9"]


def test_the_catalog_records_when_and_from_what_and_still_loads() -> None:
    result = refreshed_catalog(Replay(RECORDED), "demo-project", _existing(), now=NOW)
    refreshed = result.document["refreshed"]
    assert refreshed["at"] == "2026-11-24T12:00:00+00:00"
    assert any("acceleratorTypes.aggregatedList" in source for source in refreshed["from"])
    assert any("machineTypes.aggregatedList" in source for source in refreshed["from"])
    assert refreshed["every_region"] is False
    catalog = parse_catalog(result.document)
    # Two regions answered of many: region lists are not claimed complete.
    assert not catalog.accelerators["NVIDIA_L4"].regions_complete
    assert catalog.regions["us-central1"].zone_accelerators["us-central1-f"] >= {"NVIDIA_L4"}


def test_main_writes_the_file_or_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "hardware_catalog.json"
    output.write_text(CATALOG_PATH.read_text())
    before = output.read_text()
    assert (
        main(["--project", "demo-project", "--output", str(output), "--dry-run"], Replay(RECORDED))
        == 0
    )
    assert output.read_text() == before
    assert main(["--project", "demo-project", "--output", str(output)], Replay(RECORDED)) == 0
    assert json.loads(output.read_text())["refreshed"]["regions"] == ["europe-west4", "us-central1"]
    assert "machine types with GPUs the catalog lacks: a3-edgegpu-8g" in capsys.readouterr().out

    def no_credentials(scope: str) -> Any:
        raise RefreshError("no Google credentials: run `gcloud auth application-default login`")

    monkeypatch.setattr(refresh, "authorized_fetch", no_credentials)
    output.write_text(before)
    assert main(["--project", "demo-project", "--output", str(output)]) == 2
    assert "no Google credentials" in capsys.readouterr().err
    assert output.read_text() == before


def test_the_shipped_catalog_says_whether_it_was_refreshed() -> None:
    assert "refreshed" in _existing()
