"""A HyperparameterTuningJob's study on this machine: Vertex study semantics on Optuna.

Vertex algorithm -> Optuna sampler: unset (Vertex's Bayesian search) -> TPE, GRID_SEARCH ->
grid, RANDOM_SEARCH -> random; all seeded, so a local study is reproducible. The study's
first metric is its objective; any automated stopping spec is Optuna's median pruner.

``Tuner`` runs the study through Optuna's own ``optimize``: ``parallelTrialCount`` trials
at a time (its threads), each trial one cluster of processes, until ``maxTrialCount`` (or
the grid is exhausted, or ``maxFailedTrialCount`` trials failed). A trial reads its
hypertune reports, stops early when the study asks for automated stopping, and keeps the
job's trial table and best trial up to date.

The study lives in a journal file in the job directory (``STUDY_JOURNAL``), so a
supervisor started again for a job whose supervisor died resumes it:

- trials the job's state records as finished keep their results and count towards
  ``maxTrialCount``; a trial finished and recorded but not yet told to Optuna is told now;
- trials that were running are re-run under the same trial id with the same parameters
  (their Optuna trial is marked FAIL, a new one is enqueued with those parameters): their
  processes were stopped with the supervisor, and the trainer resumes them from their
  checkpoints. The interrupted attempt's files move to ``trials/<id>.interrupted``;
- a trial Optuna handed out but the job never recorded (the supervisor died between the
  two) is marked FAIL and its trial id is given to the next new trial.

A trial's result is written to the job's state before Optuna is told of it, which is what
makes the job's state the record of what finished.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import optuna
from google.cloud.aiplatform_v1 import HyperparameterTuningJob, StudySpec, Trial
from optuna.storages.journal import JournalFileBackend

from vertex_training.jobs.backends.local._store import now_rfc3339
from vertex_training.jobs.backends.local.cluster import POLL_SECONDS, ClusterRun, log_tail
from vertex_training.jobs.backends.local.job_run import JobCancelledError, JobRun
from vertex_training.jobs.records import JobState, TrialRecord, best_trial

_log = logging.getLogger(__name__)

Algorithm = StudySpec.Algorithm
Goal = StudySpec.MetricSpec.GoalType
Selection = StudySpec.MeasurementSelectionType
Scale = StudySpec.ParameterSpec.ScaleType
ParameterSpec = StudySpec.ParameterSpec
ParamValue = float | int | str

MEDIAN_STARTUP_TRIALS = 2
"""Completed trials needed before median stopping may stop another one."""

STUDY_JOURNAL = "optuna-journal.log"
"""A tuning job's Optuna study, in the job directory: an append-only journal that outlives
the supervisor, so a restarted supervisor resumes the study instead of starting over, and
``optuna-dashboard <job dir>/optuna-journal.log`` can open it."""


@dataclass(frozen=True)
class Measurement:
    step: int
    value: float


def read_measurements(path: Path, metric_id: str) -> list[Measurement]:
    """The hypertune lines for ``metric_id`` in a metrics file, in the order written.

    hypertune rewrites the whole file at each report, so a reader may catch it half
    written: an undecodable line is skipped (it is complete at the next read).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out: list[Measurement] = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            value = float(entry[metric_id])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if not math.isnan(value):
            out.append(Measurement(int(float(entry.get("global_step", 0) or 0)), value))
    return out


def final_metric(measurements: Sequence[Measurement], goal: int, selection: int) -> float | None:
    """The trial's final value: its last report, or (unset, as on Vertex) its best."""
    if not measurements:
        return None
    if selection == Selection.LAST_MEASUREMENT:
        return measurements[-1].value
    values = [m.value for m in measurements]
    return max(values) if goal == Goal.MAXIMIZE else min(values)


def _flat_parameters(parameters: Sequence[ParameterSpec]) -> list[ParameterSpec]:
    out: list[ParameterSpec] = []
    for p in parameters:
        out.append(p)
        out.extend(_flat_parameters([c.parameter_spec for c in p.conditional_parameter_specs]))
    return out


def _kind(p: ParameterSpec) -> str:
    """Which value spec the parameter has: ``double_value_spec``, ``integer_value_spec``,
    ``categorical_value_spec`` or ``discrete_value_spec``."""
    return str(ParameterSpec.pb(p).WhichOneof("parameter_value_spec"))


