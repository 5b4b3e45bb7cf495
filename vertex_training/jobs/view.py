"""A job body read into typed, frozen models: only what the rules and the cost estimate need.

The body (a CustomJob or HyperparameterTuningJob in Vertex REST JSON) is the job; a view
is never turned back into one, so a field it does not read stays in the body and reaches
Vertex unchanged. Each model mirrors its proto message: attributes are the proto's
snake_case field names (as proto-plus spells them) and pydantic reads the JSON's
lowerCamel names or those, as ``json_format.ParseDict`` does. Plain pydantic: the program
reads views at preview time and must not pay for ``google.cloud.aiplatform_v1`` (the
provider parses the whole body with the real protos in ``check``).

int64 fields may be strings and every number may arrive as a float (that is how numbers
cross the Pulumi engine). Every value of the wrong type is reported at its API path
(``jobSpec.workerPoolSpecs[0].replicaCount``), all of them in one call.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema

from vertex_training._spelling import did_you_mean
from vertex_training.findings import Finding
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.hardware import normalize_accelerator


class PoolRole(enum.IntEnum):
    """Vertex worker pool order: the index of a pool in ``workerPoolSpecs`` is its role."""

    CHIEF = 0
    WORKER = 1
    PARAMETER_SERVER = 2
    EVALUATOR = 3


class NotOneOfError(ValueError):
    """A value that is none of the names a field takes: what is wrong and what is valid,
    kept apart for the finding (the text joins them for anything else)."""

    def __init__(self, message: str, valid: str) -> None:
        super().__init__(f"{message}; valid: {valid}")
        self.message, self.valid = message, valid


class ProtoEnum(enum.StrEnum):
    """A proto enum: each member is its proto name and carries its proto number, as the
    JSON may give either (``tests/jobs/test_protos.py`` holds both to ``aiplatform_v1``).
    Any other value is refused, a typo told with what was meant."""

    number: int

    def __new__(cls, name: str, number: int) -> Self:
        member = str.__new__(cls, name)
        member._value_ = name
        member.number = number
        return member

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(cls._read)

    @classmethod
    def _read(cls, value: Any) -> Self:
        for member in cls:
            if value == member.value or (type(value) is int and value == member.number):
                return member
        names = [m.value for m in cls]
        hint = did_you_mean(str(value), names)
        raise NotOneOfError(f"{value!r} is not valid{hint}", ", ".join(names))


MAX_DURATION_SECONDS = 315_576_000_000
"""``google.protobuf.Duration``'s range: +-10,000 years."""
_DURATION = re.compile(r"^(-?)(\d+)(?:\.(\d{1,9}))?s$")
_INT64 = 2**63


# ------------------------------------------------------------------ scalar JSON forms


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {value!r}")
    return value


def _int64(value: int) -> int:
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"{value} is outside the int64 range")
    return value


def _seconds(value: Any) -> float:
    """A protobuf Duration's JSON (``3600s``, ``1.5s``) in seconds."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"must be a duration like '3600s' or '1.5s', got {value!r}")
    sign, whole, fraction = match.groups()
    if int(whole) > MAX_DURATION_SECONDS:
        raise ValueError(
            f"{value} is beyond the longest duration the API takes "
            f"({MAX_DURATION_SECONDS}s, 10,000 years)"
        )
    seconds = int(whole) + (int(fraction.ljust(9, "0")) / 1e9 if fraction else 0.0)
    return -seconds if sign else seconds


Int = Annotated[int, BeforeValidator(_not_bool), AfterValidator(_int64)]
Number = Annotated[float, BeforeValidator(_not_bool)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


class Message(BaseModel):
    """A proto message's JSON: lowerCamel or snake_case keys, fields it does not name left
    to the protos."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        frozen=True,
    )

    def _set(self, suffix: str) -> list[str]:
        """The JSON names of the set fields named ``*suffix`` (the members of a oneof)."""
        fields = type(self).model_fields
        return [to_camel(n) for n in fields if n.endswith(suffix) and getattr(self, n) is not None]


M = TypeVar("M", bound=Message)


# ------------------------------------------------------------------------------ pools


class MachineSpec(Message):
    machine_type: str | None = None
    accelerator_type: Annotated[
        str | None,
        BeforeValidator(lambda value: None if value == 0 else value),
        AfterValidator(normalize_accelerator),
    ] = None
    """Vertex accelerator enum name; None when unset or ``ACCELERATOR_TYPE_UNSPECIFIED``
    (by name or by its number, 0)."""
    accelerator_count: Int = 0
    tpu_topology: str | None = None


class EnvVar(Message):
    name: str = ""
    value: str = ""


class ContainerSpec(Message):
    image_uri: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    """In the body's order: later values may reference earlier ones."""


class DiskSpec(Message):
    boot_disk_type: str | None = None
    boot_disk_size_gb: Int | None = None


