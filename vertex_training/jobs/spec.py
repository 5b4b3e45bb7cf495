"""Pure, frozen specs for Vertex AI training jobs.

No Pulumi and no network in this module: every other layer (dynamic providers,
the vertex and local backends, the config loader) leans on these shapes.

CONTRACT (shared by several people working in parallel): the class names, field
names and field meanings below are the agreed interface. Validation and the
conversion to and from ``google.cloud.aiplatform_v1`` are filled in by the jobs
work; add fields if needed, do not rename.
"""

from __future__ import annotations

import enum
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vertex_training.jobs.accelerators import AcceleratorError, check_machine, check_region


class PoolRole(enum.IntEnum):
    """Vertex worker pool order: the index of a pool in ``worker_pools`` is its role."""

    CHIEF = 0
    WORKER = 1
    PARAMETER_SERVER = 2
    EVALUATOR = 3


class SchedulingStrategy(enum.StrEnum):
    STANDARD = "STANDARD"
    SPOT = "SPOT"
    FLEX_START = "FLEX_START"


class SearchAlgorithm(enum.StrEnum):
    """Vertex study algorithms; ``BAYESIAN`` is the service default (ALGORITHM_UNSPECIFIED)."""

    BAYESIAN = "BAYESIAN"
    GRID = "GRID"
    RANDOM = "RANDOM"


class ScaleType(enum.StrEnum):
    LINEAR = "LINEAR"
    LOG = "LOG"
    REVERSE_LOG = "REVERSE_LOG"


class MetricGoal(enum.StrEnum):
    MAXIMIZE = "MAXIMIZE"
    MINIMIZE = "MINIMIZE"


class MeasurementSelection(enum.StrEnum):
    BEST = "BEST"
    LAST = "LAST"


class EarlyStopping(enum.StrEnum):
    NONE = "NONE"
    MEDIAN = "MEDIAN"
    DECAY_CURVE = "DECAY_CURVE"
    CONVEX = "CONVEX"


class JobState(enum.StrEnum):
    """The Vertex ``JobState`` names without the ``JOB_STATE_`` prefix."""

    QUEUED = "QUEUED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    PAUSED = "PAUSED"
    EXPIRED = "EXPIRED"
    UPDATING = "UPDATING"
    PARTIALLY_SUCCEEDED = "PARTIALLY_SUCCEEDED"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL_STATES


_TERMINAL_STATES = frozenset(
    {
        JobState.SUCCEEDED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.EXPIRED,
        JobState.PARTIALLY_SUCCEEDED,
    }
)


class JobKind(enum.StrEnum):
    CUSTOM_JOB = "customJobs"
    HYPERPARAMETER_TUNING_JOB = "hyperparameterTuningJobs"


@dataclass(frozen=True)
class MachineSpec:
    machine_type: str
    """Compute Engine machine type, e.g. ``n1-standard-8``."""
    accelerator_type: str | None = None
    """Vertex accelerator enum name, e.g. ``NVIDIA_TESLA_V100``; None for CPU only."""
    accelerator_count: int = 0


@dataclass(frozen=True)
class ContainerSpec:
    image_uri: str
    """Image by digest (``...@sha256:...``) for real jobs; any string for local runs."""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """Environment as ordered (name, value) pairs, so the spec stays hashable."""


@dataclass(frozen=True)
class DiskSpec:
    boot_disk_type: str = "pd-ssd"
    boot_disk_size_gb: int = 100


@dataclass(frozen=True)
class WorkerPoolSpec:
    machine: MachineSpec
    container: ContainerSpec
    replica_count: int = 1
    disk: DiskSpec = field(default_factory=DiskSpec)


@dataclass(frozen=True)
class CustomJobSpec:
    display_name: str
    worker_pools: tuple[WorkerPoolSpec | None, ...]
    """Vertex order (see ``PoolRole``); ``None`` is an empty pool, allowed only before
    a later non-empty pool (Vertex needs placeholders) -- trailing empties are dropped."""
    base_output_directory: str | None = None
    """``gs://...`` (vertex) or a local path (local backend); AIP_* dirs derive from it."""
    service_account: str | None = None
    network: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    timeout_seconds: int | None = None
    restart_job_on_worker_restart: bool = False
    scheduling_strategy: SchedulingStrategy = SchedulingStrategy.STANDARD
    max_wait_seconds: int | None = None
    persistent_resource_id: str | None = None
    enable_web_access: bool = False
    tensorboard: str | None = None
    kms_key_name: str | None = None

    def __post_init__(self) -> None:
        # Vertex stores labels as a map: keeping them sorted makes a spec read back from
        # the service equal to the one that was sent.
        object.__setattr__(self, "labels", tuple(sorted(tuple(kv) for kv in self.labels)))
        object.__setattr__(self, "worker_pools", tuple(self.worker_pools))


