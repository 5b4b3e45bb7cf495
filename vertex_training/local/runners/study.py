"""Vertex study semantics on Optuna: samplers, scales, conditional parameters, metrics.

Vertex algorithm -> Optuna sampler: unset (Vertex's Bayesian search) -> TPE, GRID_SEARCH ->
grid, RANDOM_SEARCH -> random; all seeded, so a local study is reproducible. The study's
first metric is its objective; any automated stopping spec is Optuna's median pruner."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import optuna
from google.cloud.aiplatform_v1 import StudySpec
from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

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


def _kind(p: ParameterSpec) -> str:
    """Which value spec the parameter has: ``double_value_spec``, ``integer_value_spec``,
    ``categorical_value_spec`` or ``discrete_value_spec``."""
    return str(ParameterSpec.pb(p).WhichOneof("parameter_value_spec"))


def _grid_values(p: ParameterSpec) -> list[ParamValue]:
    if _kind(p) == "integer_value_spec":
        return list(range(p.integer_value_spec.min_value, p.integer_value_spec.max_value + 1))
    # The provider's check refuses a double parameter in a grid study.
    return list(getattr(p, _kind(p)).values)


def grid_search_space(parameters: Sequence[ParameterSpec]) -> dict[str, list[ParamValue]]:
    """Every value of each parameter, conditional ones included, by parameter id."""
    space: dict[str, list[ParamValue]] = {}
    for p in parameters:
        space[p.parameter_id] = _grid_values(p)
        space.update(grid_search_space([c.parameter_spec for c in p.conditional_parameter_specs]))
    return space


def grid_size(study: StudySpec) -> int:
    return math.prod(len(v) for v in grid_search_space(study.parameters).values())


def journal_storage(path: Path) -> optuna.storages.JournalStorage:
    """The Optuna storage kept in the journal file ``path`` (created when absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def release_dead_writers_lock(path: Path) -> bool:
    """Remove the lock on the journal ``path`` that a writer killed mid-append left
    behind; False when there is none. Optuna's lock (``<path>.lock``, the default lock of
    ``JournalFileBackend``) names no holder, and a waiting writer forces it only after its
    grace period (30 s): call this only when every writer of the journal is known dead
    (a job's journal has one writer, its supervisor), else a live lock is broken."""
    try:
        JournalFileSymlinkLock(str(path)).release()
    except RuntimeError:  # Optuna's "did not possess lock": no lock file
        return False
    return True


def create_study(study: StudySpec, seed: int | None, *, storage: Path, name: str) -> optuna.Study:
    """The Optuna study of ``study``, loaded from (else created in) the journal file
    ``storage`` under ``name``, with its trials so far."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler: optuna.samplers.BaseSampler
    if study.algorithm == Algorithm.GRID_SEARCH:
        sampler = optuna.samplers.GridSampler(grid_search_space(study.parameters), seed=seed)  # type: ignore[arg-type]
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
