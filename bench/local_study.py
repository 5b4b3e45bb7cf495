"""Local backend study throughput: 2-parallel against sequential, and per-trial overhead.

A stand-in trial sleeps a known time and reports its metric through cloudml-hypertune
(as the horses_or_humans trainer does). Baseline, measured in the same run: the same
trial script started directly, one after another, ``N`` times -- the trainer's own time
including interpreter start-up. The backend's per-trial overhead is what a sequential
study adds on top of that, divided by ``N`` (target: < 1 s).

    .venv/bin/python bench/local_study.py [--trials 8] [--sleep 1.0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.faults import ended
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners.jobs import JobRunner

TRIAL_SCRIPT = """
import sys, time, hypertune
x = float(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--x=")), 0.5))
time.sleep(float(sys.argv[1]))
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="accuracy", metric_value=1 - (x - 0.7) ** 2, global_step=1)
"""


def study_spec(script: Path, sleep: float, trials: int, parallel: int) -> dict[str, Any]:
    """A random-search study body whose trials sleep ``sleep`` s and report one metric."""
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "containerSpec": {
            "imageUri": "python:3.11",
            "command": ["python", str(script)],
            "args": [str(sleep)],
        },
    }
    return {
        "displayName": f"bench-{parallel}",
        "trialJobSpec": {"workerPoolSpecs": [pool]},
        "studySpec": {
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}],
            "algorithm": "RANDOM_SEARCH",
        },
        "maxTrialCount": trials,
        "parallelTrialCount": parallel,
    }


def run_study(backend: JobRunner, spec: dict[str, Any]) -> tuple[float, float, float]:
    """Wall time from submit to the end seen by the caller, the supervisor's start-up
    (create -> RUNNING) and its trial loop (RUNNING -> end)."""
    started = time.perf_counter()
    submitted = backend.submit(JobKind.HYPERPARAMETER_TUNING_JOB, spec)
    record = ended(backend, submitted.name, timeout=600)
    elapsed = time.perf_counter() - started
    if record.state is not JobState.SUCCEEDED or len(record.trials) != spec["maxTrialCount"]:
        raise SystemExit(
            f"study {spec['displayName']} ended {record.state}: {record.error_message}"
        )
    assert record.create_time and record.start_time and record.end_time
    created, running, end = (
        datetime.fromisoformat(t) for t in (record.create_time, record.start_time, record.end_time)
    )
    return elapsed, (running - created).total_seconds(), (end - running).total_seconds()


def direct_runs(script: Path, sleep: float, trials: int) -> float:
    started = time.perf_counter()
    for i in range(trials):
        subprocess.run(
            [sys.executable, str(script), str(sleep), f"--x={i / trials}"],
            check=True,
            env={"CLOUD_ML_HP_METRIC_FILE": str(script.parent / "direct" / "m")},
        )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds each trial trains")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "trial.py"
        script.write_text(TRIAL_SCRIPT)
        backend = JobRunner(str(Path(tmp) / "root"))
        baseline = direct_runs(script, args.sleep, args.trials)
        sequential, startup, loop = run_study(
            backend, study_spec(script, args.sleep, args.trials, 1)
        )
        parallel, _, _ = run_study(backend, study_spec(script, args.sleep, args.trials, 2))
    n = args.trials
    overhead = (sequential - baseline) / n
    steady = (loop - baseline) / n
    print(f"trials: {n}, each sleeping {args.sleep:.2f} s")
    print(f"baseline  (trial script run directly, one after another): {baseline:7.2f} s")
    print(f"sequential study (parallel_trial_count=1):                {sequential:7.2f} s")
    print(f"parallel study   (parallel_trial_count=2):                {parallel:7.2f} s")
    print(f"sequential / baseline: {sequential / baseline:.3f}")
    print(f"parallel / sequential: {parallel / sequential:.3f}  (ideal 0.5)")
    print(
        f"backend overhead per trial beyond the trial's own time: {overhead:.3f} s "
        f"({'within' if overhead < 1.0 else 'OVER'} the 1 s target)"
    )
    print(
        f"  of which once per study (supervisor start, Optuna import): {startup:.3f} s; "
        f"per trial in the loop: {steady:.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
