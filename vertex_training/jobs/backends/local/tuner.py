"""A HyperparameterTuningJob's study on this machine: Optuna asks, trials run as clusters.

``Tuner`` runs trials ``parallelTrialCount`` at a time until ``maxTrialCount`` (or the
grid is exhausted, or ``maxFailedTrialCount`` trials failed), reads each trial's
hypertune reports, stops trials early when the study asks for automated stopping, and
keeps the job's trial table, best trial and plot up to date. The supervisor owns the
process and its signals; the tuner runs the study through the job's ``JobRun`` (state
updates, cancellation, one cluster per trial).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_training.jobs.backends.local._store import now_rfc3339
from vertex_training.jobs.backends.local.cluster import (
    POLL_SECONDS,
    ClusterOutcome,
    ClusterRun,
    log_tail,
)
from vertex_training.jobs.backends.local.job_run import JobRun
from vertex_training.jobs.backends.local.study import (
    STUDY_JOURNAL,
    Measurement,
    create_study,
    final_metric,
    grid_size,
    parameter_args,
    plot_study,
    read_measurements,
    suggest_parameters,
)
from vertex_training.jobs.records import JobState, TrialRecord, best_trial
from vertex_training.jobs.view import EarlyStoppingKind, SearchAlgorithm, TuningJobView

if TYPE_CHECKING:
    import optuna


_log = logging.getLogger(__name__)

STUDY_PLOT = "study.png"
VERTEX_TRIAL_ID = "vertex_trial_id"
"""Optuna user attribute: the Vertex trial id a trial ran (or runs) as."""
_FINISHED = ("SUCCEEDED", "INFEASIBLE")


@dataclass
class _ActiveTrial:
    record: TrialRecord
    optuna_trial: optuna.Trial
    run: ClusterRun
    reported_steps: set[int] = field(default_factory=set)
    measurements: list[Measurement] = field(default_factory=list)


class Tuner:
    """Runs trials ``parallel_trial_count`` at a time until ``max_trial_count``."""

    def __init__(self, job_run: JobRun, spec: TuningJobView, job_body: dict[str, Any]) -> None:
        self.job_run = job_run
        self.spec = spec
        self.job_body = job_body
        self.metric = spec.study.metrics[0]
        self.study = create_study(
            spec.study,
            seed=_read_seed(job_run.job.path),
            storage=job_run.job.path / STUDY_JOURNAL,
            study_name=spec.display_name or job_run.job_id,
        )
        self.max_trials = spec.max_trial_count
        if spec.study.algorithm is SearchAlgorithm.GRID:
            # Vertex ends a grid study when the grid is exhausted.
            self.max_trials = min(self.max_trials, grid_size(spec.study))
        self.trials: dict[str, TrialRecord] = {}
        self.active: dict[str, _ActiveTrial] = {}
        self.finished_runs: list[ClusterRun] = []
        self.failed = 0
        self.early_stopped: list[str] = []
        self.saved_final = False
        """The final trial table and plot are written (once: the plot takes a while)."""
        self.last_failure: str | None = None

    def run(self) -> None:
        started, reruns = self._resume()
        self.job_run.set_state(
            JobState.RUNNING, start_time=self.job_run.job.read().record.start_time or now_rfc3339()
        )
        while True:
            self.job_run.check_cancel()
            if self._too_many_failures():
                self.stop_all()
                self.save(final=True)
                self.job_run.finish(
                    JobState.FAILED,
                    error_message=(
                        f"{self.failed} trials failed (max_failed_trial_count "
                        f"{self.spec.max_failed_trial_count}); last failure: {self.last_failure}"
                    ),
                )
                return
            while len(self.active) < self.spec.parallel_trial_count and reruns:
                self._launch(*reruns.pop(0))
            while len(self.active) < self.spec.parallel_trial_count and started < self.max_trials:
                started += 1
                self._launch(str(started))
            changed = False
            for trial_id in list(self.active):
                changed |= self._poll(self.active[trial_id])
            if changed:
                self.save()
            if not self.active and not reruns and started >= self.max_trials:
                break
            time.sleep(POLL_SECONDS)
        self.save(final=True)
        best = best_trial(list(self.trials.values()), self.metric.metric_id, self.metric.maximize)
        if best is None:
            self.job_run.finish(
                JobState.FAILED,
                error_message=(
                    f"no trial succeeded with a metric; last failure: {self.last_failure}"
                ),
            )
        else:
            self.job_run.finish(JobState.SUCCEEDED)

    def _too_many_failures(self) -> bool:
        limit = self.spec.max_failed_trial_count
        return limit > 0 and self.failed >= limit

    def _resume(self) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
        """Settle what a previous supervisor of this job left in the study (see the module
        docstring); returns the highest trial id handed out and the trials to run again."""
        import optuna

        prior = {t.trial_id: t for t in self.job_run.job.read().record.trials}
        reruns: list[tuple[str, dict[str, Any]]] = []
        unsettled = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        for frozen in unsettled:
            trial_id = frozen.user_attrs.get(VERTEX_TRIAL_ID)
            record = prior.get(trial_id) if isinstance(trial_id, str) else None
            if record is not None and record.state in _FINISHED:
                value = record.final_metrics.get(self.metric.metric_id)
                if record.early_stopped:
                    _tell(self.study, frozen.number, state="PRUNED")
                elif record.state == "SUCCEEDED" and value is not None:
                    _tell(self.study, frozen.number, value=value)
                else:
                    _tell(self.study, frozen.number, state="FAIL")
                continue
            _tell(self.study, frozen.number, state="FAIL")
            if record is not None:
                reruns.append((record.trial_id, dict(frozen.params)))
        self.trials = {k: t for k, t in prior.items() if t.state in _FINISHED}
        self.failed = sum(t.state == "INFEASIBLE" for t in self.trials.values())
        self.early_stopped = [k for k, t in self.trials.items() if t.early_stopped]
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
        if fixed_params is not None:
            # The interrupted attempt's parameters; its files are kept beside for a look.
            self.study.enqueue_trial(fixed_params, skip_if_exists=False)
            attempt = self.job_run.job.path / "trials" / trial_id
            if attempt.exists():
                kept = attempt.with_name(f"{trial_id}.interrupted")
                shutil.rmtree(kept, ignore_errors=True)
                attempt.rename(kept)
        optuna_trial = self.study.ask()
        optuna_trial.set_user_attr(VERTEX_TRIAL_ID, trial_id)
        params = suggest_parameters(
            optuna_trial,
            self.spec.study.parameters,
            grid=self.spec.study.algorithm is SearchAlgorithm.GRID,
        )
        run = self.job_run.cluster(
            self.spec.trial_job,
            self.job_body,
            self.job_run.job.path / "trials" / trial_id,
            trial_id=trial_id,
            extra_args=parameter_args(params),
        )
        record = TrialRecord(
            trial_id=trial_id,
            state="ACTIVE",
            # As Vertex reports them (struct Values): every number a double.
            parameters={k: v if isinstance(v, str) else float(v) for k, v in params},
            start_time=now_rfc3339(),
        )
        self.trials[trial_id] = record
        active = _ActiveTrial(record=record, optuna_trial=optuna_trial, run=run)
        self.active[trial_id] = active
        run.prepare()
        run.start()
        self.save()

    def _poll(self, active: _ActiveTrial) -> bool:
        """Advance one trial; True when its record changed."""
        run = active.run
        trial_id = active.record.trial_id
        self._read_new_measurements(active)
        if (
            self.spec.study.early_stopping is not EarlyStoppingKind.NONE
            and run.outcome is None
            and active.measurements
            and active.optuna_trial.should_prune()
        ):
            _log.info("trial %s stopped early by median stopping", trial_id)
            run.terminate()
            self.early_stopped.append(trial_id)
            value = final_metric(
                active.measurements, self.metric.goal, self.spec.study.measurement_selection
            )
            self._close(active, "SUCCEEDED", value, early_stopped=True)
            _tell(self.study, active.optuna_trial, state="PRUNED")
            return True
        if run.outcome is None and run.timed_out():
            run.fail(
                f"trial {trial_id} ran longer than the timeout of {run.spec.timeout_seconds:g}s"
            )
        outcome = run.poll()
        if outcome is None:
            return False
        self._read_new_measurements(active)
        value = final_metric(
            active.measurements, self.metric.goal, self.spec.study.measurement_selection
        )
        if outcome is ClusterOutcome.SUCCEEDED and value is not None:
            self._close(active, "SUCCEEDED", value)
            _tell(self.study, active.optuna_trial, value=value)
        else:
            self.failed += 1
            self.last_failure = run.error_message or (
                f"trial {trial_id} reported no {self.metric.metric_id!r} metric through "
                f"hypertune (file {run.chief_metric_file}); last log lines:\n"
                f"{log_tail(run.replicas[0].log_path)}"
            )
            self._close(active, "INFEASIBLE", None, reason=self.last_failure)
            _tell(self.study, active.optuna_trial, state="FAIL")
        return True

    def _read_new_measurements(self, active: _ActiveTrial) -> None:
        measurements = read_measurements(active.run.chief_metric_file, self.metric.metric_id)
        if len(measurements) <= len(active.measurements):
            return
        active.measurements = measurements
        if self.spec.study.early_stopping is EarlyStoppingKind.NONE:
            return
        for m in measurements:
            if m.step not in active.reported_steps:
                active.reported_steps.add(m.step)
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
        self.finished_runs.append(active.run)
        del self.active[trial_id]
        # Recorded before Optuna hears of it: a supervisor that dies in between leaves a
        # result that the next one tells Optuna, never a result that is lost.
        self.save()

    def stop_all(self) -> None:
        for active in list(self.active.values()):
            active.run.terminate()
            self.trials[active.record.trial_id] = replace(
                active.record, state="STOPPING", end_time=now_rfc3339()
            )
            self.finished_runs.append(active.run)
        self.active.clear()

    def save(self, final: bool = False) -> None:
        trials = tuple(sorted(self.trials.values(), key=lambda t: int(t.trial_id)))
        best = best_trial(trials, self.metric.metric_id, self.metric.maximize)
        model_dir = None
        if best is not None and self.job_run.output_dir:
            # Vertex reports a tuning job's model as the best trial's AIP_MODEL_DIR.
            model_dir = f"{self.job_run.output_dir.rstrip('/')}/{best.trial_id}/model"
        plot = None
        self.saved_final = self.saved_final or final
        if final and any(t.final_metrics for t in trials):
            plot = str(
                plot_study(
                    Path(self.job_run.output_dir or self.job_run.job.path) / STUDY_PLOT,
                    trials=trials,
                    metric_id=self.metric.metric_id,
                    parameters=self.spec.study.parameters,
                    best=best,
                    early_stopped=self.early_stopped,
                )
            )
        runs = [a.run for a in self.active.values()]
        with self.job_run.job.update() as current:
            current.record = replace(
                current.record, trials=trials, best_trial=best, model_dir=model_dir
            )
            current.replicas = [s for run in runs for s in run.statuses()]
            if plot:
                current.plot = plot


def _tell(
    study: optuna.Study,
    trial: optuna.Trial | int,
    value: float | None = None,
    state: str = "COMPLETE",
) -> None:
    import optuna

    try:
        if value is not None:
            study.tell(trial, value)
        else:
            study.tell(trial, state=optuna.trial.TrialState[state])
    except RuntimeError as exc:
        # GridSampler calls study.stop() once the grid is exhausted, which works only
        # inside optimize(); optuna stores the trial before that (in a finally), and we
        # stop at the grid size ourselves, so this is safe to pass over.
        if "Study.stop" not in str(exc):
            raise
        _log.debug("grid exhausted: %s", exc)


def _read_seed(job_path: Path) -> int | None:
    seed_file = job_path / "seed"
    if not seed_file.exists():
        return None
    text = seed_file.read_text().strip()
    return int(text) if text else None


__all__ = ["STUDY_PLOT", "VERTEX_TRIAL_ID", "Tuner"]
