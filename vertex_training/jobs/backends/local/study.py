"""Vertex study semantics on Optuna: samplers, scales, conditional parameters, metrics.

Vertex algorithm -> Optuna sampler: BAYESIAN (the service default) -> TPE, GRID -> grid,
RANDOM -> random; all seeded, so a local study is reproducible.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_training.jobs.backends.local.environment import LocalSpecError
from vertex_training.jobs.records import TrialRecord
from vertex_training.jobs.view import (
    CategoricalParameterSpec,
    DiscreteParameterSpec,
    DoubleParameterSpec,
    EarlyStoppingKind,
    IntegerParameterSpec,
    MeasurementSelection,
    MetricGoal,
    ParameterSpec,
    ScaleType,
    SearchAlgorithm,
    StudySpec,
)

if TYPE_CHECKING:
    import optuna

_log = logging.getLogger(__name__)

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
        if math.isnan(value):
            continue
        out.append(Measurement(step=int(float(entry.get("global_step", 0) or 0)), value=value))
    return out


def final_metric(
    measurements: Sequence[Measurement], goal: MetricGoal, selection: MeasurementSelection
) -> float | None:
    if not measurements:
        return None
    if selection is MeasurementSelection.LAST:
        return measurements[-1].value
    values = [m.value for m in measurements]
    return max(values) if goal is MetricGoal.MAXIMIZE else min(values)


def _flat_parameters(parameters: Sequence[ParameterSpec]) -> list[ParameterSpec]:
    out: list[ParameterSpec] = []
    for p in parameters:
        out.append(p)
        out.extend(_flat_parameters([c.parameter for c in p.conditional]))
    return out


def _grid_values(p: ParameterSpec) -> list[ParamValue]:
    if isinstance(p, CategoricalParameterSpec):
        return list(p.values)
    if isinstance(p, DiscreteParameterSpec):
        return list(p.values)
    if isinstance(p, IntegerParameterSpec):
        return list(range(p.min_value, p.max_value + 1))
    raise LocalSpecError(
        f"parameter {p.parameter_id!r} is a double: grid search needs integer, discrete or "
        "categorical parameters"
    )


def grid_search_space(study: StudySpec) -> dict[str, list[ParamValue]]:
    return {p.parameter_id: _grid_values(p) for p in _flat_parameters(study.parameters)}


def grid_size(study: StudySpec) -> int:
    return math.prod(len(v) for v in grid_search_space(study).values())


def check_study(study: StudySpec) -> None:
    """What the local backend needs beyond the general spec validation."""
    if not study.metrics:
        raise LocalSpecError("study.metrics is empty: name the metric to optimise")
    ids = [p.parameter_id for p in _flat_parameters(study.parameters)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise LocalSpecError(f"study parameters {duplicates} are declared more than once")
    for p in _flat_parameters(study.parameters):
        if isinstance(p, DoubleParameterSpec | IntegerParameterSpec):
            if p.min_value > p.max_value:
                raise LocalSpecError(
                    f"parameter {p.parameter_id!r}: min_value {p.min_value} > max_value "
                    f"{p.max_value}"
                )
            if p.scale in (ScaleType.LOG, ScaleType.REVERSE_LOG) and p.min_value <= 0:
                raise LocalSpecError(
                    f"parameter {p.parameter_id!r}: {p.scale.value} scale needs min_value > 0, "
                    f"got {p.min_value}"
                )
        if isinstance(p, DiscreteParameterSpec | CategoricalParameterSpec) and not p.values:
            raise LocalSpecError(f"parameter {p.parameter_id!r} has no values")
    if study.algorithm is SearchAlgorithm.GRID:
        grid_search_space(study)
    if study.early_stopping not in (EarlyStoppingKind.NONE, EarlyStoppingKind.MEDIAN):
        _log.warning(
            "early stopping %s is approximated by median stopping locally",
            study.early_stopping.value,
        )


def make_sampler(study: StudySpec, seed: int | None) -> optuna.samplers.BaseSampler:
    import optuna

    if study.algorithm is SearchAlgorithm.GRID:
        return optuna.samplers.GridSampler(grid_search_space(study), seed=seed)  # type: ignore[arg-type]
    if study.algorithm is SearchAlgorithm.RANDOM:
        return optuna.samplers.RandomSampler(seed=seed)
    # constant_liar keeps parallel trials from being suggested the same point.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def make_pruner(study: StudySpec) -> optuna.pruners.BasePruner:
    import optuna

    if study.early_stopping is EarlyStoppingKind.NONE:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=MEDIAN_STARTUP_TRIALS, n_warmup_steps=0)


def journal_storage(path: Path) -> optuna.storages.JournalStorage:
    """The Optuna storage kept in the journal file ``path`` (created when absent)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def create_study(
    study: StudySpec,
    seed: int | None,
    *,
    storage: Path | None = None,
    study_name: str | None = None,
) -> optuna.Study:
    """An Optuna study for ``study``: in memory, or loaded from (else created in) the
    journal file ``storage`` under ``study_name``, with its trials so far."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    direction = (
        optuna.study.StudyDirection.MAXIMIZE
        if study.metrics[0].goal is MetricGoal.MAXIMIZE
        else optuna.study.StudyDirection.MINIMIZE
    )
    if len(study.metrics) > 1:
        _log.warning(
            "the local backend optimises the first metric (%s) only", study.metrics[0].metric_id
        )
    return optuna.create_study(
        direction=direction,
        sampler=make_sampler(study, seed),
        pruner=make_pruner(study),
        storage=journal_storage(storage) if storage is not None else None,
        study_name=study_name,
        load_if_exists=storage is not None,
    )


def _suggest(trial: optuna.Trial, p: ParameterSpec, grid: bool) -> ParamValue:
    name = p.parameter_id
    if isinstance(p, CategoricalParameterSpec):
        return trial.suggest_categorical(name, list(p.values))
    if isinstance(p, DiscreteParameterSpec):
        value = trial.suggest_categorical(name, list(p.values))
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(p, IntegerParameterSpec):
        if grid or p.scale is not ScaleType.REVERSE_LOG:
            return trial.suggest_int(
                name, p.min_value, p.max_value, log=p.scale is ScaleType.LOG and not grid
            )
        mirrored = trial.suggest_float(
            f"{name}__mirrored", float(p.min_value), float(p.max_value), log=True
        )
        return min(p.max_value, max(p.min_value, round(p.min_value + p.max_value - mirrored)))
    if p.scale is ScaleType.REVERSE_LOG:
        # Reverse log: resolution is finest near max_value; the mirror image of a log
        # scale, sampled as log-uniform y and reported as min + max - y.
        mirrored = trial.suggest_float(f"{name}__mirrored", p.min_value, p.max_value, log=True)
        return min(p.max_value, max(p.min_value, p.min_value + p.max_value - mirrored))
    return trial.suggest_float(name, p.min_value, p.max_value, log=p.scale is ScaleType.LOG)


def suggest_parameters(
    trial: optuna.Trial, parameters: Sequence[ParameterSpec], grid: bool
) -> list[tuple[str, ParamValue]]:
    """Sample every active parameter, parents before the children they enable."""
    out: list[tuple[str, ParamValue]] = []
    for p in parameters:
        value = _suggest(trial, p, grid)
        out.append((p.parameter_id, value))
        for child in p.conditional:
            if _matches(value, child.parent_values):
                out.extend(suggest_parameters(trial, [child.parameter], grid))
    return out


def _matches(value: ParamValue, parent_values: Sequence[ParamValue]) -> bool:
    for wanted in parent_values:
        if isinstance(value, str) or isinstance(wanted, str):
            if str(value) == str(wanted):
                return True
        elif float(value) == float(wanted):
            return True
    return False


def format_value(value: ParamValue) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parameter_args(parameters: Sequence[tuple[str, ParamValue]]) -> tuple[str, ...]:
    """Vertex hands a trial's values to the container as ``--<parameter_id>=<value>``."""
    return tuple(f"--{name}={format_value(value)}" for name, value in parameters)


