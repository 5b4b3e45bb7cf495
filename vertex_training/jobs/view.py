"""A read-only, typed view of a job body: only what the rules and the local backend need.

The body (a CustomJob or HyperparameterTuningJob in Vertex REST JSON) is the job; this
view is never turned back into one, so a field it does not read simply stays in the body
and reaches Vertex unchanged. Plain Python: the program reads views at preview time and
must not pay for ``google.cloud.aiplatform_v1`` (the provider parses the whole body with
the real protos in ``check``).

Keys are read in their JSON (lowerCamel) or proto (snake_case) spelling, as
``json_format.ParseDict`` accepts both. int64 fields may be strings and every number may
arrive as a float (that is how numbers cross the Pulumi engine). A value of the wrong
type is reported at its API path (``jobSpec.workerPoolSpecs[0].replicaCount``) and the
view goes on reading, so one call reports every problem of a body.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vertex_training._spelling import did_you_mean
from vertex_training.jobs.finding import Finding
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.hardware import normalize_accelerator


class PoolRole(enum.IntEnum):
    """Vertex worker pool order: the index of a pool in ``workerPoolSpecs`` is its role."""

    CHIEF = 0
    WORKER = 1
    PARAMETER_SERVER = 2
    EVALUATOR = 3


class SchedulingStrategy(enum.StrEnum):
    """``Scheduling.strategy``; unset is STANDARD (ON_DEMAND and LOW_COST are deprecated)."""

    UNSPECIFIED = "STRATEGY_UNSPECIFIED"
    ON_DEMAND = "ON_DEMAND"
    LOW_COST = "LOW_COST"
    STANDARD = "STANDARD"
    SPOT = "SPOT"
    FLEX_START = "FLEX_START"


class SearchAlgorithm(enum.StrEnum):
    """``StudySpec.algorithm``; unset (``ALGORITHM_UNSPECIFIED``) is Vertex's Bayesian search."""

    BAYESIAN = "ALGORITHM_UNSPECIFIED"
    GRID = "GRID_SEARCH"
    RANDOM = "RANDOM_SEARCH"


class ScaleType(enum.StrEnum):
    UNSPECIFIED = "SCALE_TYPE_UNSPECIFIED"
    LINEAR = "UNIT_LINEAR_SCALE"
    LOG = "UNIT_LOG_SCALE"
    REVERSE_LOG = "UNIT_REVERSE_LOG_SCALE"


class MetricGoal(enum.StrEnum):
    UNSPECIFIED = "GOAL_TYPE_UNSPECIFIED"
    MAXIMIZE = "MAXIMIZE"
    MINIMIZE = "MINIMIZE"


class MeasurementSelection(enum.StrEnum):
    UNSPECIFIED = "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED"
    LAST = "LAST_MEASUREMENT"
    BEST = "BEST_MEASUREMENT"


class EarlyStoppingKind(enum.StrEnum):
    """Which automated stopping spec of the study is set (the body's oneof)."""

    NONE = "none"
    MEDIAN = "medianAutomatedStoppingSpec"
    DECAY_CURVE = "decayCurveStoppingSpec"
    CONVEX = "convexAutomatedStoppingSpec"


PROTO_NUMBERS: Mapping[type[enum.StrEnum], tuple[int, ...]] = {
    SchedulingStrategy: (0, 1, 2, 3, 4, 6),
    SearchAlgorithm: (0, 2, 3),
    ScaleType: (0, 1, 2, 3),
    MetricGoal: (0, 1, 2),
    MeasurementSelection: (0, 1, 2),
}
"""Each proto enum's numbers, in member order (the JSON may give a number for a name);
``tests/jobs/test_protos.py`` holds names and numbers to the real ``aiplatform_v1`` enums."""


@dataclass(frozen=True)
class MachineSpec:
    machine_type: str | None
    accelerator_type: str | None = None
    """Vertex accelerator enum name; None when unset or ``ACCELERATOR_TYPE_UNSPECIFIED``."""
    accelerator_count: int = 0
    tpu_topology: str | None = None


@dataclass(frozen=True)
class ContainerSpec:
    image_uri: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """(name, value) in the body's order: later values may reference earlier ones."""


@dataclass(frozen=True)
class DiskSpec:
    boot_disk_type: str | None = None
    boot_disk_size_gb: int | None = None


