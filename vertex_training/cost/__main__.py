"""``python -m vertex_training.cost --stack dev``: the stack's estimate as a table.

Prints one row per job (and the Workbench instance) and ends in ``total: $LOW - $HIGH``
(one number when exact), then the budget verdict when the stack has a budget: exit status 1
when the policy pack would refuse it (over or unknown, in prod). ``--duration NAME=SECONDS``
gives a job's expected duration (one trial for a tuning job); without one its timeout
bounds the estimate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vertex_training._project import project_root
from vertex_training.cost.budget import budget_verdict
from vertex_training.cost.estimate import DEFAULT_WORKBENCH_HOURS, EstimateError
from vertex_training.cost.report import budget_line, estimate_table
from vertex_training.cost.stack import estimate_stack
from vertex_training.stack.config import ConfigError, load_stack_config


def _duration(text: str) -> tuple[str, float]:
    name, sep, seconds = text.partition("=")
    try:
        value = float(seconds)
    except ValueError:
        value = -1.0
    if not sep or not name or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected JOB=SECONDS with SECONDS > 0, e.g. cassava-mwms=1800"
        )
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vertex_training.cost", description=__doc__)
    parser.add_argument("--stack", default="local", help="stack name (stacks/Pulumi.<stack>.yaml)")
    parser.add_argument("--stack-file", type=Path, help="a stack file instead of --stack")
    parser.add_argument(
        "--duration", type=_duration, action="append", default=[], metavar="JOB=SECONDS"
    )
    parser.add_argument(
        "--workbench-hours", type=float, default=DEFAULT_WORKBENCH_HOURS, metavar="HOURS"
    )
    args = parser.parse_args(argv)
    stack_file = args.stack_file or project_root() / "stacks" / f"Pulumi.{args.stack}.yaml"
    try:
        config = load_stack_config(stack_file)
        total = estimate_stack(
            config,
            expected_durations=dict(args.duration),
            workbench_hours=args.workbench_hours,
        )
    except (ConfigError, EstimateError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"stack {config.stack} ({config.region}), list prices in USD")
    if not config.environment.is_cloud:
        print("local stack: its jobs run on this machine for free; these are the prices of")
        print("the same jobs on Vertex AI.")
    print(estimate_table(total))
    verdict = budget_verdict(total, config.budget)
    if verdict is None:
        return 0
    environment = config.environment.value
    print(budget_line(verdict, environment))
    # The same verdict the policy pack enforces: what it refuses fails here too.
    return 1 if verdict.action(environment) == "refuse" else 0


if __name__ == "__main__":
    sys.exit(main())