def _grid_values(p: ParameterSpec) -> list[ParamValue]:
    if _kind(p) == "integer_value_spec":
        return list(range(p.integer_value_spec.min_value, p.integer_value_spec.max_value + 1))
    # The provider's check refuses a double parameter in a grid study.
    return list(getattr(p, _kind(p)).values)


def grid_search_space(study: StudySpec) -> dict[str, list[ParamValue]]:
    return {p.parameter_id: _grid_values(p) for p in _flat_parameters(study.parameters)}


def grid_size(study: StudySpec) -> int:
    return math.prod(len(v) for v in grid_search_space(study).values())


def journal_storage(path: Path) -> optuna.storages.JournalStorage:
    """The Optuna storage kept in the journal file ``path`` (created when absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def create_study(study: StudySpec, seed: int | None, *, storage: Path, name: str) -> optuna.Study:
    """The Optuna study of ``study``, loaded from (else created in) the journal file
    ``storage`` under ``name``, with its trials so far."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler: optuna.samplers.BaseSampler
    if study.algorithm == Algorithm.GRID_SEARCH:
        sampler = optuna.samplers.GridSampler(grid_search_space(study), seed=seed)  # type: ignore[arg-type]
    elif study.algorithm == Algorithm.RANDOM_SEARCH:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        # constant_liar keeps parallel trials from being suggested the same point.
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    if len(study.metrics) > 1:
        _log.warning(
            "the local backend optimises the first metric (%s) only", study.metrics[0].metric_id
        )
    return optuna.create_study(
        direction="maximize" if study.metrics[0].goal == Goal.MAXIMIZE else "minimize",
        sampler=sampler,
        pruner=optuna.pruners.MedianPruner(n_startup_trials=MEDIAN_STARTUP_TRIALS)
        if stops_early(study)
        else optuna.pruners.NopPruner(),
        storage=journal_storage(storage),
        study_name=name,
        load_if_exists=True,
    )


def stops_early(study: StudySpec) -> bool:
    """The study sets an automated stopping spec (each is median stopping here)."""
    return StudySpec.pb(study).WhichOneof("automated_stopping_spec") is not None


def _suggest(trial: optuna.Trial, p: ParameterSpec, grid: bool) -> ParamValue:
    name, kind = p.parameter_id, _kind(p)
    if kind == "categorical_value_spec":
        return trial.suggest_categorical(name, list(p.categorical_value_spec.values))
    if kind == "discrete_value_spec":
        value = trial.suggest_categorical(name, list(p.discrete_value_spec.values))
        return int(value) if float(value).is_integer() else float(value)
    spec = getattr(p, kind)
    low, high = spec.min_value, spec.max_value
    if p.scale_type == Scale.UNIT_REVERSE_LOG_SCALE and not grid:
        # Reverse log: resolution is finest near max_value; the mirror image of a log
        # scale, sampled as log-uniform y and reported as min + max - y.
        mirrored = trial.suggest_float(f"{name}__mirrored", low, high, log=True)
        value = min(high, max(low, low + high - mirrored))
        return round(value) if kind == "integer_value_spec" else value
    log = p.scale_type == Scale.UNIT_LOG_SCALE and not grid
    if kind == "integer_value_spec":
        return trial.suggest_int(name, low, high, log=log)
    return trial.suggest_float(name, low, high, log=log)


def _parent_values(condition: ParameterSpec.ConditionalParameterSpec) -> list[ParamValue]:
    which = ParameterSpec.ConditionalParameterSpec.pb(condition).WhichOneof(
        "parent_value_condition"
    )
    return list(getattr(condition, which).values) if which else []


def suggest_parameters(
    trial: optuna.Trial, parameters: Sequence[ParameterSpec], grid: bool
) -> list[tuple[str, ParamValue]]:
    """Sample every active parameter, parents before the children they enable."""
    out: list[tuple[str, ParamValue]] = []
    for p in parameters:
        value = _suggest(trial, p, grid)
        out.append((p.parameter_id, value))
        for child in p.conditional_parameter_specs:
            if any(_same(value, wanted) for wanted in _parent_values(child)):
                out.extend(suggest_parameters(trial, [child.parameter_spec], grid))
    return out


def _same(value: ParamValue, wanted: ParamValue) -> bool:
    if isinstance(value, str) or isinstance(wanted, str):
        return str(value) == str(wanted)
    return float(value) == float(wanted)


def parameter_args(parameters: Sequence[tuple[str, ParamValue]]) -> tuple[str, ...]:
    """Vertex hands a trial's values to the container as ``--<parameter_id>=<value>``."""
    return tuple(
        f"--{name}={int(v) if isinstance(v, float) and v.is_integer() else v}"
        for name, v in parameters
    )


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