@dataclass(frozen=True)
class WorkerPoolSpec:
    path: str
    """The pool's API path, e.g. ``jobSpec.workerPoolSpecs[1]``."""
    machine: MachineSpec
    container: ContainerSpec | None
    """None when the pool runs a Python package instead (``pythonPackageSpec``)."""
    replica_count: int = 1
    disk: DiskSpec | None = None
    """As declared; None: the service's default disk for the machine."""
    nfs_mount_count: int = 0
    """How many NFS shares the pool mounts (``nfsMounts``)."""


@dataclass(frozen=True)
class CustomJobSpec:
    """A ``CustomJobSpec`` (a CustomJob's ``jobSpec`` or a study's ``trialJobSpec``)."""

    path: str
    worker_pools: tuple[WorkerPoolSpec | None, ...]
    """Vertex order (see ``PoolRole``); None is an empty placeholder pool."""
    base_output_directory: str | None = None
    service_account: str | None = None
    network: str | None = None
    timeout_seconds: float | None = None
    """``scheduling.timeout``; fractional seconds stay fractional."""
    scheduling_strategy: SchedulingStrategy = SchedulingStrategy.UNSPECIFIED
    max_wait_seconds: float | None = None
    """``scheduling.maxWaitDuration``; 0 means "wait indefinitely", None unset."""
    persistent_resource_id: str | None = None
    psc_interface: bool = False
    """``pscInterfaceConfig`` is set (a Private Service Connect interface)."""
    tensorboard: str | None = None
    experiment: str | None = None
    experiment_run: str | None = None


@dataclass(frozen=True)
class DoubleParameterSpec:
    parameter_id: str
    min_value: float
    max_value: float
    scale: ScaleType = ScaleType.UNSPECIFIED
    conditional: tuple[ConditionalParameterSpec, ...] = ()


@dataclass(frozen=True)
class IntegerParameterSpec:
    parameter_id: str
    min_value: int
    max_value: int
    scale: ScaleType = ScaleType.UNSPECIFIED
    conditional: tuple[ConditionalParameterSpec, ...] = ()


@dataclass(frozen=True)
class DiscreteParameterSpec:
    parameter_id: str
    values: tuple[float, ...]
    scale: ScaleType = ScaleType.UNSPECIFIED
    conditional: tuple[ConditionalParameterSpec, ...] = ()


@dataclass(frozen=True)
class CategoricalParameterSpec:
    parameter_id: str
    values: tuple[str, ...]
    conditional: tuple[ConditionalParameterSpec, ...] = ()


ParameterSpec = (
    DoubleParameterSpec | IntegerParameterSpec | DiscreteParameterSpec | CategoricalParameterSpec
)


@dataclass(frozen=True)
class ConditionalParameterSpec:
    """A child parameter that exists only when its parent takes one of ``parent_values``."""

    parameter: ParameterSpec
    parent_values: tuple[float | int | str, ...]


@dataclass(frozen=True)
class MetricSpec:
    metric_id: str
    goal: MetricGoal

    @property
    def maximize(self) -> bool:
        return self.goal is MetricGoal.MAXIMIZE


@dataclass(frozen=True)
class StudySpec:
    metrics: tuple[MetricSpec, ...]
    parameters: tuple[ParameterSpec, ...]
    algorithm: SearchAlgorithm = SearchAlgorithm.BAYESIAN
    measurement_selection: MeasurementSelection = MeasurementSelection.UNSPECIFIED
    early_stopping: EarlyStoppingKind = EarlyStoppingKind.NONE
    early_stopping_uses_elapsed_duration: bool = False


@dataclass(frozen=True)
class CustomJobView:
    display_name: str | None
    job: CustomJobSpec
    labels: tuple[tuple[str, str], ...] = ()
    kms_key_name: str | None = None

    kind: JobKind = JobKind.CUSTOM_JOB

    @property
    def trial_job(self) -> CustomJobSpec:
        """What each replica runs (a CustomJob's own ``jobSpec``)."""
        return self.job


@dataclass(frozen=True)
class TuningJobView:
    display_name: str | None
    trial_job: CustomJobSpec
    study: StudySpec
    max_trial_count: int
    parallel_trial_count: int
    max_failed_trial_count: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    kms_key_name: str | None = None

    kind: JobKind = JobKind.HYPERPARAMETER_TUNING_JOB