class WorkerPoolSpec(Message):
    machine_spec: MachineSpec = MachineSpec()
    container_spec: ContainerSpec | None = None
    """None when the pool runs a Python package instead (``pythonPackageSpec``)."""
    replica_count: Int = 0
    disk_spec: DiskSpec | None = None
    """As declared; None: the service's default disk for the machine."""
    nfs_mounts: tuple[Any, ...] = ()


def _placeholder(pool: Any) -> Any:
    """An empty pool (``{}``) holds a role's place: None."""
    return None if isinstance(pool, Mapping) and not pool else pool


class SchedulingStrategy(ProtoEnum):
    """``Scheduling.strategy``; unset is STANDARD (ON_DEMAND and LOW_COST are deprecated)."""

    UNSPECIFIED = "STRATEGY_UNSPECIFIED", 0
    ON_DEMAND = "ON_DEMAND", 1
    LOW_COST = "LOW_COST", 2
    STANDARD = "STANDARD", 3
    SPOT = "SPOT", 4
    FLEX_START = "FLEX_START", 6


class SchedulingView(Message):
    timeout: Seconds | None = None
    """Fractional seconds stay fractional."""
    strategy: SchedulingStrategy = SchedulingStrategy.UNSPECIFIED
    max_wait_duration: Seconds | None = None
    """0 means "wait indefinitely", None unset."""


class GcsDestination(Message):
    output_uri_prefix: str | None = None


class CustomJobSpec(Message):
    """A ``CustomJobSpec`` (a CustomJob's ``jobSpec`` or a study's ``trialJobSpec``)."""

    worker_pool_specs: tuple[
        Annotated[WorkerPoolSpec | None, BeforeValidator(_placeholder)], ...
    ] = ()
    """Vertex order (see ``PoolRole``); None is an empty placeholder pool."""
    base_output_directory: GcsDestination = GcsDestination()
    service_account: str | None = None
    network: str | None = None
    scheduling: SchedulingView = SchedulingView()
    persistent_resource_id: str | None = None
    psc_interface_config: Any = None
    """Set: the job reaches its VPC over a Private Service Connect interface."""
    tensorboard: str | None = None
    experiment: str | None = None
    experiment_run: str | None = None


# ---------------------------------------------------------------------------- studies


class DoubleValueSpec(Message):
    min_value: Number = 0.0
    max_value: Number = 0.0


class IntegerValueSpec(Message):
    min_value: Int = 0
    max_value: Int = 0


class DiscreteValueSpec(Message):
    values: tuple[Number, ...] = ()


class CategoricalValueSpec(Message):
    values: tuple[str, ...] = ()


class IntValues(Message):
    values: tuple[Int, ...] = ()


class ScaleType(ProtoEnum):
    UNSPECIFIED = "SCALE_TYPE_UNSPECIFIED", 0
    LINEAR = "UNIT_LINEAR_SCALE", 1
    LOG = "UNIT_LOG_SCALE", 2
    REVERSE_LOG = "UNIT_REVERSE_LOG_SCALE", 3


class ParameterSpec(Message):
    parameter_id: str = ""
    double_value_spec: DoubleValueSpec | None = None
    integer_value_spec: IntegerValueSpec | None = None
    discrete_value_spec: DiscreteValueSpec | None = None
    categorical_value_spec: CategoricalValueSpec | None = None
    scale_type: ScaleType = ScaleType.UNSPECIFIED
    conditional_parameter_specs: tuple[ConditionalParameterSpec, ...] = ()

    @model_validator(mode="after")
    def _one_domain(self) -> ParameterSpec:
        if len(kinds := self._set("_value_spec")) != 1:
            raise ValueError(
                "a parameter needs exactly one of doubleValueSpec, integerValueSpec, "
                f"discreteValueSpec, categoricalValueSpec; got {kinds or 'none'}"
            )
        return self

    @property
    def domain(self) -> str:
        """The set value spec's JSON name, e.g. ``doubleValueSpec``."""
        return self._set("_value_spec")[0]


class ConditionalParameterSpec(Message):
    """A child parameter that exists only when its parent takes one of its parent values."""

    parameter_spec: ParameterSpec
    parent_discrete_values: DiscreteValueSpec | None = None
    parent_int_values: IntValues | None = None
    parent_categorical_values: CategoricalValueSpec | None = None

    @property
    def parent_values(self) -> tuple[float | int | str, ...]:
        values = (
            self.parent_discrete_values or self.parent_int_values or self.parent_categorical_values
        )
        return values.values if values is not None else ()


class MetricGoal(ProtoEnum):
    UNSPECIFIED = "GOAL_TYPE_UNSPECIFIED", 0
    MAXIMIZE = "MAXIMIZE", 1
    MINIMIZE = "MINIMIZE", 2


