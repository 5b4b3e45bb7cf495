"""Refreshing prices.json from a recorded Cloud Billing Catalog API response (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.google_api import Replay
from tools import refresh_prices as refresh
from tools.google_api import Fetch, RefreshError, authorized_fetch
from tools.refresh_prices import BILLING_API, BILLING_SCOPE, classify_sku, gpu_enum, main
from vertex_training.cost.catalog import PRICES_PATH, Pricing, load_price_catalog
from vertex_training.jobs.estimate import estimate_job

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "billing_catalog.json").read_text())
VERTEX = "C7E2-9256-1C43"


@pytest.fixture
def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(PRICES_PATH.read_text())
    return path


def test_refresh_rewrites_rows_from_the_recorded_catalog(prices_file: Path) -> None:
    replay = Replay(RECORDED)
    assert main(["--output", str(prices_file)], fetch=replay) == 0
    # Both pages of services and of the Vertex SKUs were read, in USD.
    skus_asked = [p for url, p in replay.asked if url.endswith(f"{VERTEX}/skus")]
    assert [p.get("pageToken", "") for p in skus_asked] == ["", "c2t1cy1wYWdlLTI="]
    assert all(p["currencyCode"] == "USD" for p in skus_asked)

    catalog = load_price_catalog(prices_file)
    n1 = catalog.row("training", "machines", "us-central1", "n1-standard-8")
    assert n1 is not None
    # 8 vCPUs x core + 30 GiB x RAM, on-demand and Spot.
    assert n1.on_demand == pytest.approx(8 * 0.0363527 + 30 * 0.0048725, abs=1e-6)
    assert n1.spot == pytest.approx(8 * 0.0072706 + 30 * 0.0009745, abs=1e-6)
    assert n1.source == (
        f"{BILLING_API}/services/{VERTEX}/skus (A1B2-0001-0001, A1B2-0001-0002, "
        "A1B2-0001-0005, A1B2-0001-0006)"
    )
    assert n1.as_of.isoformat() == "2026-11-01"
    v100 = catalog.row("training", "accelerators", "us-central1", "NVIDIA_TESLA_V100")
    assert v100 is not None and (v100.on_demand, v100.spot) == (2.852, 0.8556)
    # A region the shipped catalog did not price now is; prediction SKUs were not used.
    europe = catalog.row("training", "machines", "europe-west4", "n1-standard-4")
    assert europe is not None
    assert europe.on_demand == pytest.approx(4 * 0.0400017 + 15 * 0.0053618, abs=1e-6)
    # Compute Engine prices the Workbench VM.
    t4 = catalog.row("workbench", "accelerators", "us-west1", "NVIDIA_TESLA_T4")
    assert t4 is not None and t4.on_demand == 0.35
    # What the API did not price keeps its row (and its older date).
    e2 = catalog.row("training", "machines", "us-central1", "e2-standard-4")
    shipped = load_price_catalog(PRICES_PATH).row(
        "training", "machines", "us-central1", "e2-standard-4"
    )
    assert e2 is not None and e2 == shipped


def test_the_refreshed_catalog_agrees_with_the_shipped_one(prices_file: Path) -> None:
    # The recorded SKUs hold the list prices the shipped rows were transcribed from: the
    # refreshed dev cassava job must cost what it costs today, to the cent.
    before = load_price_catalog(PRICES_PATH)
    assert main(["--output", str(prices_file)], fetch=Replay(RECORDED)) == 0
    after = load_price_catalog(prices_file)
    pool = {
        "machineSpec": {
            "machineType": "n1-standard-8",
            "acceleratorType": "NVIDIA_TESLA_V100",
            "acceleratorCount": 1,
        },
        "replicaCount": "1",
    }
    body = {"jobSpec": {"workerPoolSpecs": [pool, pool], "scheduling": {"timeout": "3600s"}}}
    costs = [
        estimate_job("customJobs", body, "us-central1", catalog=c).usd for c in (before, after)
    ]
    assert costs[0] == pytest.approx(costs[1], abs=0.01)
    spot = dict(body, jobSpec={**body["jobSpec"], "scheduling": {"strategy": "SPOT"}})
    assert estimate_job("customJobs", spot, "us-central1", catalog=after).pricing is Pricing.SPOT
    assert not estimate_job("customJobs", spot, "us-central1", catalog=after).unknown


def test_dry_run_writes_nothing(prices_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = prices_file.read_text()
    assert main(["--output", str(prices_file), "--dry-run"], fetch=Replay(RECORDED)) == 0
    assert prices_file.read_text() == before
    out = capsys.readouterr().out
    assert "rows from the Billing Catalog" in out
    assert "SKUs not recognised" in out  # the Windows licence and the SSD disk


def test_skus_that_are_not_training_or_are_commitments_are_skipped() -> None:
    skus = {s["skuId"]: s for e in RECORDED["exchanges"] for s in e["response"].get("skus", [])}
    assert classify_sku("training", skus["A1B2-0002-0004"]) == ([], True)  # prediction
    assert classify_sku("training", skus["A1B2-0002-0005"]) == ([], True)  # 1-year commitment
    prices, recognised = classify_sku("training", skus["A1B2-0002-0002"])
    assert recognised and [(p.component, p.pricing) for p in prices] == [
        ("NVIDIA_TESLA_V100", Pricing.SPOT)
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [("Tesla V100", "NVIDIA_TESLA_V100"), ("A100 80GB", "NVIDIA_A100_80GB"), ("L4", "NVIDIA_L4")],
)
def test_gpu_names(text: str, name: str) -> None:
    assert gpu_enum(text) == name


def test_without_credentials_it_says_so_and_changes_nothing(
    prices_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_credentials(scope: str) -> tuple[Fetch, str | None]:
        raise RefreshError("no Google credentials: run `gcloud auth application-default login`")

    monkeypatch.setattr(refresh, "authorized_fetch", no_credentials)
    before = prices_file.read_text()
    assert main(["--output", str(prices_file)]) == 2
    assert prices_file.read_text() == before
    err = capsys.readouterr().err
    assert "no Google credentials" in err and "is unchanged" in err


def test_authorized_fetch_reports_missing_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A credentials file that does not exist fails before any network call.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(RefreshError, match="no Google credentials"):
        authorized_fetch(BILLING_SCOPE)