JobView = CustomJobView | TuningJobView


class BodyError(ValueError):
    """A body the view cannot read; ``findings`` name every field at its API path."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("; ".join(f"{f.path}: {f.message}" for f in findings))


# ----------------------------------------------------------------------------- reading

_CAMEL = re.compile(r"_([a-z0-9])")
_DURATION = re.compile(r"^(-?)(\d+)(?:\.(\d{1,9}))?s$")
MAX_DURATION_SECONDS = 315_576_000_000
"""``google.protobuf.Duration``'s range: +-10,000 years."""
_INT64 = 2**63


@functools.lru_cache(maxsize=1024)  # the view asks for the same field names in every body
def snake_case(name: str) -> str:
    """``replicaCount`` -> ``replica_count`` (the proto's field name)."""
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


@dataclass
class _Reader:
    """Reads typed values out of JSON, collecting a finding per unreadable field."""

    errors: list[Finding] = field(default_factory=list)

    def fail(self, path: str, message: str) -> None:
        self.errors.append(Finding(path, message, "error"))

    def get(self, data: Mapping[str, Any], name: str) -> Any:
        if name in data:
            return data[name]
        return data.get(snake_case(name))

    def message(self, data: Any, path: str) -> Mapping[str, Any]:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            self.fail(path, f"must be an object, got {type(data).__name__} {data!r}")
            return {}
        return data

    def sub(self, data: Mapping[str, Any], name: str, path: str) -> Mapping[str, Any]:
        return self.message(self.get(data, name), _join(path, name))

    def items(self, data: Mapping[str, Any], name: str, path: str) -> list[tuple[str, Any]]:
        value = self.get(data, name)
        if value is None:
            return []
        full = _join(path, name)
        # Any sequence: the policy pack hands bodies over as read-only proxies of lists.
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            self.fail(full, f"must be a list, got {type(value).__name__}")
            return []
        return [(f"{full}[{i}]", item) for i, item in enumerate(value)]

    def string(self, data: Mapping[str, Any], name: str, path: str) -> str | None:
        value = self.get(data, name)
        if value is None or isinstance(value, str):
            return value
        self.fail(_join(path, name), f"must be a string, got {value!r}")
        return None

    def strings(self, data: Mapping[str, Any], name: str, path: str) -> tuple[str, ...]:
        out = []
        for item_path, item in self.items(data, name, path):
            if isinstance(item, str):
                out.append(item)
            else:
                self.fail(item_path, f"must be a string, got {item!r}")
        return tuple(out)

    def integer(self, data: Mapping[str, Any], name: str, path: str, default: int = 0) -> int:
        value = self.get(data, name)
        return default if value is None else self.as_integer(value, _join(path, name), default)

    def as_integer(self, value: Any, path: str, default: int = 0) -> int:
        number: float | int | None = None
        if isinstance(value, bool):
            number = None
        elif isinstance(value, int):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip())
        ):
            number = int(value)
        if number is None:
            self.fail(path, f"must be an integer, got {value!r}")
            return default
        if not -_INT64 <= number < _INT64:
            self.fail(path, f"{number} is outside the int64 range")
            return default
        return int(number)

    def number(self, data: Mapping[str, Any], name: str, path: str) -> float | None:
        value = self.get(data, name)
        return None if value is None else self.as_number(value, _join(path, name))

    def as_number(self, value: Any, path: str) -> float | None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
            return float(value.replace("Infinity", "inf"))
        self.fail(path, f"must be a number, got {value!r}")
        return None

    def boolean(self, data: Mapping[str, Any], name: str, path: str) -> bool:
        value = self.get(data, name)
        if value is None or isinstance(value, bool):
            return bool(value)
        self.fail(_join(path, name), f"must be true or false, got {value!r}")
        return False

    def duration(self, data: Mapping[str, Any], name: str, path: str) -> float | None:
        value = self.get(data, name)
        if value is None:
            return None
        full = _join(path, name)
        match = _DURATION.match(value) if isinstance(value, str) else None
        if match is None:
            self.fail(full, f"must be a duration like '3600s' or '1.5s', got {value!r}")
            return None
        sign, whole, fraction = match.groups()
        seconds = int(whole) + (int(fraction.ljust(9, "0")) / 1e9 if fraction else 0.0)
        if int(whole) > MAX_DURATION_SECONDS:
            self.fail(
                full,
                f"{value} is beyond the longest duration the API takes "
                f"({MAX_DURATION_SECONDS}s, 10,000 years)",
            )
            return None
        return -seconds if sign else seconds

    def enum(self, data: Mapping[str, Any], name: str, path: str, kind: Any) -> Any:
        value = self.get(data, name)
        members: list[Any] = list(kind)
        if value is None:
            return members[0]
        if isinstance(value, int) and not isinstance(value, bool):
            # The enum's number (json_format accepts it).
            numbers = PROTO_NUMBERS.get(kind, tuple(range(len(members))))
            if value in numbers:
                return members[numbers.index(value)]
        for member in members:
            if value == member.value:
                return member
        names = [m.value for m in members]
        self.fail(
            _join(path, name),
            f"{value!r} is not valid{did_you_mean(str(value), names)}; valid: {', '.join(names)}",
        )
        return members[0]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _labels(reader: _Reader, data: Mapping[str, Any], path: str) -> tuple[tuple[str, str], ...]:
    labels = reader.sub(data, "labels", path)
    out = []
    for key, value in labels.items():
        if isinstance(value, str):
            out.append((str(key), value))
        else:
            reader.fail(f"{_join(path, 'labels')}.{key}", f"must be a string, got {value!r}")
    return tuple(out)