class MetricSpec(Message):
    metric_id: str = ""
    goal: MetricGoal = MetricGoal.UNSPECIFIED


class SearchAlgorithm(ProtoEnum):
    """``StudySpec.algorithm``; unset (``ALGORITHM_UNSPECIFIED``) is Vertex's Bayesian search."""

    BAYESIAN = "ALGORITHM_UNSPECIFIED", 0
    GRID = "GRID_SEARCH", 2
    RANDOM = "RANDOM_SEARCH", 3


class MeasurementSelection(ProtoEnum):
    UNSPECIFIED = "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", 0
    LAST = "LAST_MEASUREMENT", 1
    BEST = "BEST_MEASUREMENT", 2


class StudySpec(Message):
    metrics: tuple[MetricSpec, ...] = ()
    parameters: tuple[ParameterSpec, ...] = ()
    algorithm: SearchAlgorithm = SearchAlgorithm.BAYESIAN
    measurement_selection_type: MeasurementSelection = MeasurementSelection.UNSPECIFIED
    median_automated_stopping_spec: Any = None
    decay_curve_stopping_spec: Any = None
    convex_automated_stopping_spec: Any = None

    @property
    def early_stopping(self) -> str | None:
        """The automated stopping spec set (the body's oneof), e.g.
        ``medianAutomatedStoppingSpec``; None: none."""
        return next(iter(self._set("_stopping_spec")), None)


# ------------------------------------------------------------------------------- jobs


class EncryptionSpec(Message):
    kms_key_name: str | None = None


class _JobView(Message):
    display_name: str | None = None
    labels: dict[str, str] = {}
    encryption_spec: EncryptionSpec = EncryptionSpec()


class CustomJobView(_JobView):
    job_spec: CustomJobSpec = CustomJobSpec()
    trial_job_path: ClassVar[str] = "jobSpec"

    @property
    def trial_job(self) -> CustomJobSpec:
        """What each replica runs (a CustomJob's own ``jobSpec``)."""
        return self.job_spec


class HyperparameterTuningJobView(_JobView):
    trial_job_spec: CustomJobSpec = CustomJobSpec()
    study_spec: StudySpec = StudySpec()
    max_trial_count: Int = 0
    parallel_trial_count: Int = 0
    max_failed_trial_count: Int = 0
    trial_job_path: ClassVar[str] = "trialJobSpec"

    @property
    def trial_job(self) -> CustomJobSpec:
        return self.trial_job_spec


JobView = CustomJobView | HyperparameterTuningJobView


# ---------------------------------------------------------------------------- reading

_WORDS = {
    "dict": "must be an object",
    "model": "must be an object",
    "tuple": "must be a list",
    "list": "must be a list",
    "string": "must be a string",
    "int": "must be an integer",
    "float": "must be a number",
    "bool": "must be true or false",
}
"""pydantic's error types by their first word, in the words of JSON and YAML."""


def _path(root: str, loc: tuple[int | str, ...]) -> str:
    path = root
    for i, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        else:  # a field (in its JSON name), or a label's key
            name = part if i and loc[i - 1] == "labels" else to_camel(part)
            path = f"{path}.{name}" if path else name
    return path


def read(model: type[M], body: Any, path: str = "") -> tuple[M | None, list[Finding]]:
    """``body`` (a message's JSON at the API path ``path``) as ``model``, or None and a
    finding for every field it could not read."""
    try:
        return model.model_validate(body), []
    except ValidationError as error:
        findings = []
        for e in error.errors(include_url=False):
            kind = e["type"].split("_")[0]
            cause, valid = e.get("ctx", {}).get("error"), ""
            if isinstance(cause, NotOneOfError):
                message, valid = cause.message, cause.valid
            elif kind == "value":
                message = str(cause)
            else:
                message = f"{_WORDS.get(kind, e['msg'])}, got {e['input']!r}"
            findings.append(Finding(_path(path, e["loc"]), message, "error", valid=valid))
        return None, findings


VIEWS: dict[JobKind, type[JobView]] = {
    JobKind.CUSTOM_JOB: CustomJobView,
    JobKind.HYPERPARAMETER_TUNING_JOB: HyperparameterTuningJobView,
}


def read_view(kind: JobKind, body: Any) -> tuple[JobView | None, list[Finding]]:
    """The view of ``body`` and every field it could not read (errors at API paths)."""
    return read(VIEWS[kind], body)


__all__ = [
    "MAX_DURATION_SECONDS",
    "VIEWS",
    "CustomJobSpec",
    "CustomJobView",
    "HyperparameterTuningJobView",
    "JobView",
    "MeasurementSelection",
    "MetricGoal",
    "ParameterSpec",
    "PoolRole",
    "ProtoEnum",
    "ScaleType",
    "SchedulingStrategy",
    "SearchAlgorithm",
    "StudySpec",
    "WorkerPoolSpec",
    "read",
    "read_view",
]
