"""The text of estimates: preview lines, the stack total and the `make estimate` table."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests import PROJECT_ROOT, modules_loaded_by
from tests.cost.bodies import custom_job, pool, tuning_job
from tests.cost.conftest import SmallStack, custom_job_estimate
from vertex_training.cost.catalog import PriceCatalog
from vertex_training.cost.estimate import stack_estimate
from vertex_training.cost.report import (
    estimate_table,
    job_estimate_message,
    stack_total_message,
    usd_range,
)
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.records import JobKind
from vertex_training.stack.__main__ import main

V100 = "NVIDIA_TESLA_V100"


def test_usd_range_is_one_number_when_exact() -> None:
    assert usd_range(4.1, 4.1) == "$4.10"
    assert usd_range(0, 1234.5) == "$0.00 - $1,234.50"


def test_job_message_says_upper_bound_and_unknowns(prices: PriceCatalog) -> None:
    body = custom_job(pool("n1-standard-8", 2, V100, 1), pool("g2-standard-8"), timeout="7200s")
    estimate = estimate_job(JobKind.CUSTOM_JOB, body, "us-central1", name="train", catalog=prices)
    message = job_estimate_message(estimate)
    assert message.startswith(
        "estimated cost of train: at most $14.00 + unknown (scheduling.timeout: "
    )
    assert "2 x n1-standard-8, 1 x g2-standard-8 + 2 x NVIDIA_TESLA_V100" in message
    assert "unknown price: g2-standard-8 in us-central1 (on-demand), not counted" in message


def test_study_message_shows_trials_and_wall_time(prices: PriceCatalog) -> None:
    body = tuning_job(pool("n1-standard-4", 1, V100, 2), trials=6, parallel=2)
    estimate = estimate_job(
        JobKind.HYPERPARAMETER_TUNING_JOB,
        body,
        "us-central1",
        name="study",
        expected_duration_seconds=600,
        catalog=prices,
    )
    message = job_estimate_message(estimate)
    assert "estimated cost of study: $6.25 (expected duration)" in message
    assert "6 trials x 0.17 h, 2 at a time (wall 0.50 h)" in message


def test_table_ends_in_the_total(small_stack: SmallStack) -> None:
    exact, bounded = small_stack.exact, small_stack.bounded
    table = estimate_table(stack_estimate([exact, bounded], small_stack.workbench)).splitlines()
    assert table[0].split() == ["job", "machines", "accelerators", "hours", "USD"]
    assert table[-1] == "total: $7.40 - $8.40"
    assert re.match(r"b\s+1 x n1-standard-4\s+-\s+<= 4.00\s+\$0.00 - \$1.00$", table[3])
    exact_only = estimate_table(stack_estimate([exact]))
    assert exact_only.splitlines()[-1] == "total: $7.00"
    total = stack_estimate([exact, bounded])
    assert "; budget $1.00 (over): estimated cost at most $8.00 is over" in stack_total_message(
        total, 1.0
    )


def test_unknown_prices_are_listed_under_the_table(prices: PriceCatalog) -> None:
    l4 = pool("n1-standard-4", 1, "NVIDIA_L4", 1)
    job = custom_job_estimate(prices, l4, name="l4", expected_duration_seconds=3600)
    lines = estimate_table(stack_estimate([job])).splitlines()
    assert (
        "l4: unknown price: NVIDIA_L4 in us-central1 (on-demand) (not counted in the total)"
        in lines
    )
    assert lines[-1] == "total: $0.25 + unknown"


def test_cli_prints_the_dev_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--stack", "dev", "--duration", "cassava-mwms=1800"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "stack dev (us-central1), list prices in USD"
    names = [line.split()[0] for line in out[3:9]]
    assert names == [
        "cassava-mwms",
        "cassava-mwms-cpu",
        "horses-humans-tuning",
        "workbench",
        "horses-humans",  # the endpoint, per hour
        "warm-cpu",  # the persistent resource, per hour
    ]
    assert re.fullmatch(r"total: \$\d+\.\d\d - \$\d+\.\d\d", out[-3])
    assert out[-2].startswith("serving: $0.11 per hour while deployed (1 endpoint")
    assert out[-1].startswith("capacity: $0.87 per hour while it exists (1 persistent resource")


def test_cli_refuses_a_malformed_duration(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["estimate", "--stack", "dev", "--duration", "cassava-mwms=soon"])
    assert "expected JOB=SECONDS" in capsys.readouterr().err


def test_cli_refuses_a_duration_for_an_unknown_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--stack", "dev", "--duration", "nope=60"]) == 2
    assert "jobs the stack does not declare: ['nope']" in capsys.readouterr().err


def test_malformed_budget_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = tmp_path / "Pulumi.scratch.yaml"
    stack_file.write_text("config:\n  vertex-training:budget: lots\n")
    assert main(["estimate", "--stack-file", str(stack_file)]) == 2
    err = capsys.readouterr().err
    assert "vertex-training:budget: Input should be a valid integer" in err
    assert "Fix: pulumi config set vertex-training:budget 50 --stack scratch" in err


def test_make_estimate_runs_the_module() -> None:
    dry_run = subprocess.run(
        ["make", "-n", "estimate", "STACK=dev"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m vertex_training.stack estimate --stack dev" in dry_run


@pytest.mark.parametrize(
    ("modules", "heavy"),
    [
        # Pricing a body needs no Pulumi at all.
        (
            "vertex_training.cost.estimate, vertex_training.cost.report",
            ("tensorflow", "google.cloud.aiplatform_v1", "pulumi_gcp", "pulumi"),
        ),
        # A stack's bodies come from the public Args (Pulumi Inputs), nothing heavier.
        (
            "vertex_training.stack.estimate",
            ("tensorflow", "google.cloud.aiplatform_v1", "pulumi_gcp"),
        ),
    ],
)
def test_estimating_imports_nothing_heavy(modules: str, heavy: tuple[str, ...]) -> None:
    assert modules_loaded_by(f"import {modules}", heavy) == []


@pytest.mark.parametrize("hours", ["-3", "inf", "nan", "lots"])
def test_cli_refuses_workbench_hours_that_are_no_duration(
    hours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["estimate", "--stack", "dev", f"--workbench-hours={hours}"])
    assert "expected a number of hours >= 0" in capsys.readouterr().err
