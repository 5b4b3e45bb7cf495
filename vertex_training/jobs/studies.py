"""The typed Args of a study: what a tuning job searches (``StudySpec``), its parameters,
metrics and early stopping, each built into its Vertex REST body and judged where it is
built by what it must be in any study."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from vertex_training._checks import Checked
from vertex_training.jobs.body import to_body, vertex
from vertex_training.jobs.refusals import judged_where_built
from vertex_training.jobs.rules.job import parameter_findings, study_findings
from vertex_training.jobs.view import (
    MeasurementSelection,
    MetricGoal,
    ParameterSpec,
    ScaleType,
    SearchAlgorithm,
    StudySpec,
)

DEFAULT_METRIC = "accuracy"
"""The metric this repo's trainer reports to the tuning service (cloudml-hypertune)."""


Scale = Literal["linear", "log", "reverse_log"]


def _api_name(kind: type[enum.StrEnum]) -> Callable[[str], str]:
    """An Args word (``reverse_log``) as its API enum name (``UNIT_REVERSE_LOG_SCALE``):
    the word is the enum member's name."""
    return lambda word: kind[word.upper()].value


_scale = _api_name(ScaleType)


@dataclass(frozen=True)
class Metric(Checked):
    """``StudySpec.MetricSpec``: what the trainer reports, and which way is better."""

    metric_id: str = DEFAULT_METRIC
    goal: Literal["maximize", "minimize"] = field(
        default="maximize", metadata=vertex("goal", encode=_api_name(MetricGoal))
    )


@dataclass(frozen=True)
class ParameterBase(Checked):
    """What every hyperparameter has."""

    parameter_id: str
    """Also the trainer flag: trials run with ``--<parameter_id>=<value>``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        judged_where_built(self, ParameterSpec, parameter_findings)


def _conditional(parent_key: str, cast: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``conditional`` as ``conditionalParameterSpecs``: one entry per child parameter,
    with every parent value it is searched under."""

    def encode(conditional: Mapping[Any, Sequence[ParameterBase]]) -> list[dict[str, Any]]:
        children: list[ParameterBase] = []
        for params in conditional.values():
            children += [child for child in params if child not in children]
        return [
            {
                parent_key: {"values": [cast(v) for v, ps in conditional.items() if child in ps]},
                "parameterSpec": to_body(child),
            }
            for child in children
        ]

    return encode


@dataclass(frozen=True)
class DoubleParameter(ParameterBase):
    """A real-valued hyperparameter in ``[min_value, max_value]``."""

    min_value: float = field(metadata=vertex("doubleValueSpec.minValue"))
    max_value: float = field(metadata=vertex("doubleValueSpec.maxValue"))
    scale: Scale | None = field(default=None, metadata=vertex("scaleType", encode=_scale))
    """None: unset, the service's default (as the SDK sends ``scale=None``)."""


@dataclass(frozen=True)
class IntegerParameter(ParameterBase):
    """A whole-number hyperparameter in ``[min_value, max_value]``."""

    min_value: int = field(metadata=vertex("integerValueSpec.minValue", encode=str))
    max_value: int = field(metadata=vertex("integerValueSpec.maxValue", encode=str))
    scale: Scale | None = field(default=None, metadata=vertex("scaleType", encode=_scale))
    """None: unset, the service's default (as the SDK sends ``scale=None``)."""
    conditional: Mapping[int, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex("conditionalParameterSpecs", encode=_conditional("parentIntValues", str)),
    )
    """Child parameters searched only when this one takes the key's value."""


@dataclass(frozen=True)
class DiscreteParameter(ParameterBase):
    """A hyperparameter taking one of the listed numbers."""

    values: Sequence[float] = field(
        metadata=vertex(
            "discreteValueSpec.values", encode=lambda vs: [float(v) for v in vs], keep_empty=True
        )
    )
    """Written even when empty: the rules refuse an empty list at this key."""
    scale: Scale | None = field(default=None, metadata=vertex("scaleType", encode=_scale))
    """None: unset, the service's default (as the SDK sends ``scale=None``)."""
    conditional: Mapping[float, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex(
            "conditionalParameterSpecs", encode=_conditional("parentDiscreteValues", float)
        ),
    )


@dataclass(frozen=True)
class CategoricalParameter(ParameterBase):
    """A hyperparameter taking one of the listed strings."""

    values: Sequence[str] = field(
        metadata=vertex("categoricalValueSpec.values", encode=list, keep_empty=True)
    )
    """Written even when empty: the rules refuse an empty list at this key."""
    conditional: Mapping[str, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex(
            "conditionalParameterSpecs", encode=_conditional("parentCategoricalValues", str)
        ),
    )
    """e.g. ``{"sgd": [DoubleParameter("momentum", 0, 1)]}``: momentum is searched only
    in trials whose optimizer is sgd."""


Parameter = DoubleParameter | IntegerParameter | DiscreteParameter | CategoricalParameter


@dataclass(frozen=True, kw_only=True)
class MedianStopping(Checked):
    """Stop a trial whose objective falls below the running trials' median."""

    VERTEX_KEY: ClassVar[str] = "medianAutomatedStoppingSpec"
    use_elapsed_duration: bool = False


@dataclass(frozen=True, kw_only=True)
class DecayCurveStopping(Checked):
    """Stop a trial whose extrapolated curve will not beat the best one."""

    VERTEX_KEY: ClassVar[str] = "decayCurveStoppingSpec"
    use_elapsed_duration: bool = False


@dataclass(frozen=True, kw_only=True)
class ConvexStopping(Checked):
    """``convexAutomatedStoppingSpec``; unset fields take the service's defaults."""

    VERTEX_KEY: ClassVar[str] = "convexAutomatedStoppingSpec"
    max_step_count: int | None = field(default=None, metadata=vertex("maxStepCount", encode=str))
    min_step_count: int | None = field(default=None, metadata=vertex("minStepCount", encode=str))
    min_measurement_count: int | None = field(
        default=None, metadata=vertex("minMeasurementCount", encode=str)
    )
    learning_rate_parameter_name: str | None = None
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool | None = None


EarlyStopping = MedianStopping | DecayCurveStopping | ConvexStopping


@dataclass(frozen=True, kw_only=True)
class Study(Checked):
    """``StudySpec``: what is tuned, towards what, and how trials are chosen."""

    def __post_init__(self) -> None:
        super().__post_init__()
        judged_where_built(self, StudySpec, study_findings)

    parameters: Sequence[Parameter] = field(metadata=vertex("parameters", keep_empty=True))
    metrics: Sequence[Metric] = (Metric(),)
    """The first metric chooses the best trial."""
    algorithm: Literal["bayesian", "grid", "random"] = field(
        default="bayesian",
        metadata=vertex("algorithm", encode=_api_name(SearchAlgorithm), omit=("bayesian",)),
    )
    """``bayesian`` is the service's default search."""
    measurement_selection: Literal["best", "last"] = field(
        default="best",
        metadata=vertex("measurementSelectionType", encode=_api_name(MeasurementSelection)),
    )
    early_stopping: EarlyStopping | None = field(default=None, metadata=vertex(""))


__all__ = [
    "DEFAULT_METRIC",
    "CategoricalParameter",
    "ConvexStopping",
    "DecayCurveStopping",
    "DiscreteParameter",
    "DoubleParameter",
    "EarlyStopping",
    "IntegerParameter",
    "MedianStopping",
    "Metric",
    "Parameter",
    "ParameterBase",
    "Scale",
    "Study",
]
