"""``python -m vertex_training.stack preview|up|refresh|destroy --stack NAME``.

Runs one command of a stack through the real Pulumi engine, with the project's program
served inline (no Python language host needed: see vertex_training/stack/engine.py). Run it
in the project directory (the one holding Pulumi.yaml) or below it. Exits with the
engine's status; a missing CLI or project is one line on stderr and status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from vertex_training.stack.engine import (
    COMMANDS,
    EXIT_USAGE,
    Options,
    StackCommandError,
    run,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vertex_training.stack", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--stack", "-s", required=True, help="stack name, e.g. local, dev, prod")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = Options(**vars(args))
    try:
        return run(options)
    except StackCommandError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
