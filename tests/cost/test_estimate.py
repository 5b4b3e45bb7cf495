"""Job, study, Workbench and stack estimates against a catalog of round numbers."""

from __future__ import annotations

import math

import pytest

from tests.cost.bodies import custom_job, pool, tuning_job
from tests.cost.conftest import SmallStack
from vertex_training.cost.budget import BudgetStatus, budget_verdict
from vertex_training.cost.catalog import PriceCatalog, Pricing
from vertex_training.cost.estimate import (
    VERTEX_DEFAULT_TIMEOUT_SECONDS,
    EstimateError,
    UnknownPrice,
    estimate_workbench,
    stack_estimate,
)
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.records import JobKind

CUSTOM = JobKind.CUSTOM_JOB
TUNING = JobKind.HYPERPARAMETER_TUNING_JOB
V100 = "NVIDIA_TESLA_V100"


class TestCustomJob:
    def test_sum_over_pools_of_replicas_times_machine_and_accelerators(
        self, prices: PriceCatalog
    ) -> None:
        body = custom_job(
            pool("n1-standard-8", 1, V100, 1),  # 0.5 + 3.0
            pool("n1-standard-8", 3, V100, 2),  # 3 x (0.5 + 6.0)
            timeout="7200s",
        )
        estimate = estimate_job(CUSTOM, body, "us-central1", catalog=prices)
        assert [p.usd_per_hour for p in estimate.pools] == [3.5, 19.5]
        assert estimate.usd_per_hour == 23.0
        assert estimate.hours == 2.0
        assert estimate.usd == pytest.approx(46.0)

    def test_timeout_is_an_upper_bound(self, prices: PriceCatalog) -> None:
        estimate = estimate_job(
            CUSTOM,
            custom_job(pool("n1-standard-4"), timeout="3600s"),
            "us-central1",
            catalog=prices,
        )
        assert estimate.upper_bound
        assert estimate.hours_basis == "scheduling.timeout"
        assert (estimate.usd_low, estimate.usd_high) == (0.0, 0.25)

    def test_expected_duration_wins_and_is_exact(self, prices: PriceCatalog) -> None:
        estimate = estimate_job(
            CUSTOM,
            custom_job(pool("n1-standard-4"), timeout="36000s"),
            "us-central1",
            expected_duration_seconds=1800,
            catalog=prices,
        )
        assert not estimate.upper_bound
        assert estimate.hours == 0.5
        assert estimate.usd_low == estimate.usd_high == pytest.approx(0.125)

    def test_no_timeout_falls_back_to_vertex_default(self, prices: PriceCatalog) -> None:
        estimate = estimate_job(
            CUSTOM, custom_job(pool("n1-standard-4"), timeout=None), "us-central1", catalog=prices
        )
        assert estimate.upper_bound
        assert estimate.hours == VERTEX_DEFAULT_TIMEOUT_SECONDS / 3600 == 168
        assert "7 days" in estimate.hours_basis

    def test_spot_is_priced_as_spot(self, prices: PriceCatalog) -> None:
        body = custom_job(pool("n1-standard-8", 2, V100, 1), timeout="3600s", strategy="SPOT")
        estimate = estimate_job(CUSTOM, body, "us-central1", catalog=prices)
        assert estimate.pricing is Pricing.SPOT
        assert estimate.usd == pytest.approx(2 * (0.1 + 1.0))

    def test_spot_without_a_spot_price_is_unknown_not_on_demand(self, prices: PriceCatalog) -> None:
        body = custom_job(pool("n1-standard-4"), timeout="3600s", strategy="SPOT")
        estimate = estimate_job(CUSTOM, body, "us-central1", catalog=prices)
        assert estimate.unknown == (UnknownPrice("n1-standard-4", "us-central1", Pricing.SPOT),)
        assert str(estimate.unknown[0]) == "unknown price: n1-standard-4 in us-central1 (Spot)"

    def test_unknown_machine_and_accelerator_are_named_never_zero(
        self, prices: PriceCatalog
    ) -> None:
        body = custom_job(
            pool("n1-standard-8", 1, V100, 1), pool("a3-highgpu-8g", 1, "NVIDIA_H100_80GB", 8)
        )
        estimate = estimate_job(CUSTOM, body, "us-central1", catalog=prices)
        assert [str(u) for u in estimate.unknown] == [
            "unknown price: a3-highgpu-8g in us-central1 (on-demand)",
            "unknown price: NVIDIA_H100_80GB in us-central1 (on-demand)",
        ]
        # The known part is still shown, and only it is counted.
        assert estimate.usd_per_hour == 3.5

    def test_unknown_region_names_the_region(self, prices: PriceCatalog) -> None:
        estimate = estimate_job(
            CUSTOM, custom_job(pool("n1-standard-4")), "europe-west4", catalog=prices
        )
        assert [str(u) for u in estimate.unknown] == [
            "unknown price: n1-standard-4 in europe-west4 (on-demand)"
        ]

    @pytest.mark.parametrize("duration", [0, -5, math.inf, math.nan])
    def test_expected_duration_must_be_positive(
        self, prices: PriceCatalog, duration: float
    ) -> None:
        with pytest.raises(
            EstimateError, match="expected duration must be a number of seconds > 0"
        ):
            estimate_job(
                CUSTOM,
                custom_job(pool("n1-standard-4")),
                "us-central1",
                expected_duration_seconds=duration,
                catalog=prices,
            )

    def test_unreadable_body_names_the_field(self, prices: PriceCatalog) -> None:
        body = custom_job(pool("n1-standard-4"))
        body["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "two"
        with pytest.raises(EstimateError, match=r"jobSpec\.workerPoolSpecs\[0\]\.replicaCount"):
            estimate_job(CUSTOM, body, "us-central1", catalog=prices)


class TestStudy:
    def test_trials_times_trial_cost_and_wall_time_from_parallel_trials(
        self, prices: PriceCatalog
    ) -> None:
        body = tuning_job(pool("n1-standard-4", 1, V100, 2), trials=6, parallel=2, timeout="3600s")
        estimate = estimate_job(
            TUNING, body, "us-central1", expected_duration_seconds=900, catalog=prices
        )
        assert estimate.usd_per_hour == 6.25
        assert estimate.usd == pytest.approx(6 * 6.25 * 0.25)
        assert estimate.wall_hours == pytest.approx(3 * 0.25)
        assert estimate.gpus_at_once == 4

    def test_uneven_trials_round_the_wall_time_up(self, prices: PriceCatalog) -> None:
        body = tuning_job(pool("n1-standard-4"), trials=5, parallel=2, timeout="3600s")
        estimate = estimate_job(TUNING, body, "us-central1", catalog=prices)
        assert estimate.upper_bound
        assert estimate.wall_hours == 3.0
        assert estimate.usd_high == pytest.approx(5 * 0.25)


class TestWorkbench:
    def test_machine_and_gpu_per_hour_while_up(self, prices: PriceCatalog) -> None:
        estimate = estimate_workbench(
            machine_type="n1-standard-8",
            gpu_type="NVIDIA_TESLA_T4",
            gpu_count=1,
            region="us-central1",
            hours=10,
            catalog=prices,
        )
        assert estimate.usd_per_hour == pytest.approx(0.75)
        assert estimate.usd == pytest.approx(7.5)
        assert not estimate.unknown

    def test_training_prices_do_not_price_a_workbench_vm(self, prices: PriceCatalog) -> None:
        estimate = estimate_workbench(
            machine_type="n1-standard-4",
            gpu_type=None,
            gpu_count=0,
            region="us-central1",
            catalog=prices,
        )
        assert [str(u) for u in estimate.unknown] == [
            "unknown price: n1-standard-4 in us-central1 (on-demand)"
        ]


class TestStack:
    def test_total_range_and_budget(self, small_stack: SmallStack) -> None:
        jobs = [small_stack.exact, small_stack.bounded]
        total = stack_estimate(jobs, small_stack.workbench)
        assert total.usd_low == pytest.approx(7.0 + 0.4)
        assert total.usd_high == pytest.approx(7.0 + 1.0 + 0.4)
        assert not total.exact
        assert budget_verdict(total, 10).status is BudgetStatus.WITHIN  # type: ignore[union-attr]
        verdict = budget_verdict(total, 8)
        assert verdict is not None and verdict.status is BudgetStatus.OVER
        assert "at most $8.40 is over the budget of $8.00" in verdict.message

    def test_unknown_price_fails_the_budget_check_by_name(self, prices: PriceCatalog) -> None:
        job = estimate_job(CUSTOM, custom_job(pool("n1-highmem-2")), "us-central1", catalog=prices)
        verdict = budget_verdict(stack_estimate([job]), 1000)
        assert verdict is not None and verdict.status is BudgetStatus.UNKNOWN
        assert "unknown price: n1-highmem-2 in us-central1 (on-demand)" in verdict.message
