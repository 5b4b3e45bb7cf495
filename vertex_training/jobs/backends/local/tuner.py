"""A HyperparameterTuningJob's study on this machine: Optuna asks, trials run as clusters.

``Tuner`` runs trials ``parallelTrialCount`` at a time until ``maxTrialCount`` (or the
grid is exhausted, or ``maxFailedTrialCount`` trials failed), reads each trial's
hypertune reports, stops trials early when the study asks for automated stopping, and
keeps the job's trial table and best trial up to date. The supervisor owns the process
and its signals; the tuner runs the study through the job's ``JobRun`` (state updates,
cancellation, one cluster per trial).

The study lives in a journal file in the job directory (``study.STUDY_JOURNAL``), so a
supervisor started again for a job whose supervisor died resumes it:

- trials the job's state records as finished keep their results and count towards
  ``maxTrialCount``; a trial finished and recorded but not yet told to Optuna is told now;
- trials that were running are re-run under the same trial id with the same parameters
  (their Optuna trial is marked FAIL, a new one is enqueued with those parameters): their
  processes were stopped with the supervisor, and the trainer resumes them from their
  checkpoints. The interrupted attempt's files move to ``trials/<id>.interrupted``;
- a trial Optuna handed out but the job never recorded (the supervisor died between the
  two) is marked FAIL and its trial id is given to the next new trial.

A trial's result is written to the job's state before it is told to Optuna, which is
what makes the job's state the record of what finished.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field, replace
from typing import Any

import optuna
from google.cloud.aiplatform_v1 import HyperparameterTuningJob, Trial

from vertex_training.jobs.backends.local._store import now_rfc3339
from vertex_training.jobs.backends.local.cluster import POLL_SECONDS, ClusterRun, log_tail
from vertex_training.jobs.backends.local.job_run import JobRun
from vertex_training.jobs.backends.local.study import (
    STUDY_JOURNAL,
    Algorithm,
    Goal,
    Measurement,
    create_study,
    final_metric,
    grid_size,
    parameter_args,
    read_measurements,
    stops_early,
    suggest_parameters,
)
from vertex_training.jobs.records import JobState, TrialRecord, best_trial

_log = logging.getLogger(__name__)

VERTEX_TRIAL_ID = "vertex_trial_id"
"""Optuna user attribute: the Vertex trial id a trial ran (or runs) as."""
_ACTIVE, _STOPPING, _SUCCEEDED, _INFEASIBLE = (
    Trial.State(state).name
    for state in (
        Trial.State.ACTIVE,
        Trial.State.STOPPING,
        Trial.State.SUCCEEDED,
        Trial.State.INFEASIBLE,
    )
)
"""The Vertex trial states a local trial passes through (``TrialRecord.state``)."""
_FINISHED = (_SUCCEEDED, _INFEASIBLE)
_TrialState = optuna.trial.TrialState


@dataclass
class _ActiveTrial:
    record: TrialRecord
    optuna_trial: optuna.Trial
    run: ClusterRun
    measurements: list[Measurement] = field(default_factory=list)


class Tuner:
    """Runs trials ``parallel_trial_count`` at a time until ``max_trial_count``."""

    def __init__(self, job_run: JobRun, job: HyperparameterTuningJob, seed: int | None) -> None:
        self.job_run = job_run
        self.job = job
        self.metric = job.study_spec.metrics[0]
        self.maximize = self.metric.goal == Goal.MAXIMIZE
        self.grid = job.study_spec.algorithm == Algorithm.GRID_SEARCH
        self.stops_early = stops_early(job.study_spec)
        self.study = create_study(
            job.study_spec,
            seed,
            storage=job_run.job.path / STUDY_JOURNAL,
            name=job.display_name or job_run.job_id,
        )
        self.max_trials = job.max_trial_count
        if self.grid:
            # Vertex ends a grid study when the grid is exhausted.
            self.max_trials = min(self.max_trials, grid_size(job.study_spec))
        self.trials: dict[str, TrialRecord] = {}
        self.active: dict[str, _ActiveTrial] = {}
        self.failed = 0
        self.last_failure: str | None = None

    def run(self) -> None:
        try:
            failure = self._run()
        finally:
            # Ended, cancelled or crashed: stop the trials, keep what they found.
            self.stop_all()
            self.save()
        if failure is None:
            self.job_run.finish(JobState.SUCCEEDED)
        else:
            self.job_run.finish(JobState.FAILED, error_message=failure)

    def _run(self) -> str | None:
        """Run the study; why it failed, None when it succeeded."""
        started, reruns = self._resume()
        self.job_run.set_state(
            JobState.RUNNING, start_time=self.job_run.job.read().record.start_time or now_rfc3339()
        )
        # The provider's check refuses an unset count; never a loop that launches nothing.
        parallel = max(1, self.job.parallel_trial_count)
        limit = self.job.max_failed_trial_count
        while self.active or reruns or started < self.max_trials:
            self.job_run.check_cancel()
            if limit > 0 and self.failed >= limit:
                return (
                    f"{self.failed} trials failed (max_failed_trial_count {limit}); "
                    f"last failure: {self.last_failure}"
                )
            while len(self.active) < parallel and reruns:
                self._launch(*reruns.pop(0))
            while len(self.active) < parallel and started < self.max_trials:
                started += 1
                self._launch(str(started))
            if any([self._poll(active) for active in list(self.active.values())]):
                self.save()
            time.sleep(POLL_SECONDS)
        if best_trial(list(self.trials.values()), self.metric.metric_id, self.maximize) is None:
            return f"no trial succeeded with a metric; last failure: {self.last_failure}"
        return None

    def _resume(self) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
        """Settle what a previous supervisor of this job left in the study (see the module
        docstring); returns the highest trial id handed out and the trials to run again."""
        prior = {t.trial_id: t for t in self.job_run.job.read().record.trials}
        reruns: list[tuple[str, dict[str, Any]]] = []
        unsettled = self.study.get_trials(deepcopy=False, states=(_TrialState.RUNNING,))
        for frozen in unsettled:
            record = prior.get(frozen.user_attrs.get(VERTEX_TRIAL_ID, ""))
            if record is not None and record.state in _FINISHED:
                value = record.final_metrics.get(self.metric.metric_id)
                if record.early_stopped:
                    _tell(self.study, frozen.number, state=_TrialState.PRUNED)
                elif record.state == _SUCCEEDED and value is not None:
                    _tell(self.study, frozen.number, value=value)
                else:
                    _tell(self.study, frozen.number, state=_TrialState.FAIL)
                continue
            _tell(self.study, frozen.number, state=_TrialState.FAIL)
            if record is not None:
                reruns.append((record.trial_id, dict(frozen.params)))
        self.trials = {k: t for k, t in prior.items() if t.state in _FINISHED}
        self.failed = sum(t.state == _INFEASIBLE for t in self.trials.values())
        if unsettled or self.trials:
            _log.info(
                "resuming the study: %d trials finished, %d to run again (%s)",
                len(self.trials),
                len(reruns),
                ", ".join(k for k, _ in reruns) or "none",
            )
        reruns.sort(key=lambda item: int(item[0]))
        return max((int(k) for k in prior), default=0), reruns

    def _launch(self, trial_id: str, fixed_params: dict[str, Any] | None = None) -> None:
        trial_dir = self.job_run.job.path / "trials" / trial_id
        if fixed_params is not None:
            # The interrupted attempt's parameters; its files are kept beside for a look.
            self.study.enqueue_trial(fixed_params, skip_if_exists=False)
            if trial_dir.exists():
                kept = trial_dir.with_name(f"{trial_id}.interrupted")
                shutil.rmtree(kept, ignore_errors=True)
                trial_dir.rename(kept)
        optuna_trial = self.study.ask()
        optuna_trial.set_user_attr(VERTEX_TRIAL_ID, trial_id)
        params = suggest_parameters(optuna_trial, self.job.study_spec.parameters, self.grid)
        run = self.job_run.cluster(
            self.job.trial_job_spec,
            trial_dir,
            trial_id=trial_id,
            extra_args=parameter_args(params),
        )
        record = TrialRecord(
            trial_id=trial_id,
            state=_ACTIVE,
            # As Vertex reports them (struct Values): every number a double.
            parameters={k: v if isinstance(v, str) else float(v) for k, v in params},
            start_time=now_rfc3339(),
        )
        self.trials[trial_id] = record
        self.active[trial_id] = _ActiveTrial(record, optuna_trial, run)
        run.start()
        self.save()

    def _final_value(self, active: _ActiveTrial) -> float | None:
        selection = self.job.study_spec.measurement_selection_type
        return final_metric(active.measurements, self.metric.goal, selection)

    def _poll(self, active: _ActiveTrial) -> bool:
        """Advance one trial; True when its record changed."""
        run = active.run
        self._read_new_measurements(active)
        if (
            self.stops_early
            and run.succeeded is None
            and active.measurements
            and active.optuna_trial.should_prune()
        ):
            _log.info("trial %s stopped early by median stopping", active.record.trial_id)
            run.terminate()
            self._close(active, _SUCCEEDED, self._final_value(active), early_stopped=True)
            _tell(self.study, active.optuna_trial, state=_TrialState.PRUNED)
            return True
        succeeded = run.poll()
        if succeeded is None:
            return False
        self._read_new_measurements(active)
        value = self._final_value(active)
        if succeeded and value is not None:
            self._close(active, _SUCCEEDED, value)
            _tell(self.study, active.optuna_trial, value=value)
        else:
            self.failed += 1
            self.last_failure = run.error_message or (
                f"trial {active.record.trial_id} reported no {self.metric.metric_id!r} metric "
                f"through hypertune (file {run.chief_metric_file}); last log lines:\n"
                f"{log_tail(run.replicas[0].log_path)}"
            )
            self._close(active, _INFEASIBLE, None, reason=self.last_failure)
            _tell(self.study, active.optuna_trial, state=_TrialState.FAIL)
        return True

    def _read_new_measurements(self, active: _ActiveTrial) -> None:
        measurements = read_measurements(active.run.chief_metric_file, self.metric.metric_id)
        # Shorter than before: the file caught half rewritten (hypertune rewrites it whole).
        if len(measurements) <= len(active.measurements):
            return
        new = measurements[len(active.measurements) :]
        active.measurements = measurements
        if self.stops_early:
            for m in new:
                active.optuna_trial.report(m.value, m.step)

    def _close(
        self,
        active: _ActiveTrial,
        state: str,
        value: float | None,
        *,
        early_stopped: bool = False,
        reason: str | None = None,
    ) -> None:
        trial_id = active.record.trial_id
        self.trials[trial_id] = replace(
            active.record,
            state=state,
            final_metrics={} if value is None else {self.metric.metric_id: value},
            early_stopped=early_stopped,
            infeasible_reason=reason,
            end_time=now_rfc3339(),
        )
        del self.active[trial_id]
        # Recorded before Optuna hears of it: a supervisor that dies in between leaves a
        # result that the next one tells Optuna, never a result that is lost.
        self.save()

    def stop_all(self) -> None:
        for active in self.active.values():
            active.run.terminate()
            self.trials[active.record.trial_id] = replace(
                active.record, state=_STOPPING, end_time=now_rfc3339()
            )
        self.active.clear()

    def save(self) -> None:
        trials = tuple(sorted(self.trials.values(), key=lambda t: int(t.trial_id)))
        best = best_trial(trials, self.metric.metric_id, self.maximize)
        model_dir = None
        if best is not None and self.job_run.output_dir:
            # Vertex reports a tuning job's model as the best trial's AIP_MODEL_DIR.
            model_dir = f"{self.job_run.output_dir.rstrip('/')}/{best.trial_id}/model"
        with self.job_run.job.update() as current:
            current.record = replace(
                current.record, trials=trials, best_trial=best, model_dir=model_dir
            )
            current.replicas = [s for a in self.active.values() for s in a.run.statuses()]


def _tell(
    study: optuna.Study,
    trial: optuna.Trial | int,
    value: float | None = None,
    state: _TrialState = _TrialState.COMPLETE,
) -> None:
    try:
        if value is not None:
            study.tell(trial, value)
        else:
            study.tell(trial, state=state)
    except RuntimeError as exc:
        # GridSampler calls study.stop() once the grid is exhausted, which works only
        # inside optimize(); optuna stores the trial before that (in a finally), and we
        # stop at the grid size ourselves, so this is safe to pass over.
        if "Study.stop" not in str(exc):
            raise
        _log.debug("grid exhausted: %s", exc)


__all__ = ["VERTEX_TRIAL_ID", "Tuner"]