def _kms(reader: _Reader, data: Mapping[str, Any], path: str) -> str | None:
    spec = reader.sub(data, "encryptionSpec", path)
    return reader.string(spec, "kmsKeyName", _join(path, "encryptionSpec"))


def _pool(reader: _Reader, data: Any, path: str) -> WorkerPoolSpec | None:
    pool = reader.message(data, path)
    if not pool:
        return None
    machine = reader.sub(pool, "machineSpec", path)
    machine_path = _join(path, "machineSpec")
    accelerator = reader.get(machine, "acceleratorType")
    if isinstance(accelerator, int) and accelerator == 0:
        accelerator = None
    elif accelerator is not None and not isinstance(accelerator, str):
        reader.fail(_join(machine_path, "acceleratorType"), f"must be a string: {accelerator!r}")
        accelerator = None
    container = None
    container_data = reader.get(pool, "containerSpec")
    if container_data is not None:
        c = reader.message(container_data, _join(path, "containerSpec"))
        c_path = _join(path, "containerSpec")
        env = []
        for env_path, item in reader.items(c, "env", c_path):
            entry = reader.message(item, env_path)
            name = reader.string(entry, "name", env_path)
            env.append((name or "", reader.string(entry, "value", env_path) or ""))
        container = ContainerSpec(
            image_uri=reader.string(c, "imageUri", c_path) or "",
            command=reader.strings(c, "command", c_path),
            args=reader.strings(c, "args", c_path),
            env=tuple(env),
        )
    disk = None
    if reader.get(pool, "diskSpec") is not None:
        d = reader.sub(pool, "diskSpec", path)
        d_path = _join(path, "diskSpec")
        size = reader.get(d, "bootDiskSizeGb")
        disk = DiskSpec(
            boot_disk_type=reader.string(d, "bootDiskType", d_path),
            boot_disk_size_gb=None
            if size is None
            else reader.as_integer(size, _join(d_path, "bootDiskSizeGb")),
        )
    return WorkerPoolSpec(
        path=path,
        machine=MachineSpec(
            machine_type=reader.string(machine, "machineType", machine_path),
            accelerator_type=normalize_accelerator(accelerator),
            accelerator_count=reader.integer(machine, "acceleratorCount", machine_path),
            tpu_topology=reader.string(machine, "tpuTopology", machine_path),
        ),
        container=container,
        replica_count=reader.integer(pool, "replicaCount", path, default=0),
        disk=disk,
        nfs_mount_count=len(reader.items(pool, "nfsMounts", path)),
    )


