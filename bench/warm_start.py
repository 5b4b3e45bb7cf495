"""The local stack's study on a warm pool (a local persistent resource) against without one.

The study is the local stack's ``horses-humans-tuning`` (stacks/Pulumi.local.yaml, built
through the stack reader: 6 trials, 2 at a time), run twice in one invocation on the same
local root: once as declared (each trial's replica a new interpreter that imports
TensorFlow), once placed on a pool of 2 warm workers (``jobSpec.persistentResourceId``).
Figures:

- start: for each trial, from the study handing it out (its ``start_time``) to the
  trainer's first step (its ``start_epoch`` log line, logged as the first epoch begins);
  the medians, and their ratio (target: at least 3x faster on the pool);
- end to end: from submitting the study to its end, and the ratio (target: at least 1.3x).

The pool is warmed before the clock starts: that is what a persistent resource is for (it
bills while it exists). A first, untimed job fills the decoded-image cache both studies
share, so that neither pays it alone.

    .venv/bin/python bench/warm_start.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from tests.fakes.faults import ended
from vertex_training.jobs.api import PlatformFacts, resolve
from vertex_training.jobs.declarations import read_job
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.pool import create_pool, stop_pool
from vertex_training.local.runners.store import LocalJobState
from vertex_training.local.runners.warm import pool_dir

ROOT = Path(__file__).resolve().parents[1]
STUDY = "horses-humans-tuning"
RESOURCE = "bench-pool"
FIRST_STEP = "start_epoch="
"""The trainer's line as its first epoch begins (``trainer.callbacks.EpochLogger``)."""


def study_body(bucket: Path) -> dict[str, Any]:
    """The local stack's study, as its program builds it."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.local.yaml").read_text(encoding="utf-8"))
    (entry,) = (j for j in stack["config"]["vertex-training:jobs"] if j["name"] == STUDY)
    entry = {k: v for k, v in entry.items() if k != "pollIntervalSeconds"}
    # Cold as declared here; ``on_pool`` places it on this bench's own pool.
    entry["trial"] = {k: v for k, v in entry["trial"].items() if k != "persistentResourceId"}
    job, problems = read_job(entry, "jobs[1]")
    assert job is not None, problems
    facts = PlatformFacts(
        environment="local", region="us-central1", image="trainer:local", bucket_url=str(bucket)
    )
    return resolve(job.args, job.name, facts).body


def on_pool(body: dict[str, Any]) -> dict[str, Any]:
    spec = {**body["trialJobSpec"], "persistentResourceId": RESOURCE}
    return {**body, "trialJobSpec": spec}


def first_step(log: Path) -> datetime:
    """When the trainer logged its first step (its log's local time)."""
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if FIRST_STEP in line:
            return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").astimezone(UTC)
    raise SystemExit(f"no {FIRST_STEP!r} line in {log}")


def run(backend: JobRunner, kind: JobKind, body: dict[str, Any]) -> tuple[LocalJobState, float]:
    started = time.perf_counter()
    record = ended(backend, backend.submit(kind, body).name, timeout=1800)
    elapsed = time.perf_counter() - started
    if record.state is not JobState.SUCCEEDED:
        raise SystemExit(f"{record.name} ended {record.state.name}: {record.error_message}")
    return record, elapsed


def starts(backend: JobRunner, record: LocalJobState) -> list[float]:
    """Each trial's seconds from being handed out to the trainer's first step."""
    trials = backend.jobs_dir / record.name.rsplit("/", 1)[-1] / "trials"
    out = []
    for trial in record.trials:
        handed_out = datetime.fromisoformat(trial["startTime"])
        log = trials / trial["id"] / "logs" / "workerpool0-0.log"
        out.append((first_step(log) - handed_out).total_seconds())
    return out


def main() -> int:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # as `make` exports it: the pool and jobs agree
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        backend = JobRunner(str(root))
        body = study_body(root / "gcs" / "bench")
        slots = body["parallelTrialCount"] * len(body["trialJobSpec"]["workerPoolSpecs"])
        pool = pool_dir(root.resolve(), RESOURCE)
        print(f"warming a pool of {slots} workers ...", flush=True)
        warmed = time.perf_counter()
        create_pool(pool, slots)
        print(f"pool warm in {time.perf_counter() - warmed:.1f} s (not counted)", flush=True)
        try:
            prime = {"displayName": "prime", "jobSpec": body["trialJobSpec"]}
            run(backend, JobKind.CUSTOM_JOB, prime)  # fills the decoded-image cache
            cold, cold_s = run(backend, JobKind.HYPERPARAMETER_TUNING_JOB, body)
            warm, warm_s = run(backend, JobKind.HYPERPARAMETER_TUNING_JOB, on_pool(body))
        finally:
            stop_pool(pool)
        cold_starts, warm_starts = starts(backend, cold), starts(backend, warm)
    cold_start, warm_start = statistics.median(cold_starts), statistics.median(warm_starts)
    n = len(cold.trials)
    print(f"study: {STUDY} of stacks/Pulumi.local.yaml, {n} trials, {slots} at a time")
    print(f"trial start to first step, cold:      {' '.join(f'{s:.1f}' for s in cold_starts)} s")
    print(f"trial start to first step, warm pool: {' '.join(f'{s:.1f}' for s in warm_starts)} s")
    print(f"median start: cold {cold_start:.2f} s, warm pool {warm_start:.2f} s")
    print(f"start ratio (cold / warm): {cold_start / warm_start:.2f}x (target >= 3x)")
    print(f"whole study: cold {cold_s:.1f} s, warm pool {warm_s:.1f} s")
    print(f"study ratio (cold / warm): {cold_s / warm_s:.2f}x (target >= 1.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
