"""One budget verdict: an unknown price reads "unknown" everywhere, and `make estimate`, the
program's preview line and the policy pack agree on within / over / unknown and on what
each does (refuse in prod, warn elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cost.bodies import custom_job, pool
from vertex_training.cost.budget import BudgetStatus, budget_verdict
from vertex_training.cost.catalog import PriceCatalog
from vertex_training.cost.estimate import stack_estimate
from vertex_training.cost.report import (
    estimate_table,
    job_estimate_message,
    stack_total_message,
    usd_text,
)
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.records import JobKind


def _job(prices: PriceCatalog, *pools: dict[str, Any], name: str = "j") -> Any:
    return estimate_job(
        JobKind.CUSTOM_JOB,
        custom_job(*pools),
        "us-central1",
        name=name,
        expected_duration_seconds=3600,
        catalog=prices,
    )


def test_a_job_with_no_known_price_reads_unknown_not_zero(prices: PriceCatalog) -> None:
    job = _job(prices, pool("g2-standard-8", 1, "NVIDIA_L4", 1), name="l4")
    assert usd_text(job) == "unknown"
    assert "estimated cost of l4: unknown" in job_estimate_message(job)
    total = stack_estimate([job])
    assert "$0" not in stack_total_message(total)
    assert stack_total_message(total).startswith("estimated cost of this stack: unknown")
    assert estimate_table(total).splitlines()[-1] == "total: unknown"


def test_unknown_never_reads_within_budget(prices: PriceCatalog) -> None:
    total = stack_estimate([_job(prices, pool("g2-standard-8", 1, "NVIDIA_L4", 1))])
    message = stack_total_message(total, 100.0)
    assert "(within)" not in message
    assert "; budget $100.00 (unknown): " in message
    verdict = budget_verdict(total, 100.0)
    assert verdict is not None and verdict.status is BudgetStatus.UNKNOWN


def test_partly_known_over_budget_is_over_not_unknown(prices: PriceCatalog) -> None:
    # The known part alone is already over: the unknown rest cannot bring it back.
    total = stack_estimate(
        [_job(prices, pool("n1-standard-8", 4, "NVIDIA_TESLA_V100", 1), pool("g2-standard-8"))]
    )
    verdict = budget_verdict(total, 1.0)
    assert verdict is not None and verdict.status is BudgetStatus.OVER
    assert "at least $14.00" in verdict.message


@pytest.mark.parametrize(
    ("environment", "status", "action"),
    [
        ("prod", BudgetStatus.OVER, "refuse"),
        ("prod", BudgetStatus.UNKNOWN, "refuse"),
        ("dev", BudgetStatus.OVER, "warn"),
        ("dev", BudgetStatus.UNKNOWN, "warn"),
        ("prod", BudgetStatus.WITHIN, None),
    ],
)
def test_the_action_depends_only_on_status_and_environment(
    prices: PriceCatalog, environment: str, status: BudgetStatus, action: str | None
) -> None:
    pools = {
        BudgetStatus.OVER: pool("n1-standard-8", 4),
        BudgetStatus.UNKNOWN: pool("g2-standard-8"),
        BudgetStatus.WITHIN: pool("n1-standard-4"),
    }
    total = stack_estimate([_job(prices, pools[status])])
    verdict = budget_verdict(total, 1.0)
    assert verdict is not None and verdict.status is status
    assert verdict.action(environment) == action


def test_no_budget_no_verdict(prices: PriceCatalog) -> None:
    assert budget_verdict(stack_estimate([_job(prices, pool("n1-standard-4"))]), None) is None


def test_the_three_callers_share_the_verdict_text(prices: PriceCatalog) -> None:
    from policy import rules

    total = stack_estimate([_job(prices, pool("n1-standard-8", 4))])
    verdict = budget_verdict(total, 1.0)
    assert verdict is not None
    assert rules.stack_budget(total, 1.0) == [verdict.message]
    assert verdict.message in stack_total_message(total, 1.0)


def test_the_preview_line_warns_when_the_policy_would_act(
    prices: PriceCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    import pulumi

    from vertex_training.cost.program import log_stack_cost

    logged: list[tuple[str, str]] = []
    monkeypatch.setattr(pulumi.log, "info", lambda m, resource=None: logged.append(("info", m)))
    monkeypatch.setattr(pulumi.log, "warn", lambda m, resource=None: logged.append(("warn", m)))
    jobs = [SimpleNamespace(cost_estimate=_job(prices, pool("n1-standard-8", 4)))]
    for environment, budget in (("prod", 1.0), ("dev", 1.0), ("prod", 100.0)):
        platform = SimpleNamespace(environment=environment, cost_estimate=None)
        log_stack_cost(platform, jobs, budget=budget)
    assert [level for level, _ in logged] == ["warn", "warn", "info"]
    assert logged[0][1].endswith("(the policy pack refuses it)")
    assert logged[1][1].endswith("(refused in prod)")


def test_make_estimate_exits_1_where_the_policy_refuses(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests import PROJECT_ROOT
    from vertex_training.stack.__main__ import main

    prod = (PROJECT_ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(prod.replace("config:\n", "config:\n  vertex-training:budget: 1\n", 1))
    assert main(["estimate", "--stack-file", str(stack_file), "--workbench-hours", "10"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("budget $1.00: over (refused in prod): estimated cost")


def test_a_job_on_a_persistent_resource_adds_nothing_and_says_why(prices: PriceCatalog) -> None:
    body = custom_job(pool("n1-standard-8", 2, "NVIDIA_TESLA_V100", 1))
    body["jobSpec"]["persistentResourceId"] = "team-pool"
    job = estimate_job(JobKind.CUSTOM_JOB, body, "us-central1", name="on-pool", catalog=prices)
    assert job.usd == 0 and job.usd_per_hour == pytest.approx(7.0)
    assert usd_text(job) == "$0.00 (on team-pool)"
    message = job_estimate_message(job)
    assert "billed by the hour while the resource exists, whether or not this job runs" in message
    assert "at least $7.00/h" in message
    table = estimate_table(stack_estimate([job]))
    assert "on-pool: runs on persistent resource team-pool" in table
