"""A tiny stand-in for a trainer, run as a replica by the local backend in tests.

Fast on purpose: the tests are about the backend's mechanism (environment, state, signals,
metrics files), not about TensorFlow.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import hypertune

ENV_KEYS = (
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "AIP_MODEL_DIR",
    "AIP_CHECKPOINT_DIR",
    "AIP_TENSORBOARD_LOG_DIR",
    "CLOUD_ML_JOB_ID",
    "CLOUD_ML_PROJECT_ID",
    "CLOUD_ML_REGION",
    "CLOUD_ML_TRIAL_ID",
    "CLOUD_ML_HP_METRIC_FILE",
    "CUDA_VISIBLE_DEVICES",
    "STANDIN_EXTRA",
    "STANDIN_EXPANDED",
    "STANDIN_ESCAPED",
    "STANDIN_UNKNOWN",
    "STANDIN_BUCKET",
    "TRAINER_CACHE_DIR",
    "TRAINER_CACHE_MAX_BYTES",
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump-env", help="directory to write this replica's environment to")
    parser.add_argument(
        "--await-dumps", type=int, default=0, help="then wait until the directory holds N"
    )
    parser.add_argument(
        "--hold-while", help="wait while this path exists ({trial}: the trial id) first"
    )
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--fail-only", default="", help="workerpoolN-i that fails; others succeed")
    parser.add_argument("--spawn-child", help="directory to write own and child pids to")
    parser.add_argument("--steps", type=int, default=0, help="hypertune reports to write")
    parser.add_argument("--step-sleep", type=float, default=0.0)
    parser.add_argument("--no-metric-if", default="", help="param=value that reports nothing")
    parser.add_argument("--span-dir", help="directory to write this run's start/end times to")
    # Trial parameters arrive as --name=value; keep them all.
    args, unknown = parser.parse_known_args()
    params = dict(a[2:].split("=", 1) for a in unknown if a.startswith("--") and "=" in a)
    started = time.time()
    task = json.loads(os.environ.get("CLUSTER_SPEC", "{}")).get("task", {})
    label = f"{task.get('type', 'none')}-{task.get('index', 0)}"
    print(f"standin {label} starting with params {params}", flush=True)
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
    if args.hold_while:
        hold = args.hold_while.replace("{trial}", trial)
        wait_until(lambda: not os.path.exists(hold), f"{hold} to go")
    if args.dump_env:
        os.makedirs(args.dump_env, exist_ok=True)
        record: dict[str, object] = {k: os.environ.get(k) for k in ENV_KEYS}
        record["argv"] = sys.argv[1:]
        record["pid"] = os.getpid()
        record["cwd"] = os.getcwd()
        with open(os.path.join(args.dump_env, f"{trial}{label}.json"), "w") as handle:
            json.dump(record, handle)
        if args.await_dumps:
            pattern = os.path.join(args.dump_env, "*.json")
            wait_until(lambda: len(glob.glob(pattern)) >= args.await_dumps, "environments")
    if args.spawn_child:
        os.makedirs(args.spawn_child, exist_ok=True)
        child = subprocess.Popen(["sleep", "300"])
        with open(os.path.join(args.spawn_child, f"{trial}{label}.pids"), "w") as handle:
            handle.write(f"{os.getpid()} {child.pid}\n")
    if args.steps:
        key, _, value = args.no_metric_if.partition("=")
        silent = bool(key) and params.get(key) == value
        tuner = hypertune.HyperTune()
        for step in range(1, args.steps + 1):
            time.sleep(args.step_sleep)
            metric = metric_of(params, step, args.steps)
            if not silent:
                tuner.report_hyperparameter_tuning_metric(
                    hyperparameter_metric_tag="accuracy", metric_value=metric, global_step=step
                )
    time.sleep(args.sleep)
    if args.span_dir:
        os.makedirs(args.span_dir, exist_ok=True)
        with open(os.path.join(args.span_dir, f"{trial}{label}.json"), "w") as handle:
            json.dump({"start": started, "end": time.time()}, handle)
    if args.exit_code and (not args.fail_only or args.fail_only == label):
        for i in range(30):
            print(f"noise line {i}", flush=True)
        print(f"standin {label} failing on purpose: boom", flush=True)
        return args.exit_code
    print(f"standin {label} done", flush=True)
    return 0


def wait_until(condition: Callable[[], bool], what: str, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            sys.exit(f"standin: no {what} after {limit_s:.0f} s")
        time.sleep(0.02)


def metric_of(params: dict[str, str], step: int, steps: int) -> float:
    """A known landscape: best at x=0.7 (and categorical 'good'), rising with steps."""
    x = float(params.get("x", 0.5))
    bonus = 0.1 if params.get("kind", "good") == "good" else 0.0
    return (1.0 - (x - 0.7) ** 2 + bonus) * step / steps


if __name__ == "__main__":
    sys.exit(main())