def _custom_job_spec(reader: _Reader, data: Mapping[str, Any], path: str) -> CustomJobSpec:
    pools = tuple(_pool(reader, item, p) for p, item in reader.items(data, "workerPoolSpecs", path))
    scheduling = reader.sub(data, "scheduling", path)
    s_path = _join(path, "scheduling")
    output = reader.sub(data, "baseOutputDirectory", path)
    return CustomJobSpec(
        path=path,
        worker_pools=pools,
        base_output_directory=reader.string(
            output, "outputUriPrefix", _join(path, "baseOutputDirectory")
        ),
        service_account=reader.string(data, "serviceAccount", path),
        network=reader.string(data, "network", path),
        timeout_seconds=reader.duration(scheduling, "timeout", s_path),
        scheduling_strategy=reader.enum(scheduling, "strategy", s_path, SchedulingStrategy),
        max_wait_seconds=reader.duration(scheduling, "maxWaitDuration", s_path),
        persistent_resource_id=reader.string(data, "persistentResourceId", path),
        psc_interface=reader.get(data, "pscInterfaceConfig") is not None,
        tensorboard=reader.string(data, "tensorboard", path),
        experiment=reader.string(data, "experiment", path),
        experiment_run=reader.string(data, "experimentRun", path),
    )


def _parent_values(reader: _Reader, data: Mapping[str, Any], path: str) -> tuple[Any, ...]:
    for name in ("parentDiscreteValues", "parentIntValues", "parentCategoricalValues"):
        if reader.get(data, name) is not None:
            values = reader.sub(data, name, path)
            v_path = _join(path, name)
            if name == "parentCategoricalValues":
                return reader.strings(values, "values", v_path)
            if name == "parentIntValues":
                return tuple(
                    reader.as_integer(v, p) for p, v in reader.items(values, "values", v_path)
                )
            return tuple(
                n
                for p, v in reader.items(values, "values", v_path)
                if (n := reader.as_number(v, p)) is not None
            )
    return ()


def _parameter(reader: _Reader, data: Any, path: str) -> ParameterSpec | None:
    spec = reader.message(data, path)
    pid = reader.string(spec, "parameterId", path) or ""
    scale = reader.enum(spec, "scaleType", path, ScaleType)
    conditional = []
    for c_path, item in reader.items(spec, "conditionalParameterSpecs", path):
        c = reader.message(item, c_path)
        child = _parameter(reader, reader.get(c, "parameterSpec"), _join(c_path, "parameterSpec"))
        if child is not None:
            conditional.append(ConditionalParameterSpec(child, _parent_values(reader, c, c_path)))
    cond = tuple(conditional)
    kinds = [
        n
        for n in (
            "doubleValueSpec",
            "integerValueSpec",
            "discreteValueSpec",
            "categoricalValueSpec",
        )
        if reader.get(spec, n) is not None
    ]
    if len(kinds) != 1:
        reader.fail(
            path,
            f"a parameter needs exactly one of doubleValueSpec, integerValueSpec, "
            f"discreteValueSpec, categoricalValueSpec; got {kinds or 'none'}",
        )
        return None
    name = kinds[0]
    values = reader.sub(spec, name, path)
    v_path = _join(path, name)
    if name == "doubleValueSpec":
        return DoubleParameterSpec(
            pid,
            reader.number(values, "minValue", v_path) or 0.0,
            reader.number(values, "maxValue", v_path) or 0.0,
            scale,
            cond,
        )
    if name == "integerValueSpec":
        return IntegerParameterSpec(
            pid,
            reader.integer(values, "minValue", v_path),
            reader.integer(values, "maxValue", v_path),
            scale,
            cond,
        )
    if name == "discreteValueSpec":
        numbers = tuple(
            n
            for p, v in reader.items(values, "values", v_path)
            if (n := reader.as_number(v, p)) is not None
        )
        return DiscreteParameterSpec(pid, numbers, scale, cond)
    return CategoricalParameterSpec(pid, reader.strings(values, "values", v_path), cond)


