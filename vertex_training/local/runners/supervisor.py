"""The detached process that runs one local job: ``python -m ...supervisor <job dir>``.

Started by ``JobRunner.submit`` in a new session, so it outlives the process that
submitted it (the local Vertex may stop or restart while its jobs run). It alone writes the
job's state while it runs, moving it through PENDING -> RUNNING -> SUCCEEDED / FAILED, and
to CANCELLED when ``cancel`` asks (the cancel file) or it gets SIGTERM or SIGINT. Every
replica runs in its own process group, which is what cancel, failure and success stop.

A tuning job's ``Tuner`` runs the study through Optuna's own ``optimize``:
``parallelTrialCount`` trials at a time (its threads), each trial one cluster of processes,
until ``maxTrialCount`` (or the grid is exhausted, or ``maxFailedTrialCount`` trials
failed). A trial reads its hypertune reports, stops early when the study asks for
automated stopping, and keeps the job's trial table up to date.
The study lives in a journal file in the job directory (``study.STUDY_JOURNAL``): it is the
record of every trial, and the job's trial table is read from it; a supervisor started
again for a job whose supervisor died resumes the study (``Tuner._resume``; docs/local.md).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import optuna
from google.cloud.aiplatform_v1 import CustomJob, HyperparameterTuningJob, Trial

from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobState
from vertex_training.local.runners.cluster import POLL_SECONDS, ClusterRun, log_tail
from vertex_training.local.runners.environment import GpuAllocator, detect_gpus
from vertex_training.local.runners.store import CANCELLED_MESSAGE, JobDir, now_rfc3339, rfc3339
from vertex_training.local.runners.study import (
    STUDY_JOURNAL,
    Algorithm,
    Measurement,
    create_study,
    final_metric,
    grid_size,
    parameter_args,
    read_measurements,
    stops_early,
    suggest_parameters,
)

_log = logging.getLogger("vertex_training.local.runners.supervisor")

_State = Trial.State
VERTEX_TRIAL_ID = "vertex_trial_id"
"""Optuna user attribute: the Vertex trial id a trial ran (or runs) as."""
_ACTIVE, _STOPPING, _SUCCEEDED, _INFEASIBLE = (
    _State(s).name for s in (_State.ACTIVE, _State.STOPPING, _State.SUCCEEDED, _State.INFEASIBLE)
)
"""The Vertex trial states a local trial passes through."""
_TrialState = optuna.trial.TrialState
_STATES = {
    _TrialState.RUNNING: _ACTIVE,
    _TrialState.COMPLETE: _SUCCEEDED,
    _TrialState.PRUNED: _STOPPING,
}
"""A trial's Vertex state by its Optuna state; a failed one is INFEASIBLE when it ran to
its end, else STOPPING (cancelled, or the study ended under it). Vizier ends an
automatically stopped trial through STOPPING: an early-stopped trial keeps that state,
so that clients can tell."""
_PARAMETERS, _STOPPED_AT, _INFEASIBLE_REASON = "parameters", "stopped_at", "infeasible_reason"
"""Optuna user attributes: what the job's trial table shows beyond Optuna's own record."""


class JobCancelledError(Exception):
    """``cancel`` asked (the cancel file, or SIGTERM): the job ends CANCELLED."""


class Supervisor:
    """The job in ``job_dir``: the only writer of its state while it runs."""

    def __init__(self, job_dir: Path) -> None:
        self.job = JobDir(job_dir)
        self.cancel_requested = False
        self.output_dir = self.job.read().output_dir
        """The job's base output directory as a local path; None when the body has none."""
        self.gpus = GpuAllocator(detect_gpus())
        self.lock = threading.RLock()
        """Held while a study's trial threads change what they share, and while it is saved."""
        self.runs: dict[str | None, ClusterRun] = {}
        """What runs now, by trial id (None: a CustomJob's one cluster)."""
        self.report: Callable[[], dict[str, Any]] = dict
        """What the job's record shows of its runs so far (a study's trials), by field."""

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.cancel_requested = True

    def check_cancel(self) -> None:
        if self.cancel_requested or self.job.cancel_file.exists():
            raise JobCancelledError

    def save(self, **changes: Any) -> None:
        """Save ``changes`` to the job's state and, unless they end the job (a terminal
        ``state``, saved with its end time), the replicas of what runs now and what
        ``report`` makes of its runs so far (each run saved itself last as it ended, so a
        CustomJob's state keeps how its replicas ended)."""
        state = changes.get("state")
        with self.lock, self.job.update() as current:
            if state is not None and state.is_terminal:
                changes["end_time"] = now_rfc3339()
            else:
                current.replicas = [r for run in self.runs.values() for r in run.replicas]
                changes = {**self.report(), **changes}
                if state is not None and current.state is JobState.CANCELLING:
                    self.cancel_requested = True  # a cancel came between our polls: keep it
                    return
            vars(current).update(changes)

    def follow(self, run: ClusterRun, tick: Callable[[], None], **started: Any) -> bool:
        """Start ``run``, save the job (with ``started``: ``save``'s arguments), poll it
        until it ends (``tick`` between polls may end it by raising), saving whenever a
        replica's state changes, and stop whatever it left; True when it succeeded."""
        try:
            with self.lock:
                self.runs[run.trial_id] = run
                run.start()  # under the lock: the machine's GPUs go to one trial at a time
            # After the replicas: whoever reads RUNNING finds the processes that run it.
            self.save(**started)
            seen = [r.state for r in run.replicas]
            while (succeeded := run.poll()) is None:
                if (states := [r.state for r in run.replicas]) != seen:
                    seen = states
                    self.save()
                tick()
                time.sleep(POLL_SECONDS)
            return succeeded
        finally:
            with self.lock:
                run.terminate()
                self.save()  # a CustomJob's state keeps how its replicas ended
                del self.runs[run.trial_id]

    def run(self) -> int:
        try:
            job = parse_body(self.job.read().kind, self.job.read_body())
            self.check_cancel()
            self.save(state=JobState.PENDING)
            if isinstance(job, HyperparameterTuningJob):
                failure = Tuner(self, job, self.job.read().seed).run()
            else:
                failure = self.run_custom_job(job)
        except JobCancelledError:
            self.save(state=JobState.CANCELLED, error_message=CANCELLED_MESSAGE)
        except Exception as exc:
            _log.exception("supervisor failed")
            self.save(state=JobState.FAILED, error_message=f"local supervisor error: {exc!r}")
            return 1
        else:
            state = JobState.SUCCEEDED if failure is None else JobState.FAILED
            self.save(state=state, error_message=failure)
        return 0

    def run_custom_job(self, job: CustomJob) -> str | None:
        """Run the job's replicas; why it failed, None when it succeeded."""
        run = ClusterRun(self.job, job.job_spec, self.job.path, self.output_dir, self.gpus)
        succeeded = self.follow(
            run, self.check_cancel, state=JobState.RUNNING, start_time=now_rfc3339()
        )
        return None if succeeded else run.error_message


