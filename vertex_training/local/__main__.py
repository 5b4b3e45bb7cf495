"""``python -m vertex_training.local run --stack local [--job NAME]``: a stack's jobs, locally.

Also ``run --spec FILE`` for one job spec in the Vertex REST (camelCase JSON) form, e.g.
a CustomJob body or a HyperparameterTuningJob body, to try it before paying for GPUs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from vertex_training.local.jobs import StackJobsError, load_spec_file, load_stack_jobs
from vertex_training.local.progress import run_jobs

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vertex_training.local", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run jobs on the local backend and follow them")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    source.add_argument("--spec", type=Path, help="a job spec file (Vertex REST JSON)")
    run.add_argument(
        "--job", action="append", default=[], help="only this declared job (repeatable)"
    )
    run.add_argument(
        "--root",
        type=Path,
        help="job state and local bucket directory (default: the stack's localRoot)",
    )
    run.add_argument("--stacks-dir", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from vertex_training.jobs.backends.local import LocalBackend

    try:
        if args.spec is not None:
            root = args.root or Path(".local-vertex")
            jobs = [(args.spec.stem, load_spec_file(args.spec))]
        else:
            stack_jobs = load_stack_jobs(
                args.stack, stacks_dir=args.stacks_dir, local_root=args.root
            )
            root = stack_jobs.local_root
            jobs = stack_jobs.select(args.job)
    except (StackJobsError, ValueError, OSError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    backend = LocalBackend(str(root))
    print(f"local backend root: {backend.root}; jobs: {', '.join(n for n, _ in jobs)}")
    try:
        outcomes = run_jobs(backend, jobs, sys.stdout)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    failed = [o.job for o in outcomes if not o.succeeded]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return EXIT_FAILED
    print(f"all {len(outcomes)} jobs succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