def _study(reader: _Reader, data: Mapping[str, Any], path: str) -> StudySpec:
    metrics = []
    for m_path, item in reader.items(data, "metrics", path):
        m = reader.message(item, m_path)
        metrics.append(
            MetricSpec(
                reader.string(m, "metricId", m_path) or "",
                reader.enum(m, "goal", m_path, MetricGoal),
            )
        )
    parameters = tuple(
        p
        for p_path, item in reader.items(data, "parameters", path)
        if (p := _parameter(reader, item, p_path)) is not None
    )
    stopping = [e for e in list(EarlyStoppingKind)[1:] if reader.get(data, e.value) is not None]
    early = stopping[0] if stopping else EarlyStoppingKind.NONE
    elapsed = (
        reader.boolean(reader.sub(data, early.value, path), "useElapsedDuration", path)
        if early in (EarlyStoppingKind.MEDIAN, EarlyStoppingKind.DECAY_CURVE)
        else False
    )
    return StudySpec(
        metrics=tuple(metrics),
        parameters=parameters,
        algorithm=reader.enum(data, "algorithm", path, SearchAlgorithm),
        measurement_selection=reader.enum(
            data, "measurementSelectionType", path, MeasurementSelection
        ),
        early_stopping=early,
        early_stopping_uses_elapsed_duration=elapsed,
    )


def read_view(kind: JobKind, body: Any) -> tuple[JobView | None, list[Finding]]:
    """The view of ``body`` and every field it could not read (errors at API paths)."""
    reader = _Reader()
    data = reader.message(body, "")
    display_name = reader.string(data, "displayName", "")
    labels = _labels(reader, data, "")
    kms = _kms(reader, data, "")
    view: JobView
    if kind is JobKind.HYPERPARAMETER_TUNING_JOB:
        view = TuningJobView(
            display_name=display_name,
            trial_job=_custom_job_spec(
                reader, reader.sub(data, "trialJobSpec", ""), "trialJobSpec"
            ),
            study=_study(reader, reader.sub(data, "studySpec", ""), "studySpec"),
            max_trial_count=reader.integer(data, "maxTrialCount", ""),
            parallel_trial_count=reader.integer(data, "parallelTrialCount", ""),
            max_failed_trial_count=reader.integer(data, "maxFailedTrialCount", ""),
            labels=labels,
            kms_key_name=kms,
        )
    else:
        view = CustomJobView(
            display_name=display_name,
            job=_custom_job_spec(reader, reader.sub(data, "jobSpec", ""), "jobSpec"),
            labels=labels,
            kms_key_name=kms,
        )
    return view, reader.errors


def read_pool(body: Any, path: str) -> tuple[WorkerPoolSpec | None, list[Finding]]:
    """One worker pool's body at ``path`` (a ``WorkerPool`` checked where it is built)."""
    reader = _Reader()
    return _pool(reader, body, path), reader.errors


def read_study(body: Any, path: str) -> tuple[StudySpec, list[Finding]]:
    """One ``studySpec`` at ``path`` (a ``Study`` checked where it is built)."""
    reader = _Reader()
    return _study(reader, reader.message(body, path), path), reader.errors


def read_parameter(body: Any, path: str) -> tuple[ParameterSpec | None, list[Finding]]:
    """One parameter spec at ``path`` (a parameter checked where it is built)."""
    reader = _Reader()
    return _parameter(reader, body, path), reader.errors


def view_of(kind: JobKind, body: Any) -> JobView:
    """The view of ``body``; raises ``BodyError`` naming every unreadable field."""
    view, errors = read_view(kind, body)
    if errors or view is None:
        raise BodyError(errors)
    return view


def json_name(proto_name: str) -> str:
    """``replica_count`` -> ``replicaCount`` (how the API reference spells fields)."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), proto_name)


__all__ = [
    "MAX_DURATION_SECONDS",
    "PROTO_NUMBERS",
    "BodyError",
    "CategoricalParameterSpec",
    "ConditionalParameterSpec",
    "ContainerSpec",
    "CustomJobSpec",
    "CustomJobView",
    "DiscreteParameterSpec",
    "DiskSpec",
    "DoubleParameterSpec",
    "EarlyStoppingKind",
    "IntegerParameterSpec",
    "JobView",
    "MachineSpec",
    "MeasurementSelection",
    "MetricGoal",
    "MetricSpec",
    "ParameterSpec",
    "PoolRole",
    "ScaleType",
    "SchedulingStrategy",
    "SearchAlgorithm",
    "StudySpec",
    "TuningJobView",
    "WorkerPoolSpec",
    "json_name",
    "read_parameter",
    "read_pool",
    "read_study",
    "read_view",
    "snake_case",
    "view_of",
]