def plot_study(
    path: Path,
    *,
    trials: Sequence[TrialRecord],
    metric_id: str,
    parameters: Sequence[ParameterSpec],
    best: TrialRecord | None,
    early_stopped: Sequence[str] = (),
) -> Path:
    """A PNG: the metric of every trial, then the metric against each parameter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flat = _flat_parameters(parameters)
    scored = [t for t in trials if metric_id in t.final_metrics]
    panels = 1 + len(flat)
    cols = min(panels, 3)
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.6 * rows), squeeze=False)
    flat_axes = list(itertools.chain.from_iterable(axes))
    ax = flat_axes[0]
    ax.plot(
        [int(t.trial_id) for t in scored],
        [t.final_metrics[metric_id] for t in scored],
        "o-",
        color="tab:blue",
    )
    stopped = [t for t in scored if t.trial_id in early_stopped]
    if stopped:
        ax.plot(
            [int(t.trial_id) for t in stopped],
            [t.final_metrics[metric_id] for t in stopped],
            "x",
            color="tab:orange",
            label="stopped early",
        )
        ax.legend()
    if best is not None and metric_id in best.final_metrics:
        ax.plot([int(best.trial_id)], [best.final_metrics[metric_id]], "*", ms=16, color="tab:red")
    ax.set_xlabel("trial")
    ax.set_ylabel(metric_id)
    ax.set_title(f"{metric_id} per trial")
    for ax, p in zip(flat_axes[1:], flat, strict=False):
        points = [
            (t.parameters[p.parameter_id], t.final_metrics[metric_id])
            for t in scored
            if p.parameter_id in t.parameters
        ]
        if isinstance(p, CategoricalParameterSpec):
            categories = list(p.values)
            xs: list[Any] = [categories.index(str(x)) for x, _ in points]
            ax.set_xticks(range(len(categories)), categories)
        else:
            xs = [float(x) for x, _ in points]
            if getattr(p, "scale", None) is ScaleType.LOG:
                ax.set_xscale("log")
        ax.scatter(xs, [y for _, y in points], color="tab:blue")
        ax.set_xlabel(p.parameter_id)
        ax.set_ylabel(metric_id)
        ax.set_title(f"{metric_id} vs {p.parameter_id}")
    for ax in flat_axes[panels:]:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
