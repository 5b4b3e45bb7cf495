"""Running jobs on the local backend and showing their progress as they go.

Prints replica state changes and a trial row as each trial finishes, then the trial table
and the best trial: what the Vertex console would show, on a terminal.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from vertex_training.jobs.backends.local import LocalBackend, LocalJobState
from vertex_training.jobs.records import JobRecord, JobState, TrialRecord
from vertex_training.runner.jobs import LocalJob

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class JobOutcome:
    job: str
    record: JobRecord
    plot: str | None

    @property
    def succeeded(self) -> bool:
        return self.record.state is JobState.SUCCEEDED


def format_value(value: float | int | str) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def trial_row(trial: TrialRecord, metric_width: int = 10) -> str:
    value = next(iter(trial.final_metrics.values()), None)
    metric = "-" if value is None else f"{value:.4f}"
    params = "  ".join(f"{k}={format_value(v)}" for k, v in trial.parameters.items())
    return f"  trial {trial.trial_id:>3}  {trial.state:<11} {metric:>{metric_width}}  {params}"


def trial_table(record: JobRecord) -> list[str]:
    lines = [f"  {'':5} {'id':>3}  {'state':<11} {'metric':>10}  parameters"]
    lines += [trial_row(t) for t in record.trials]
    if record.best_trial is not None:
        lines.append(f"  best: {trial_row(record.best_trial).strip()}")
    return lines


class ProgressPrinter:
    """Prints what changed since the last look at a job."""

    def __init__(self, job: str, out: TextIO) -> None:
        self.job = job
        self.out = out
        self._replicas: dict[str, str] = {}
        self._trials: dict[str, str] = {}
        self._state: JobState | None = None

    def emit(self, line: str) -> None:
        print(f"[{self.job}] {line}", file=self.out, flush=True)

    def update(self, details: LocalJobState) -> None:
        record = details.record
        # A terminal state is shown after the replica and trial changes that led to it.
        if record.state is not self._state and not record.state.is_terminal:
            self._state = record.state
            self.emit(f"job {record.state.value}")
        for replica in details.replicas:
            key = replica.label
            if self._replicas.get(key) != replica.state:
                self._replicas[key] = replica.state
                pid = f" pid {replica.pid}" if replica.pid else ""
                code = f" exit {replica.exit_code}" if replica.exit_code is not None else ""
                self.emit(f"{key}: {replica.state}{pid}{code}")
        for trial in record.trials:
            if self._trials.get(trial.trial_id) != trial.state:
                self._trials[trial.trial_id] = trial.state
                if trial.state != "ACTIVE":
                    stopped = " (stopped early)" if trial.early_stopped else ""
                    self.emit(trial_row(trial).strip() + stopped)
        if record.state is not self._state:
            self._state = record.state
            self.emit(f"job {record.state.value}")

    def summary(self, details: LocalJobState) -> None:
        record = details.record
        self.emit(f"{record.name}: {record.state.value}")
        if record.trials:
            for line in trial_table(record):
                self.emit(line)
        if record.model_dir:
            self.emit(f"model: {record.model_dir}")
        if details.plot:
            self.emit(f"study plot: {details.plot}")
        if record.error_message:
            self.emit(f"error: {record.error_message}")


def run_jobs(
    backend: LocalBackend,
    jobs: Sequence[tuple[str, LocalJob]],
    out: TextIO,
    poll_seconds: float = POLL_SECONDS,
) -> list[JobOutcome]:
    """Submit each job, follow it to the end, then the next; a Ctrl-C cancels the job.

    A job of the same body whose supervisor died (killed, machine restarted) is resumed
    instead of submitted again: a study keeps its finished trials."""
    outcomes: list[JobOutcome] = []
    for job, spec in jobs:
        printer = ProgressPrinter(job, out)
        interrupted = backend.find_interrupted(spec.kind, spec.body)
        if interrupted is not None:
            record = backend.resume(interrupted.name)
            done = sum(t.state in ("SUCCEEDED", "INFEASIBLE") for t in record.trials)
            printer.emit(
                f"resuming {record.name} ({spec.display_name}): its supervisor died"
                + (f"; {done} trials already finished" if record.trials else "")
            )
        else:
            record = backend.submit(spec.kind, spec.body)
            printer.emit(f"submitted {record.name} ({spec.display_name})")
        try:
            while True:
                details = backend.details(record.name)
                printer.update(details)
                if details.record.state.is_terminal:
                    break
                time.sleep(poll_seconds)
        except KeyboardInterrupt:
            printer.emit("interrupted: cancelling")
            backend.cancel(record.name)
            backend.wait(record.name, timeout=60)
            raise
        printer.summary(details)
        outcomes.append(JobOutcome(job, details.record, details.plot))
    return outcomes
