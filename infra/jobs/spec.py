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
from collections.abc import Mapping
from dataclasses import dataclass, field


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


JobSpec = CustomJobSpec | TuningJobSpec


@dataclass(frozen=True)
class TrialRecord:
    trial_id: str
    """Vertex trial ids are strings counting from "1"."""
    state: str
    """Vertex Trial.State name: REQUESTED, ACTIVE, STOPPING, SUCCEEDED, INFEASIBLE."""
    parameters: tuple[tuple[str, float | int | str], ...]
    final_metric: float | None


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