@dataclass(frozen=True)
class DoubleParameterSpec:
    parameter_id: str
    min_value: float
    max_value: float
    scale: ScaleType = ScaleType.LINEAR
    conditional: tuple[ConditionalParameterSpec, ...] = ()


@dataclass(frozen=True)
class IntegerParameterSpec:
    parameter_id: str
    min_value: int
    max_value: int
    scale: ScaleType = ScaleType.LINEAR
    conditional: tuple[ConditionalParameterSpec, ...] = ()


@dataclass(frozen=True)
class DiscreteParameterSpec:
    parameter_id: str
    values: tuple[float, ...]
    scale: ScaleType = ScaleType.LINEAR
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


@dataclass(frozen=True)
class StudySpec:
    metrics: tuple[MetricSpec, ...]
    parameters: tuple[ParameterSpec, ...]
    algorithm: SearchAlgorithm = SearchAlgorithm.BAYESIAN
    measurement_selection: MeasurementSelection = MeasurementSelection.BEST
    early_stopping: EarlyStopping = EarlyStopping.NONE
    early_stopping_uses_elapsed_duration: bool = False
    """Early stopping compares trials by elapsed time instead of by step count."""


@dataclass(frozen=True)
class TuningJobSpec:
    display_name: str
    trial_job: CustomJobSpec
    """Trial template; its ``display_name`` is ignored by Vertex."""
    study: StudySpec
    max_trial_count: int
    parallel_trial_count: int
    max_failed_trial_count: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    kms_key_name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(sorted(tuple(kv) for kv in self.labels)))


JobSpec = CustomJobSpec | TuningJobSpec


@dataclass(frozen=True)
class TrialRecord:
    trial_id: str
    """Vertex trial ids are strings counting from "1"."""
    state: str
    """Vertex Trial.State name: REQUESTED, ACTIVE, STOPPING, SUCCEEDED, INFEASIBLE."""
    parameters: tuple[tuple[str, float | int | str], ...]
    final_metric: float | None


def best_trial(trials: Sequence[TrialRecord], goal: MetricGoal) -> TrialRecord | None:
    """The SUCCEEDED trial with the best final metric; the earlier trial wins a tie.

    One rule for both backends, so a study reports the same best trial on Vertex and here.
    """
    scored = [t for t in trials if t.state == "SUCCEEDED" and t.final_metric is not None]
    if not scored:
        return None
    sign = 1.0 if goal is MetricGoal.MAXIMIZE else -1.0
    return max(scored, key=lambda t: (sign * (t.final_metric or 0.0), -int(t.trial_id or 0)))


@dataclass(frozen=True)
class JobRecord:
    """What a backend knows of one submitted job: the same shape from vertex and local."""

    name: str
    """Full resource name, ``projects/P/locations/L/customJobs/ID`` (local backend:
    the same shape with project ``local``)."""
    kind: JobKind
    display_name: str
    state: JobState
    labels: tuple[tuple[str, str], ...] = ()
    create_time: str | None = None
    """RFC 3339 timestamps."""
    start_time: str | None = None
    end_time: str | None = None
    error_message: str | None = None
    model_dir: str | None = None
    trials: tuple[TrialRecord, ...] = ()
    best_trial: TrialRecord | None = None
    web_access_uris: Mapping[str, str] = field(default_factory=dict)

    @property
    def job_id(self) -> str:
        return self.name.rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- validation
# Everything Vertex would refuse at submit time (or, worse, accept and fail on an hour
# later) is refused here first, with the field path and what would be valid.

