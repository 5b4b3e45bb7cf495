"""``python -m vertex_training.stack preview|up|refresh|destroy|estimate --stack NAME``.

Runs one command of a stack through the real Pulumi engine, with the project's program
served inline (no Python language host needed: see vertex_training/stack/engine.py). Run it
in the project directory (the one holding Pulumi.yaml) or below it. Exits with the
engine's status; a missing CLI or project is one line on stderr and status 2.

Three commands around the engine read the stack's file alone: ``estimate`` prints what
the stack costs before it runs (``make estimate``; ``vertex_training.stack.estimate``),
``policy-config --out FILE [--base FILE]`` writes the policy pack's config with the stack's
budget (``make preview|up POLICY=1``), and ``tensorboard`` serves the local jobs' logs of
the stack's ``localRoot`` on a free port until Ctrl-C (``make tensorboard``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vertex_training.stack.engine import (
    COMMANDS,
    EXIT_USAGE,
    StackCommandError,
    run,
    stack_file,
)

if TYPE_CHECKING:
    from vertex_training.stack.config import StackConfig

ESTIMATE = "estimate"
POLICY_CONFIG = "policy-config"
TENSORBOARD = "tensorboard"
BUDGET_POLICIES = ("budget", "budget-prod")
"""The pack's policies that judge the stack's estimate against its budget."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vertex_training.stack", description=__doc__)
    parser.add_argument("command", choices=(*COMMANDS, ESTIMATE, POLICY_CONFIG, TENSORBOARD))
    parser.add_argument("--stack", "-s", help="stack name, e.g. local, dev, prod")
    parser.add_argument(
        "--stack-file",
        type=Path,
        help="estimate, policy-config, tensorboard: this stack file instead of the stack's",
    )
    parser.add_argument("--diff", action="store_true", help="show the changes in full")
    parser.add_argument(
        "--json", action="store_true", help="preview: print the plan as JSON (steps, diagnostics)"
    )
    parser.add_argument(
        "--policy-pack",
        action="append",
        default=[],
        dest="policy_packs",
        help="preview/up: run this policy pack (a directory or an executable launcher)",
    )
    parser.add_argument(
        "--policy-pack-config",
        action="append",
        default=[],
        dest="policy_pack_configs",
        help="preview/up: JSON config for the policy pack of the same position",
    )
    parser.add_argument(
        "--exclude-protected",
        action="store_true",
        help="destroy: keep protected resources (the prod bucket) and delete the rest",
    )
    parser.add_argument(
        "--clear-pending-creates",
        action="store_true",
        help="refresh: drop creates an interrupted update never heard back about",
    )
    parser.add_argument(
        "--expect-no-changes", action="store_true", help="fail if anything would change"
    )
    costs = parser.add_argument_group("estimate")
    costs.add_argument(
        "--duration",
        type=_duration,
        action="append",
        default=[],
        metavar="JOB=SECONDS",
        help="estimate: a job's expected duration (one trial of a tuning job)",
    )
    costs.add_argument(
        "--workbench-hours",
        type=_hours,
        metavar="HOURS",
        help="estimate: hours the Workbench instance runs (default: one session, an hour)",
    )
    tools = parser.add_argument_group("policy-config and tensorboard")
    tools.add_argument("--out", type=Path, help="policy-config: the file to write")
    tools.add_argument("--base", type=Path, help="policy-config: a pack config to start from")
    tools.add_argument("--root", type=Path, help="tensorboard: a local backend root instead")
    tools.add_argument("--host", default="127.0.0.1", help="tensorboard: address to listen on")
    tools.add_argument("--port", type=int, default=0, help="tensorboard: port (0: a free one)")
    return parser


def _stack_config(args: argparse.Namespace) -> StackConfig:
    """The stack's settings, from ``--stack-file`` or the stack's file where the project
    keeps it (Pulumi.yaml's ``stackConfigDir``)."""
    from vertex_training.stack.config import load_stack_config

    return load_stack_config(args.stack_file or stack_file(args.stack))


def _duration(text: str) -> tuple[str, float]:
    name, sep, seconds = text.partition("=")
    try:
        value = float(seconds)
    except ValueError:
        value = -1.0
    if not sep or not name or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected JOB=SECONDS with SECONDS > 0, e.g. cassava-mwms=1800"
        )
    return name, value


def _hours(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of hours >= 0, e.g. 2")
    return value


def _estimate(args: argparse.Namespace) -> int:
    """The stack's estimate (``vertex_training.stack.estimate``), from its file alone."""
    from vertex_training.stack.estimate import print_estimate

    return print_estimate(_stack_config(args), args)


def _policy_config(args: argparse.Namespace) -> int:
    """The pack's config (``--base``, e.g. ``policy/config/<stack>.json``) with the stack's
    ``budget`` given to the budget policies that do not set their own: the pack reads no
    file of the project it judges (it runs on a platform team's program as on this one)."""
    if args.out is None:
        print("error: policy-config needs --out FILE", file=sys.stderr)
        return EXIT_USAGE
    base = json.loads(args.base.read_text(encoding="utf-8")) if args.base else {}
    config = {name: dict(settings) for name, settings in base.items()}
    budget = _stack_config(args).budget
    if budget is not None:
        for name in BUDGET_POLICIES:
            config.setdefault(name, {}).setdefault("budget", budget)
    args.out.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return 0


def _tensorboard(args: argparse.Namespace) -> int:
    """The local jobs' TensorBoard logs, served: the local backend gives every replica
    ``AIP_TENSORBOARD_LOG_DIR`` under the job's output directory (per trial
    ``.../<trial>/logs/``), as Vertex does in Cloud Storage, so the whole local root served
    by the real ``tensorboard`` package shows every job and trial as a run named by its
    path."""
    from tensorboard import program

    logdir = Path(args.root or _stack_config(args).local_root)
    logdir.mkdir(parents=True, exist_ok=True)
    server = program.TensorBoard()
    # New trials appear while a study runs: reload every 5 seconds. Port 0: a free one.
    argv = ["--logdir", str(logdir), "--host", args.host, "--port", str(args.port)]
    server.configure(argv=["tensorboard", *argv, "--reload_interval", "5"])
    url = server.launch()
    print(f"TensorBoard on {logdir}: {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.stack is None and (args.stack_file is None or args.command in COMMANDS):
        parser.error("the following arguments are required: --stack")
    tools = {ESTIMATE: _estimate, POLICY_CONFIG: _policy_config, TENSORBOARD: _tensorboard}
    try:
        if args.command in tools:
            try:
                return tools[args.command](args)
            except (ValueError, OSError) as error:
                # A stack file that does not validate (ConfigError) is its message alone.
                raise StackCommandError(str(error)) from None
        return run(args)
    except StackCommandError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
