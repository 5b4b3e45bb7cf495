"""The detached process that runs one local job: ``python -m ...supervisor <job dir>``.

Started by ``LocalBackend.submit`` in a new session, so it outlives the process that
submitted it (a Pulumi provider process ends with its deployment). It alone moves the job
through PENDING -> RUNNING -> SUCCEEDED / FAILED, and to CANCELLED when ``cancel`` asks
(SIGTERM or the cancel file). Every replica runs in its own process group, which is what
cancel, failure and success stop.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from vertex_training.jobs.backends.local._store import JobDir, now_rfc3339
from vertex_training.jobs.backends.local.cluster import ClusterOutcome, ClusterRun, log_tail
from vertex_training.jobs.backends.local.environment import (
    GpuAllocator,
    detect_gpus,
    job_spec_body,
)
from vertex_training.jobs.backends.local.study import (
    Measurement,
    create_study,
    final_metric,
    grid_size,
    parameter_args,
    plot_study,
    read_measurements,
    suggest_parameters,
)
from vertex_training.jobs.model import JobKind, JobState, TrialRecord, best_trial
from vertex_training.jobs.view import (
    CustomJobView,
    EarlyStopping,
    SearchAlgorithm,
    TuningJobView,
    view_of,
)

if TYPE_CHECKING:
    import optuna

_log = logging.getLogger("vertex_training.jobs.backends.local.supervisor")

POLL_SECONDS = 0.05
STUDY_PLOT = "study.png"


class _CancelledError(Exception):
    pass


class Supervisor:
    def __init__(self, job_dir: Path) -> None:
        self.job = JobDir(job_dir)
        self.cancel_requested = False
        state = self.job.read()
        self.job_id = state.record.job_id
        self.output_dir = state.output_dir or str(job_dir / "output")
        self.gpus = GpuAllocator(detect_gpus())

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.cancel_requested = True

    def check_cancel(self) -> None:
        if self.cancel_requested or self.job.cancel_file.exists():
            raise _CancelledError

    def set_state(self, state: JobState, **changes: object) -> None:
        with self.job.update() as current:
            if current.record.state is JobState.CANCELLING and state is not JobState.CANCELLED:
                # A cancel arrived between our polls: do not overwrite it.
                self.cancel_requested = True
                return
            current.record = replace(current.record, state=state, **changes)  # type: ignore[arg-type]

    def run(self) -> int:
        try:
            body = self.job.read_body()
            view = view_of(self.job.read().record.kind, body)
            self.check_cancel()
            self.set_state(JobState.PENDING)
            if isinstance(view, CustomJobView):
                self.run_custom_job(view, body)
            else:
                self.run_tuning_job(view, body)
        except _CancelledError:
            self.finish(JobState.CANCELLED, error_message="CANCELED: the job was cancelled")
        except Exception as exc:
            _log.exception("supervisor failed")
            self.finish(JobState.FAILED, error_message=f"local supervisor error: {exc!r}")
            return 1
        return 0

    def finish(self, state: JobState, **changes: object) -> None:
        with self.job.update() as current:
            current.record = replace(
                current.record,
                state=state,
                end_time=now_rfc3339(),
                **changes,  # type: ignore[arg-type]
            )

    def save_replicas(self, runs: list[ClusterRun]) -> None:
        statuses = [s for run in runs for s in run.statuses()]
        with self.job.update() as current:
            current.replicas = statuses

    # -- CustomJob -------------------------------------------------------------------

    def run_custom_job(self, view: CustomJobView, body: dict[str, Any]) -> None:
        spec = view.job
        run = ClusterRun(
            spec=spec,
            job_body=job_spec_body(JobKind.CUSTOM_JOB, body),
            job_id=self.job_id,
            run_dir=self.job.path,
            base_output_dir=self.output_dir,
            gpus=self.gpus,
        )
        run.prepare()
        try:
            run.start()
            self.set_state(JobState.RUNNING, start_time=now_rfc3339(), model_dir=run.model_dir)
            self.save_replicas([run])
            seen = [s.state for s in run.statuses()]
            while True:
                self.check_cancel()
                if run.timed_out():
                    run.fail(f"the job ran longer than its timeout of {spec.timeout_seconds}s")
                outcome = run.poll()
                now_states = [s.state for s in run.statuses()]
                if now_states != seen:
                    seen = now_states
                    self.save_replicas([run])
                if outcome is not None:
                    break
                time.sleep(POLL_SECONDS)
        finally:
            run.terminate()
            self.save_replicas([run])
        if outcome is ClusterOutcome.SUCCEEDED:
            self.finish(JobState.SUCCEEDED)
        else:
            self.finish(JobState.FAILED, error_message=run.error_message)

    # -- HyperparameterTuningJob -----------------------------------------------------

    def run_tuning_job(self, spec: TuningJobView, body: dict[str, Any]) -> None:
        tuner = _Tuner(self, spec, job_spec_body(JobKind.HYPERPARAMETER_TUNING_JOB, body))
        try:
            tuner.run()
        finally:
            # Cancelled or crashed: stop the trials, keep what they found.
            if not tuner.saved_final:
                tuner.stop_all()
                tuner.save(final=True)


@dataclass
class _ActiveTrial:
    record: TrialRecord
    optuna_trial: optuna.Trial
    run: ClusterRun
    reported_steps: set[int] = field(default_factory=set)
    measurements: list[Measurement] = field(default_factory=list)


class _Tuner:
    """Runs trials ``parallel_trial_count`` at a time until ``max_trial_count``."""

    def __init__(self, sup: Supervisor, spec: TuningJobView, job_body: dict[str, Any]) -> None:
        self.sup = sup
        self.spec = spec
        self.job_body = job_body
        self.metric = spec.study.metrics[0]
        self.study = create_study(spec.study, seed=_read_seed(sup.job.path))
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
        self.sup.set_state(JobState.RUNNING, start_time=now_rfc3339())
        started = 0
        while True:
            self.sup.check_cancel()
            if self._too_many_failures():
                self.stop_all()
                self.save(final=True)
                self.sup.finish(
                    JobState.FAILED,
                    error_message=(
                        f"{self.failed} trials failed (max_failed_trial_count "
                        f"{self.spec.max_failed_trial_count}); last failure: {self.last_failure}"
                    ),
                )
                return
            while len(self.active) < self.spec.parallel_trial_count and started < self.max_trials:
                started += 1
                self._launch(str(started))
            changed = False
            for trial_id in list(self.active):
                changed |= self._poll(self.active[trial_id])
            if changed:
                self.save()
            if not self.active and started >= self.max_trials:
                break
            time.sleep(POLL_SECONDS)
        self.save(final=True)
        best = best_trial(list(self.trials.values()), self.metric.metric_id, self.metric.maximize)
        if best is None:
            self.sup.finish(
                JobState.FAILED,
                error_message=(
                    f"no trial succeeded with a metric; last failure: {self.last_failure}"
                ),
            )
        else:
            self.sup.finish(JobState.SUCCEEDED)

    def _too_many_failures(self) -> bool:
        limit = self.spec.max_failed_trial_count
        return limit > 0 and self.failed >= limit

    def _launch(self, trial_id: str) -> None:
        optuna_trial = self.study.ask()
        params = suggest_parameters(
            optuna_trial,
            self.spec.study.parameters,
            grid=self.spec.study.algorithm is SearchAlgorithm.GRID,
        )
        run = ClusterRun(
            spec=self.spec.trial_job,
            job_body=self.job_body,
            job_id=self.sup.job_id,
            run_dir=self.sup.job.path / "trials" / trial_id,
            base_output_dir=self.sup.output_dir,
            gpus=self.sup.gpus,
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
            self.spec.study.early_stopping is not EarlyStopping.NONE
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
            _tell(self.study, active.optuna_trial, state="PRUNED")
            self._close(active, "SUCCEEDED", value, early_stopped=True)
            return True
        if run.outcome is None and run.timed_out():
            run.fail(f"trial {trial_id} ran longer than the timeout of {run.spec.timeout_seconds}s")
        outcome = run.poll()
        if outcome is None:
            return False
        self._read_new_measurements(active)
        value = final_metric(
            active.measurements, self.metric.goal, self.spec.study.measurement_selection
        )
        if outcome is ClusterOutcome.SUCCEEDED and value is not None:
            _tell(self.study, active.optuna_trial, value=value)
            self._close(active, "SUCCEEDED", value)
        else:
            self.failed += 1
            self.last_failure = run.error_message or (
                f"trial {trial_id} reported no {self.metric.metric_id!r} metric through "
                f"hypertune (file {run.chief_metric_file}); last log lines:\n"
                f"{log_tail(run.replicas[0].log_path)}"
            )
            _tell(self.study, active.optuna_trial, state="FAIL")
            self._close(active, "INFEASIBLE", None, reason=self.last_failure)
        return True

    def _read_new_measurements(self, active: _ActiveTrial) -> None:
        measurements = read_measurements(active.run.chief_metric_file, self.metric.metric_id)
        if len(measurements) <= len(active.measurements):
            return
        active.measurements = measurements
        if self.spec.study.early_stopping is EarlyStopping.NONE:
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
        if best is not None:
            # Vertex reports a tuning job's model as the best trial's AIP_MODEL_DIR.
            model_dir = f"{self.sup.output_dir.rstrip('/')}/{best.trial_id}/model"
        plot = None
        self.saved_final = self.saved_final or final
        if final and any(t.final_metrics for t in trials):
            plot = str(
                plot_study(
                    Path(self.sup.output_dir) / STUDY_PLOT,
                    trials=trials,
                    metric_id=self.metric.metric_id,
                    parameters=self.spec.study.parameters,
                    best=best,
                    early_stopped=self.early_stopped,
                )
            )
        runs = [a.run for a in self.active.values()]
        with self.sup.job.update() as current:
            current.record = replace(
                current.record, trials=trials, best_trial=best, model_dir=model_dir
            )
            current.replicas = [s for run in runs for s in run.statuses()]
            if plot:
                current.plot = plot


def _tell(
    study: optuna.Study, trial: optuna.Trial, value: float | None = None, state: str = "COMPLETE"
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


def _install_handlers(sup: Supervisor) -> None:
    signal.signal(signal.SIGTERM, sup.on_sigterm)
    signal.signal(signal.SIGINT, sup.on_sigterm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("job_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    sup = Supervisor(args.job_dir)
    _install_handlers(sup)
    return sup.run()


if __name__ == "__main__":
    sys.exit(main())