MAX_POOLS = len(PoolRole)
MAX_DISPLAY_NAME = 128
MAX_LABELS = 64
MAX_LABEL_LENGTH = 63
BOOT_DISK_TYPES = frozenset({"pd-ssd", "pd-standard", "hyperdisk-balanced"})
BOOT_DISK_GB_RANGE = (100, 65536)

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERVICE_ACCOUNT = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]+$")
_NETWORK = re.compile(r"^projects/[^/]+/global/networks/[^/]+$")
_TENSORBOARD = re.compile(r"^projects/[^/]+/locations/([^/]+)/tensorboards/[^/]+$")
_KMS_KEY = re.compile(r"^projects/[^/]+/locations/([^/]+)/keyRings/[^/]+/cryptoKeys/[^/]+$")
_PERSISTENT_RESOURCE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


@dataclass(frozen=True)
class SpecIssue:
    """One validation failure: the dotted field path and what was wrong / valid."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SpecValidationError(ValueError):
    """A spec Vertex would refuse; ``issues`` lists every failure found."""

    def __init__(self, issues: Sequence[SpecIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(str(i) for i in self.issues))


def _check_display_name(name: str, path: str, out: list[SpecIssue]) -> None:
    if not name or not name.strip():
        out.append(SpecIssue(path, "must not be empty (1-128 characters)"))
    elif len(name) > MAX_DISPLAY_NAME:
        out.append(SpecIssue(path, f"is {len(name)} characters long; at most 128 allowed"))
    elif any(ord(c) < 32 for c in name):
        out.append(SpecIssue(path, "must not contain control characters"))


def _check_labels(labels: tuple[tuple[str, str], ...], path: str, out: list[SpecIssue]) -> None:
    if len(labels) > MAX_LABELS:
        out.append(SpecIssue(path, f"has {len(labels)} labels; at most {MAX_LABELS} allowed"))
    seen: set[str] = set()
    for key, value in labels:
        if key in seen:
            out.append(SpecIssue(f"{path}.{key}", "duplicate label key"))
        seen.add(key)
        if not _LABEL_KEY.match(key):
            out.append(
                SpecIssue(
                    f"{path}.{key}",
                    "label keys are 1-63 characters: a lowercase letter, then lowercase "
                    "letters, digits, '_' or '-'",
                )
            )
        if not _LABEL_VALUE.match(value):
            out.append(
                SpecIssue(
                    f"{path}.{key}",
                    f"label value {value!r} invalid: up to 63 lowercase letters, digits, "
                    "'_' or '-'",
                )
            )


def _check_pool(
    pool: WorkerPoolSpec, index: int, path: str, remote: bool, out: list[SpecIssue]
) -> None:
    role = PoolRole(index)
    if role is PoolRole.CHIEF and pool.replica_count != 1:
        out.append(
            SpecIssue(
                f"{path}.replica_count",
                f"the chief pool (0) runs exactly 1 replica, got {pool.replica_count}; "
                "put further replicas in pool 1 (workers)",
            )
        )
    elif role is PoolRole.EVALUATOR and pool.replica_count != 1:
        out.append(
            SpecIssue(
                f"{path}.replica_count",
                f"at most one evaluator (pool 3) is allowed, got {pool.replica_count}",
            )
        )
    elif pool.replica_count < 1:
        out.append(
            SpecIssue(
                f"{path}.replica_count",
                f"must be at least 1, got {pool.replica_count}; use an empty pool (null) instead",
            )
        )
    machine = pool.machine
    try:
        check_machine(machine.machine_type, machine.accelerator_type, machine.accelerator_count)
    except AcceleratorError as error:
        out.append(SpecIssue(f"{path}.machine", str(error)))
    container = pool.container
    if not container.image_uri.strip():
        out.append(SpecIssue(f"{path}.container.image_uri", "must not be empty"))
    names = [name for name, _ in container.env]
    for name in names:
        if not _ENV_NAME.match(name):
            out.append(
                SpecIssue(
                    f"{path}.container.env.{name}",
                    "environment variable names are letters, digits and '_', not starting "
                    "with a digit",
                )
            )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        out.append(SpecIssue(f"{path}.container.env", f"duplicate names: {duplicates}"))
    if pool.disk.boot_disk_type not in BOOT_DISK_TYPES:
        out.append(
            SpecIssue(
                f"{path}.disk.boot_disk_type",
                f"{pool.disk.boot_disk_type!r} invalid; valid: {sorted(BOOT_DISK_TYPES)}",
            )
        )
    low, high = BOOT_DISK_GB_RANGE
    if not low <= pool.disk.boot_disk_size_gb <= high:
        out.append(
            SpecIssue(
                f"{path}.disk.boot_disk_size_gb",
                f"{pool.disk.boot_disk_size_gb} outside the valid range {low}-{high}",
            )
        )


def _custom_job_issues(
    spec: CustomJobSpec, path: str, region: str | None, remote: bool, out: list[SpecIssue]
) -> None:
    pools = spec.worker_pools
    if not pools or pools[0] is None:
        out.append(
            SpecIssue(f"{path}worker_pools", "pool 0 (the chief) must be present and not empty")
        )
    if len(pools) > MAX_POOLS:
        out.append(
            SpecIssue(
                f"{path}worker_pools",
                f"has {len(pools)} pools; Vertex has 4 (0 chief, 1 workers, "
                "2 parameter servers, 3 evaluator)",
            )
        )
    if pools and pools[-1] is None:
        out.append(
            SpecIssue(
                f"{path}worker_pools[{len(pools) - 1}]",
                "an empty pool is only a placeholder before a later pool; drop trailing "
                "empty pools",
            )
        )
    gpu_types: set[str] = set()
    for index, pool in enumerate(pools[:MAX_POOLS]):
        if pool is None:
            continue
        _check_pool(pool, index, f"{path}worker_pools[{index}]", remote, out)
        if pool.machine.accelerator_type:
            gpu_types.add(pool.machine.accelerator_type)
    if region is not None and gpu_types:
        try:
            check_region(region, gpu_types)
        except AcceleratorError as error:
            out.append(SpecIssue(f"{path}worker_pools", str(error)))
    if spec.base_output_directory is not None:
        if not spec.base_output_directory.strip():
            out.append(SpecIssue(f"{path}base_output_directory", "must not be empty when set"))
        elif remote and not spec.base_output_directory.startswith("gs://"):
            out.append(
                SpecIssue(
                    f"{path}base_output_directory",
                    f"{spec.base_output_directory!r} must be a Cloud Storage URI (gs://...)",
                )
            )
    if spec.service_account is not None and not _SERVICE_ACCOUNT.match(spec.service_account):
        out.append(
            SpecIssue(
                f"{path}service_account",
                f"{spec.service_account!r} is not a service account email",
            )
        )
    if spec.network is not None and not _NETWORK.match(spec.network):
        out.append(
            SpecIssue(
                f"{path}network",
                f"{spec.network!r} must be projects/PROJECT_NUMBER/global/networks/NAME",
            )
        )
    if spec.timeout_seconds is not None and spec.timeout_seconds <= 0:
        out.append(SpecIssue(f"{path}timeout_seconds", "must be positive when set"))
    if spec.max_wait_seconds is not None:
        if spec.scheduling_strategy is not SchedulingStrategy.FLEX_START:
            out.append(
                SpecIssue(
                    f"{path}max_wait_seconds",
                    "only applies to scheduling_strategy FLEX_START, got "
                    f"{spec.scheduling_strategy.value}",
                )
            )
        elif spec.max_wait_seconds <= 0:
            out.append(SpecIssue(f"{path}max_wait_seconds", "must be positive when set"))
    if spec.persistent_resource_id is not None:
        if not _PERSISTENT_RESOURCE.match(spec.persistent_resource_id):
            out.append(
                SpecIssue(
                    f"{path}persistent_resource_id",
                    "1-63 characters: a lowercase letter, then lowercase letters, digits or '-'",
                )
            )
        if spec.scheduling_strategy is not SchedulingStrategy.STANDARD:
            out.append(
                SpecIssue(
                    f"{path}scheduling_strategy",
                    "a job on a persistent resource uses that resource's VMs: strategy "
                    "must be STANDARD",
                )
            )
    if spec.tensorboard is not None:
        match = _TENSORBOARD.match(spec.tensorboard)
        if not match:
            out.append(
                SpecIssue(
                    f"{path}tensorboard",
                    "must be projects/P/locations/L/tensorboards/ID",
                )
            )
        elif region is not None and match.group(1) != region:
            out.append(
                SpecIssue(
                    f"{path}tensorboard",
                    f"lives in {match.group(1)!r}; it must be in the job's region {region!r}",
                )
            )
        if spec.base_output_directory is None:
            out.append(
                SpecIssue(
                    f"{path}base_output_directory",
                    "is required with tensorboard (logs go to its logs/ folder)",
                )
            )
    _check_kms(spec.kms_key_name, f"{path}kms_key_name", region, out)


def _check_kms(key: str | None, path: str, region: str | None, out: list[SpecIssue]) -> None:
    if key is None:
        return
    match = _KMS_KEY.match(key)
    if not match:
        out.append(
            SpecIssue(path, "must be projects/P/locations/L/keyRings/R/cryptoKeys/K (a CMEK key)")
        )
    elif region is not None and match.group(1) != region:
        out.append(
            SpecIssue(
                path, f"key is in {match.group(1)!r}; it must be in the job's region {region!r}"
            )
        )


def _parameter_issues(
    param: ParameterSpec,
    path: str,
    grid: bool,
    seen: set[str],
    out: list[SpecIssue],
) -> None:
    pid = param.parameter_id
    if not pid or not pid.strip():
        out.append(SpecIssue(f"{path}.parameter_id", "must not be empty"))
    elif pid in seen:
        out.append(SpecIssue(f"{path}.parameter_id", f"{pid!r} is used twice; ids are unique"))
    seen.add(pid)
    if isinstance(param, DoubleParameterSpec | IntegerParameterSpec):
        if isinstance(param, DoubleParameterSpec) and not (
            math.isfinite(param.min_value) and math.isfinite(param.max_value)
        ):
            out.append(SpecIssue(path, "min_value and max_value must be finite"))
        elif param.min_value >= param.max_value:
            out.append(
                SpecIssue(
                    f"{path}.min_value",
                    f"min_value {param.min_value} must be less than max_value {param.max_value}",
                )
            )
        if param.scale is not ScaleType.LINEAR and param.min_value <= 0:
            out.append(
                SpecIssue(
                    f"{path}.scale",
                    f"{param.scale.value} scale needs min_value > 0, got {param.min_value}; "
                    "use LINEAR or raise min_value",
                )
            )
    elif isinstance(param, DiscreteParameterSpec):
        values = param.values
        if not values:
            out.append(SpecIssue(f"{path}.values", "must list at least one value"))
        elif any(not math.isfinite(v) for v in values):
            out.append(SpecIssue(f"{path}.values", "values must be finite numbers"))
        elif any(b <= a for a, b in itertools.pairwise(values)):
            out.append(
                SpecIssue(f"{path}.values", f"must be strictly increasing, got {list(values)}")
            )
        elif param.scale is not ScaleType.LINEAR and values[0] <= 0:
            out.append(
                SpecIssue(f"{path}.scale", f"{param.scale.value} scale needs all values > 0")
            )
    elif not param.values:
        out.append(SpecIssue(f"{path}.values", "must list at least one category"))
    elif len(set(param.values)) != len(param.values):
        out.append(SpecIssue(f"{path}.values", "categories must be unique"))
    elif any(not v for v in param.values):
        out.append(SpecIssue(f"{path}.values", "categories must not be empty strings"))
    if grid and isinstance(param, DoubleParameterSpec):
        out.append(
            SpecIssue(
                path,
                f"GRID search cannot enumerate the double parameter {pid!r}; use integer, "
                "discrete or categorical parameters, or RANDOM / BAYESIAN",
            )
        )
    for index, child in enumerate(param.conditional):
        child_path = f"{path}.conditional[{index}]"
        if isinstance(param, DoubleParameterSpec):
            out.append(
                SpecIssue(
                    child_path,
                    "a double parameter cannot have conditional children; make the parent "
                    "integer, discrete or categorical",
                )
            )
        elif not child.parent_values:
            out.append(SpecIssue(f"{child_path}.parent_values", "must not be empty"))
        else:
            bad = [v for v in child.parent_values if not _in_domain(param, v)]
            if bad:
                out.append(
                    SpecIssue(
                        f"{child_path}.parent_values",
                        f"{bad} are not values of parent {pid!r}",
                    )
                )
        _parameter_issues(child.parameter, f"{child_path}.parameter", grid, seen, out)


def _in_domain(param: ParameterSpec, value: float | int | str) -> bool:
    if isinstance(param, CategoricalParameterSpec):
        return isinstance(value, str) and value in param.values
    if isinstance(value, (str, bool)):
        return False
    if isinstance(param, IntegerParameterSpec):
        return float(value).is_integer() and param.min_value <= value <= param.max_value
    if isinstance(param, DiscreteParameterSpec):
        return value in param.values
    return False


def _tuning_job_issues(spec: TuningJobSpec, region: str | None, remote: bool) -> list[SpecIssue]:
    out: list[SpecIssue] = []
    _check_display_name(spec.display_name, "display_name", out)
    _check_labels(spec.labels, "labels", out)
    _check_kms(spec.kms_key_name, "kms_key_name", region, out)
    _custom_job_issues(spec.trial_job, "trial_job.", region, remote, out)
    if spec.trial_job.labels:
        out.append(
            SpecIssue("trial_job.labels", "trials take the tuning job's labels; set them there")
        )
    if spec.trial_job.kms_key_name is not None:
        out.append(
            SpecIssue(
                "trial_job.kms_key_name", "trials use the tuning job's kms_key_name; set it there"
            )
        )
    if spec.max_trial_count < 1:
        out.append(SpecIssue("max_trial_count", f"must be at least 1, got {spec.max_trial_count}"))
    if spec.parallel_trial_count < 1:
        out.append(
            SpecIssue(
                "parallel_trial_count", f"must be at least 1, got {spec.parallel_trial_count}"
            )
        )
    elif spec.parallel_trial_count > spec.max_trial_count:
        out.append(
            SpecIssue(
                "parallel_trial_count",
                f"{spec.parallel_trial_count} exceeds max_trial_count {spec.max_trial_count}",
            )
        )
    if spec.max_failed_trial_count < 0:
        out.append(SpecIssue("max_failed_trial_count", "must be 0 (service default) or more"))
    study = spec.study
    if not study.metrics:
        out.append(SpecIssue("study.metrics", "needs at least one metric"))
    metric_ids = [m.metric_id for m in study.metrics]
    for index, metric in enumerate(study.metrics):
        if not metric.metric_id or not metric.metric_id.strip():
            out.append(
                SpecIssue(
                    f"study.metrics[{index}].metric_id",
                    "must not be empty: it is the hyperparameter_metric_tag the trainer reports",
                )
            )
        elif metric_ids.count(metric.metric_id) > 1:
            out.append(
                SpecIssue(f"study.metrics[{index}].metric_id", f"{metric.metric_id!r} repeats")
            )
    if not study.parameters:
        out.append(SpecIssue("study.parameters", "needs at least one parameter to tune"))
    seen: set[str] = set()
    grid = study.algorithm is SearchAlgorithm.GRID
    for index, param in enumerate(study.parameters):
        _parameter_issues(param, f"study.parameters[{index}]", grid, seen, out)
    if study.early_stopping is EarlyStopping.NONE and study.early_stopping_uses_elapsed_duration:
        out.append(
            SpecIssue(
                "study.early_stopping_uses_elapsed_duration",
                "only applies with early_stopping MEDIAN, DECAY_CURVE or CONVEX",
            )
        )
    return out


def spec_issues(
    spec: JobSpec, *, region: str | None = None, remote: bool = True
) -> list[SpecIssue]:
    """Every validation failure of ``spec`` (empty when valid).

    ``region``: the Vertex location, to check GPU availability, CMEK and TensorBoard
    placement (None skips those checks, e.g. for the local backend). ``remote``: the job
    runs on Vertex, so output directories must be ``gs://`` URIs.
    """
    if isinstance(spec, TuningJobSpec):
        return _tuning_job_issues(spec, region, remote)
    out: list[SpecIssue] = []
    _check_display_name(spec.display_name, "display_name", out)
    _check_labels(spec.labels, "labels", out)
    _custom_job_issues(spec, "", region, remote, out)
    return out


def validate(spec: JobSpec, *, region: str | None = None, remote: bool = True) -> JobSpec:
    """Return ``spec`` unchanged, or raise ``SpecValidationError`` listing every issue."""
    issues = spec_issues(spec, region=region, remote=remote)
    if issues:
        raise SpecValidationError(issues)
    return spec


def job_kind(spec: JobSpec) -> JobKind:
    return (
        JobKind.HYPERPARAMETER_TUNING_JOB if isinstance(spec, TuningJobSpec) else JobKind.CUSTOM_JOB
    )