class _TrialFailedError(Exception):
    """The trial failed or reported no metric: INFEASIBLE, and the study goes on."""


class _HaltError(Exception):
    """The study ends now (too many trials failed, or a trial met an error): every running
    trial stops."""


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
        self.lock = threading.RLock()
        """Held while the trials' threads change what they share, and while it is saved."""
        self.trials: dict[str, TrialRecord] = {}
        self.runs: dict[str, ClusterRun] = {}
        self.started = 0
        """The highest trial id handed out."""
        self.failed = 0
        self.last_failure: str | None = None
        self.failure: str | None = None
        """Why the study ends now, when a trial ended it."""

    def run(self) -> None:
        try:
            failure = self._run()
        finally:
            self.save()
        if failure is None:
            self.job_run.finish(JobState.SUCCEEDED)
        else:
            self.job_run.finish(JobState.FAILED, error_message=failure)

    def _run(self) -> str | None:
        """Run the study; why it failed, None when it succeeded."""
        reruns = self._resume()
        self.job_run.set_state(
            JobState.RUNNING, start_time=self.job_run.job.read().record.start_time or now_rfc3339()
        )
        with contextlib.suppress(_HaltError):
            self.study.optimize(
                self._objective,
                n_trials=reruns + max(0, self.max_trials - self.started),
                # The provider's check refuses an unset count; never a study that runs nothing.
                n_jobs=max(1, self.job.parallel_trial_count),
                catch=(_TrialFailedError,),
            )
        # With several threads, optimize does not raise what its last trials raised.
        self.job_run.check_cancel()
        if self.failure is not None:
            return self.failure
        if best_trial(list(self.trials.values()), self.metric.metric_id, self.maximize) is None:
            return f"no trial succeeded with a metric; last failure: {self.last_failure}"
        return None

    def _resume(self) -> int:
        """Settle what a previous supervisor of this job left in the study (see the module
        docstring) and enqueue the trials to run again; how many they are."""
        prior = {t.trial_id: t for t in self.job_run.job.read().record.trials}
        reruns: dict[str, dict[str, object]] = {}
        unsettled = self.study.get_trials(deepcopy=False, states=(_TrialState.RUNNING,))
        for frozen in unsettled:
            record = prior.get(frozen.user_attrs.get(VERTEX_TRIAL_ID, ""))
            value = record.final_metrics.get(self.metric.metric_id) if record else None
            if record is None or record.state not in _FINISHED:
                _tell(self.study, frozen.number, state=_TrialState.FAIL)
                if record is not None:
                    reruns[record.trial_id] = dict(frozen.params)
            elif record.early_stopped:
                _tell(self.study, frozen.number, state=_TrialState.PRUNED)
            elif record.state == _SUCCEEDED and value is not None:
                _tell(self.study, frozen.number, value)
            else:
                _tell(self.study, frozen.number, state=_TrialState.FAIL)
        self.trials = {k: t for k, t in prior.items() if t.state in _FINISHED}
        self.failed = sum(t.state == _INFEASIBLE for t in self.trials.values())
        self.started = max((int(k) for k in prior), default=0)
        if unsettled or self.trials:
            _log.info(
                "resuming the study: %d trials finished, %d to run again (%s)",
                len(self.trials),
                len(reruns),
                ", ".join(reruns) or "none",
            )
        for trial_id, params in sorted(reruns.items(), key=lambda item: int(item[0])):
            # The interrupted attempt's parameters; its files are kept beside for a look.
            self.study.enqueue_trial(params, user_attrs={VERTEX_TRIAL_ID: trial_id})
            trial_dir = self.job_run.job.path / "trials" / trial_id
            if trial_dir.exists():
                kept = trial_dir.with_name(f"{trial_id}.interrupted")
                shutil.rmtree(kept, ignore_errors=True)
                trial_dir.rename(kept)
        return len(reruns)

    def _objective(self, trial: optuna.Trial) -> float:
        try:
            return self._run_trial(trial)
        except (_TrialFailedError, _HaltError, optuna.TrialPruned, JobCancelledError):
            raise
        except Exception as error:
            _log.exception("trial %s met an error", trial.user_attrs.get(VERTEX_TRIAL_ID))
            self.failure = self.failure or f"local supervisor error: {error!r}"
            raise

    def _run_trial(self, trial: optuna.Trial) -> float:
        """One trial, from its parameters to its result (its value; raised otherwise)."""
        with self.lock:
            trial_id = trial.user_attrs.get(VERTEX_TRIAL_ID)
            if trial_id is None:
                self.started += 1
                trial_id = str(self.started)
                trial.set_user_attr(VERTEX_TRIAL_ID, trial_id)
            params = suggest_parameters(trial, self.job.study_spec.parameters, self.grid)
            run = self.job_run.cluster(
                self.job.trial_job_spec,
                self.job_run.job.path / "trials" / trial_id,
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
            self.runs[trial_id] = run
            run.start()  # under the lock: the job's GPUs are handed out one trial at a time
            self.save()
        try:
            return self._follow(trial, record, run)
        finally:
            with self.lock:
                run.terminate()
                del self.runs[trial_id]
                if self.trials[trial_id].state == _ACTIVE:
                    # Cancelled, or the study ended: stopped, with what it found.
                    self.trials[trial_id] = replace(record, state=_STOPPING, end_time=now_rfc3339())
                self.save()

    def _follow(self, trial: optuna.Trial, record: TrialRecord, run: ClusterRun) -> float:
        """Poll the trial's cluster and its reports until it ends; its value, or raised."""
        measurements: list[Measurement] = []
        while True:
            succeeded = run.poll()
            new = read_measurements(run.chief_metric_file, self.metric.metric_id)
            # Shorter than before: the file caught half rewritten (hypertune rewrites it whole).
            if len(new) > len(measurements):
                if self.stops_early:
                    for m in new[len(measurements) :]:
                        trial.report(m.value, m.step)
                measurements = new
            if succeeded is not None:
                break
            self.job_run.check_cancel()
            if self.failure is not None:
                raise _HaltError
            if self.stops_early and measurements and trial.should_prune():
                _log.info("trial %s stopped early by median stopping", record.trial_id)
                run.terminate()
                self._close(record, _SUCCEEDED, self._final(measurements), early_stopped=True)
                raise optuna.TrialPruned
            time.sleep(POLL_SECONDS)
        value = self._final(measurements)
        if succeeded and value is not None:
            self._close(record, _SUCCEEDED, value)
            return value
        reason = run.error_message or (
            f"trial {record.trial_id} reported no {self.metric.metric_id!r} metric "
            f"through hypertune (file {run.chief_metric_file}); last log lines:\n"
            f"{log_tail(run.replicas[0].log_path)}"
        )
        with self.lock:
            self.failed += 1
            self.last_failure = reason
            self._close(record, _INFEASIBLE, None, reason=reason)
            limit = self.job.max_failed_trial_count
            if limit > 0 and self.failed >= limit:
                self.failure = (
                    f"{self.failed} trials failed (max_failed_trial_count {limit}); "
                    f"last failure: {reason}"
                )
                raise _HaltError
        raise _TrialFailedError(reason)

    def _final(self, measurements: list[Measurement]) -> float | None:
        selection = self.job.study_spec.measurement_selection_type
        return final_metric(measurements, self.metric.goal, selection)

    def _close(
        self,
        record: TrialRecord,
        state: str,
        value: float | None,
        *,
        early_stopped: bool = False,
        reason: str | None = None,
    ) -> None:
        # Recorded before Optuna hears of it: a supervisor that dies in between leaves a
        # result that the next one tells Optuna, never a result that is lost.
        with self.lock:
            self.trials[record.trial_id] = replace(
                record,
                state=state,
                final_metrics={} if value is None else {self.metric.metric_id: value},
                early_stopped=early_stopped,
                infeasible_reason=reason,
                end_time=now_rfc3339(),
            )
            self.save()

    def save(self) -> None:
        with self.lock:
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
                current.replicas = [s for run in self.runs.values() for s in run.statuses()]


def _tell(
    study: optuna.Study,
    number: int,
    value: float | None = None,
    state: _TrialState = _TrialState.COMPLETE,
) -> None:
    """Settle a trial a previous supervisor left RUNNING."""
    try:
        study.tell(number, value, state=state)
    except RuntimeError as exc:
        # GridSampler calls study.stop() once the grid is exhausted, which works only
        # inside optimize(); optuna stores the trial before that (in a finally), and we
        # stop at the grid size ourselves, so this is safe to pass over.
        if "Study.stop" not in str(exc):
            raise
        _log.debug("grid exhausted: %s", exc)


__all__ = ["STUDY_JOURNAL", "VERTEX_TRIAL_ID", "Tuner"]
