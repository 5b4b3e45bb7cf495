"""An endpoint costs its deployments' minimum replicas per hour at prediction prices: shown
per hour beside the stack's total, never added to it, and an unknown price reads unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cost.conftest import TEST_PRICES, accelerator, machine, priced
from vertex_training.cost.catalog import PriceCatalog, parse_price_catalog, price_catalog
from vertex_training.cost.estimate import stack_estimate
from vertex_training.cost.report import estimate_table, stack_total_message
from vertex_training.serving.api import DeploymentArgs, deployment_body
from vertex_training.serving.estimate import estimate_endpoint
from vertex_training.serving.rules import prediction_catalog
from vertex_training.stack.__main__ import main


@pytest.fixture
def prediction_prices() -> PriceCatalog:
    return parse_price_catalog(
        {
            **TEST_PRICES,
            "prediction": {
                "machines": [
                    machine("us-central1", "n1-standard-2", 0.1),
                    machine("us-central1", "a2-highgpu-1g", 1.0),
                ],
                "accelerators": [
                    accelerator("us-central1", "NVIDIA_TESLA_T4", 0.4),
                    accelerator("us-central1", "NVIDIA_TESLA_A100", 3.0),
                ],
            },
        }
    )


def _bodies(**deployments: DeploymentArgs) -> dict[str, dict[str, Any]]:
    return {key: deployment_body(key, d) for key, d in deployments.items()}


def test_each_deployment_costs_its_minimum_replicas_per_hour(
    prediction_prices: PriceCatalog,
) -> None:
    bodies = _bodies(
        blue=DeploymentArgs(model="m", min_replica_count=2, max_replica_count=5),
        green=DeploymentArgs(
            model="m", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=2, min_replica_count=1
        ),
    )
    estimate = estimate_endpoint("e", bodies, "us-central1", catalog=prediction_prices)
    assert [(d.role, d.replicas) for d in estimate.pools] == [("blue", 2), ("green", 1)]
    # 2 x 0.1 + 1 x (0.1 + 2 x 0.4): the maximum replicas do not count.
    assert estimate.usd_per_hour == pytest.approx(0.2 + 0.9)
    assert estimate.unknown == ()


def test_a_machine_that_comes_with_its_gpu_is_priced_with_it(
    prediction_prices: PriceCatalog,
) -> None:
    bodies = _bodies(primary=DeploymentArgs(model="m", machine_type="a2-highgpu-1g"))
    estimate = estimate_endpoint("e", bodies, "us-central1", catalog=prediction_prices)
    assert estimate.usd_per_hour == pytest.approx(1.0 + 3.0)
    assert estimate.pools[0].accelerator_type == "NVIDIA_TESLA_A100"


def test_an_unknown_price_is_named_never_zero(prediction_prices: PriceCatalog) -> None:
    bodies = _bodies(primary=DeploymentArgs(model="m", machine_type="g2-standard-4"))
    estimate = estimate_endpoint("e", bodies, "us-central1", catalog=prediction_prices)
    assert [str(u) for u in estimate.unknown] == [
        "unknown price: g2-standard-4 in us-central1 (on-demand)",
        "unknown price: NVIDIA_L4 in us-central1 (on-demand)",
    ]
    total = stack_estimate([], None, [estimate])
    assert "serving: unknown per hour while deployed" in stack_total_message(total)
    spot = _bodies(
        primary=DeploymentArgs(model="m", extra_fields={"dedicatedResources": {"spot": True}})
    )
    assert [
        str(u)
        for u in estimate_endpoint("e", spot, "us-central1", catalog=prediction_prices).unknown
    ] == ["unknown price: n1-standard-2 in us-central1 (Spot)"]


def test_the_endpoint_is_hourly_beside_the_total_not_in_it(
    prediction_prices: PriceCatalog,
) -> None:
    endpoint = estimate_endpoint(
        "horses",
        _bodies(primary=DeploymentArgs(model="m")),
        "us-central1",
        catalog=prediction_prices,
    )
    total = stack_estimate([], None, [endpoint])
    assert total.usd_high == 0 and total.exact
    table = estimate_table(total)
    assert "horses (endpoint)  1 x n1-standard-2  -             per hour  $0.10 per hour" in table
    assert table.splitlines()[-2:] == [
        "total: $0.00",
        "serving: $0.10 per hour while deployed (1 endpoint at minimum replicas; not in the "
        "total or the budget)",
    ]
    message = stack_total_message(total, budget=1.0)
    assert message.startswith("estimated cost of this stack: $0.00 (0 job(s) once each)")
    assert "budget $1.00 (within)" in message
    assert message.endswith(
        "serving: $0.10 per hour while deployed (1 endpoint at minimum "
        "replicas; not in the total or the budget)"
    )


def test_the_shipped_catalog_prices_every_prediction_machine_of_the_default_regions() -> None:
    prices = price_catalog()
    hardware = prediction_catalog()
    assert priced(prices, "prediction", "machines") <= hardware.machine_types
    assert priced(prices, "prediction", "accelerators") <= set(hardware.accelerator_regions)
    assert priced(prices, "prediction") == {"us-central1", "europe-west4"}
    row = prices.row("prediction", "machines", "us-central1", "n1-standard-2")
    assert row is not None and row.on_demand == pytest.approx(0.109249)
    for region in ("us-central1", "europe-west4"):
        for name in ("n1-standard-2", "n1-standard-4", "e2-standard-2", "n2-standard-2"):
            assert prices.row("prediction", "machines", region, name) is not None, (region, name)
    # No prediction Spot price was read: a Spot deployment reads unknown.
    assert all(r.spot is None for k, r in prices.rows.items() if k[0] == "prediction")


def test_make_estimate_shows_a_stack_endpoint_per_hour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = tmp_path / "Pulumi.scratch.yaml"
    stack_file.write_text(
        "config:\n"
        "  gcp:project: my-project-1\n"
        "  vertex-training:environment: dev\n"
        "  vertex-training:region: us-central1\n"
        "  vertex-training:endpoints:\n"
        "    - name: horses\n"
        "      deployments:\n"
        "        primary: {model: projects/p/locations/us-central1/models/1@1, "
        "minReplicaCount: 2}\n"
    )
    assert main(["estimate", "--stack-file", str(stack_file)]) == 0
    out = capsys.readouterr().out
    assert "horses (endpoint)" in out
    assert "2 x n1-standard-2" in out
    assert "serving: $0.22 per hour while deployed (1 endpoint" in out