class _TrialFailedError(Exception):
    """The trial failed or reported no metric: INFEASIBLE, and the study goes on."""


class _HaltError(Exception):
    """The study ends now (too many trials failed, or a trial met an error): every running
    trial stops."""


class Tuner:
    """Runs trials ``parallel_trial_count`` at a time until ``max_trial_count``."""

    def __init__(
        self, supervisor: Supervisor, job: HyperparameterTuningJob, seed: int | None
    ) -> None:
        self.supervisor = supervisor
        supervisor.report = lambda: {"trials": self.records()}
        self.job = job
        self.metric = job.study_spec.metrics[0]
        self.grid = job.study_spec.algorithm == Algorithm.GRID_SEARCH
        self.stops_early = stops_early(job.study_spec)
        self.study = create_study(
            job.study_spec,
            seed,
            storage=supervisor.job.path / STUDY_JOURNAL,
            name=job.display_name or supervisor.job.path.name,
        )
        self.max_trials = job.max_trial_count
        if self.grid:
            # Vertex ends a grid study when the grid is exhausted.
            self.max_trials = min(self.max_trials, grid_size(job.study_spec))
        self.started = 0
        """The highest trial id handed out."""
        self.failed = 0
        self.last_failure: str | None = None
        self.failure: str | None = None
        """Why the study ends now, when a trial ended it."""

    def run(self) -> str | None:
        """Run the study; why it failed, None when it succeeded."""
        try:
            self._resume()
            self.supervisor.save(
                state=JobState.RUNNING,
                start_time=self.supervisor.job.read().start_time or now_rfc3339(),
            )
            waiting = self.study.get_trials(deepcopy=False, states=(_TrialState.WAITING,))
            with contextlib.suppress(_HaltError):
                self.study.optimize(
                    self._objective,
                    n_trials=len(waiting) + max(0, self.max_trials - self.started),
                    # The provider's check refuses an unset count; never a study of nothing.
                    n_jobs=max(1, self.job.parallel_trial_count),
                    catch=(_TrialFailedError,),
                    callbacks=[lambda study, trial: self.supervisor.save()],
                )
        finally:
            self.supervisor.save()
        # With several threads, optimize does not raise what its last trials raised.
        self.supervisor.check_cancel()
        if self.failure is not None:
            return self.failure
        if not any(t["finalMeasurement"]["metrics"] for t in self.records()):
            return f"no trial succeeded with a metric; last failure: {self.last_failure}"
        return None

    def _resume(self) -> None:
        """Settle what a previous supervisor of this job left running: finished trials keep
        their results and count towards ``maxTrialCount``; a running one is marked FAIL
        and enqueued again under its trial id with its parameters (its processes were
        stopped with the supervisor; the trainer resumes from its checkpoints), its
        attempt's files kept in ``trials/<id>.interrupted``."""
        interrupted = self.study.get_trials(deepcopy=False, states=(_TrialState.RUNNING,))
        for frozen in interrupted:
            try:
                self.study.tell(frozen.number, state=_TrialState.FAIL)
            except RuntimeError as exc:
                # GridSampler calls study.stop() once the grid is exhausted, which works
                # only inside optimize(); optuna stores the trial before that (in a
                # finally), and we stop at the grid size ourselves: safe to pass over.
                if "Study.stop" not in str(exc):
                    raise
            trial_id = frozen.user_attrs.get(VERTEX_TRIAL_ID)
            if trial_id is None:
                continue  # asked, but not yet a Vertex trial: its id was never handed out
            self.study.enqueue_trial(frozen.params, user_attrs={VERTEX_TRIAL_ID: trial_id})
            # The interrupted attempt's files are kept beside for a look.
            trial_dir = self.supervisor.job.path / "trials" / trial_id
            if trial_dir.exists():
                kept = trial_dir.with_name(f"{trial_id}.interrupted")
                shutil.rmtree(kept, ignore_errors=True)
                trial_dir.rename(kept)
        ids = [t.user_attrs.get(VERTEX_TRIAL_ID) for t in self.study.get_trials(deepcopy=False)]
        self.started = max((int(i) for i in ids if i is not None), default=0)
        self.failed = sum(t["state"] == _INFEASIBLE for t in self.records())
        if interrupted:
            _log.info("resuming the study: %d trials run again", len(interrupted))

    def _objective(self, trial: optuna.Trial) -> float:
        try:
            return self._run_trial(trial)
        except (_TrialFailedError, _HaltError, optuna.TrialPruned, JobCancelledError):
            raise
        except Exception as error:
            # Every other trial stops too; the job fails with it, as with any supervisor error.
            self.failure = self.failure or f"local supervisor error: {error!r}"
            raise

    def _run_trial(self, trial: optuna.Trial) -> float:
        """One trial, from its parameters to its value (raised when it has none): its
        cluster's reports are read as it runs, and a median stop ends it early."""
        with self.supervisor.lock:
            trial_id = trial.user_attrs.get(VERTEX_TRIAL_ID)
            if trial_id is None:
                self.started += 1
                trial_id = str(self.started)
                trial.set_user_attr(VERTEX_TRIAL_ID, trial_id)
            params = suggest_parameters(trial, self.job.study_spec.parameters, self.grid)
            # As Vertex reports them (struct Values): every number a double.
            trial.set_user_attr(
                _PARAMETERS, {k: v if isinstance(v, str) else float(v) for k, v in params}
            )
        supervisor = self.supervisor
        run = ClusterRun(
            supervisor.job,
            self.job.trial_job_spec,
            supervisor.job.path / "trials" / trial_id,
            supervisor.output_dir,
            supervisor.gpus,
            trial_id=trial_id,
            extra_args=parameter_args(params),
        )
        measurements: list[Measurement] = []

        def value() -> float | None:
            nonlocal measurements
            new = read_measurements(run.chief_metric_file, self.metric.metric_id)
            # Shorter than before: the file caught half rewritten (hypertune rewrites it whole).
            if len(new) > len(measurements):
                if self.stops_early:
                    for m in new[len(measurements) :]:
                        trial.report(m.value, m.step)
                measurements = new
            selection = self.job.study_spec.measurement_selection_type
            return final_metric(measurements, self.metric.goal, selection)

        def tick() -> None:
            current = value()
            self.supervisor.check_cancel()
            if self.failure is not None:
                raise _HaltError
            if self.stops_early and measurements and trial.should_prune():
                _log.info("trial %s stopped early by median stopping", trial_id)
                trial.set_user_attr(_STOPPED_AT, current)
                raise optuna.TrialPruned

        succeeded = self.supervisor.follow(run, tick)
        if succeeded and (final := value()) is not None:
            return final
        reason = run.error_message or (
            f"trial {trial_id} reported no {self.metric.metric_id!r} metric "
            f"through hypertune (file {run.chief_metric_file}); last log lines:\n"
            f"{log_tail(Path(run.replicas[0].log))}"
        )
        trial.set_user_attr(_INFEASIBLE_REASON, reason)
        with self.supervisor.lock:
            self.failed += 1
            self.last_failure = reason
            limit = self.job.max_failed_trial_count
            if limit > 0 and self.failed >= limit:
                self.failure = (
                    f"{self.failed} trials failed (max_failed_trial_count {limit}); "
                    f"last failure: {reason}"
                )
                raise _HaltError
        raise _TrialFailedError(reason)

    def records(self) -> list[dict[str, Any]]:
        """The job's trials as Vertex's ``Trial`` messages (JSON), read from the study:
        each trial id's latest attempt."""
        trials: dict[str, dict[str, Any]] = {}
        for trial in self.study.get_trials(deepcopy=False):
            attrs = trial.user_attrs
            if _PARAMETERS not in attrs:
                continue  # asked, not yet started
            value = trial.value if trial.state is _TrialState.COMPLETE else attrs.get(_STOPPED_AT)
            metrics = [] if value is None else [{"metricId": self.metric.metric_id, "value": value}]
            reason = attrs.get(_INFEASIBLE_REASON)
            times = (("startTime", trial.datetime_start), ("endTime", trial.datetime_complete))
            trials[attrs[VERTEX_TRIAL_ID]] = {
                "id": attrs[VERTEX_TRIAL_ID],
                "state": _STATES.get(trial.state) or (_INFEASIBLE if reason else _STOPPING),
                "parameters": [
                    {"parameterId": k, "value": v} for k, v in attrs[_PARAMETERS].items()
                ],
                "finalMeasurement": {"metrics": metrics},
                **({"infeasibleReason": reason} if reason else {}),
                **{key: rfc3339(moment) for key, moment in times if moment},
            }
        return sorted(trials.values(), key=lambda t: int(t["id"]))


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    supervisor = Supervisor(Path(sys.argv[1]))
    signal.signal(signal.SIGTERM, supervisor.on_sigterm)
    signal.signal(signal.SIGINT, supervisor.on_sigterm)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
