"""``python -m vertex_training.runner run --stack local [--job NAME]``: a stack's jobs, locally.

Also ``run --spec FILE`` for one job spec in the Vertex REST (camelCase JSON) form, e.g.
a CustomJob body or a HyperparameterTuningJob body, to try it before paying for GPUs, and
``tensorboard --stack local``: TensorBoard on the local jobs' logs, on a free port.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from vertex_training.runner.jobs import StackJobsError, load_spec_file, load_stack_jobs
from vertex_training.runner.progress import run_jobs

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vertex_training.runner", description=__doc__)
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
    board = commands.add_parser(
        "tensorboard", help="serve the local jobs' TensorBoard logs (until Ctrl-C)"
    )
    where = board.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="stack name: its localRoot holds the jobs")
    where.add_argument("--root", type=Path, help="a local backend root directory")
    board.add_argument("--host", default="127.0.0.1", help="address to listen on")
    board.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    board.add_argument("--stacks-dir", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def serve_tensorboard(args: argparse.Namespace) -> int:
    from vertex_training.runner.tensorboard import local_log_root, start_tensorboard

    if args.root is not None:
        root = args.root
    else:
        from vertex_training._project import project_root
        from vertex_training.stack.config import load_stack_config

        stack_file = (args.stacks_dir or project_root() / "stacks") / f"Pulumi.{args.stack}.yaml"
        if not stack_file.is_file():
            print(f"error: no stack file {stack_file}", file=sys.stderr)
            return EXIT_USAGE
        root = load_stack_config(stack_file).local_root
    logdir = local_log_root(root)
    _, url = start_tensorboard(logdir, host=args.host, port=args.port)
    print(f"TensorBoard on {logdir}: {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "tensorboard":
        return serve_tensorboard(args)
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
    print(
        "Running the jobs on the local backend without the Pulumi engine: no stack state is "
        "kept (python -m vertex_training.stack up runs them through the engine)."
    )
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
