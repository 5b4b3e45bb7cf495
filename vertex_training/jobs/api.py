"""The typed job Args: what a user declares, built into the Vertex REST body one way.

Every class here is a frozen dataclass whose fields follow the Vertex API in snake_case
(``machine_type``, ``replica_count``, ``parameter_id``), and every field that can come
from another resource is a ``pulumi.Input``. Types are checked at construction; the
body a job's Args build is checked by the same rules as stack config when the job
resource is constructed (``validate_body``), so a wrong job fails ``pulumi preview``
before it is registered. Anything the Args do not type goes in ``extra_fields`` (the
API's camelCase names), merged into the body and checked by the real protos in the
provider's ``check``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pulumi

from vertex_training._checks import InvalidArgumentsError, check_fields, is_known
from vertex_training.jobs.finding import Finding
from vertex_training.jobs.model import JobKind
from vertex_training.jobs.placeholders import drop_unknown, with_placeholders
from vertex_training.jobs.rules.hardware import acknowledge
from vertex_training.jobs.rules.job import job_findings
from vertex_training.jobs.view import json_name, read_view, snake_case

__all__ = [
    "Accelerator",
    "CategoricalParameter",
    "ConvexStopping",
    "CustomJobArgs",
    "DecayCurveStopping",
    "DiscreteParameter",
    "DoubleParameter",
    "HyperparameterTuningJobArgs",
    "IntegerParameter",
    "JobPlatform",
    "MedianStopping",
    "Metric",
    "Parameter",
    "Scheduling",
    "Study",
    "TrialJob",
    "WorkerPool",
    "merge_fields",
]

DEFAULT_METRIC = "accuracy"
"""The metric this repo's trainer reports to the tuning service (cloudml-hypertune)."""


@runtime_checkable
class JobPlatform(Protocol):
    """What a job takes from the environment it runs in (``vt.TrainingPlatform`` is one)."""

    @property
    def environment(self) -> str:
        """``local``, ``dev`` or ``prod``: local runs jobs on this machine."""
        ...

    @property
    def project(self) -> pulumi.Input[str]: ...

    @property
    def region(self) -> str: ...

    @property
    def bucket_url(self) -> pulumi.Output[str]: ...

    @property
    def training_service_account(self) -> pulumi.Output[str] | None: ...

    @property
    def network(self) -> pulumi.Input[str] | None: ...

    @property
    def tensorboard(self) -> pulumi.Output[str] | None: ...

    @property
    def kms_key_name(self) -> pulumi.Input[str] | None:
        """CMEK the platform's jobs are encrypted with by default."""
        ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def local_root(self) -> Path | None: ...

    @property
    def strict_hardware_checks(self) -> bool: ...

    @property
    def acknowledged_hardware_checks(self) -> tuple[str, ...]: ...

    def default_image(self) -> pulumi.Output[str] | None:
        """The platform's only image, or None when it has none or several."""
        ...

    def resource_options(self) -> pulumi.ResourceOptions: ...


class _Checked:
    """Types checked at construction (``check_fields``)."""

    def __post_init__(self) -> None:
        check_fields(self)


# --------------------------------------------------------------------------- pools


@dataclass(frozen=True)
class Accelerator(_Checked):
    """GPUs (or TPU chips) attached to each replica: ``MachineSpec.acceleratorType``/``Count``."""

    type: pulumi.Input[str]
    """The API's enum name, e.g. ``NVIDIA_TESLA_V100``, ``NVIDIA_H100_80GB``, ``TPU_V5_LITEPOD``."""
    count: pulumi.Input[int] = 1


@dataclass(frozen=True, kw_only=True)
class WorkerPool(_Checked):
    """A ``WorkerPoolSpec``: the machine each replica runs on and the container it runs."""

    machine_type: pulumi.Input[str]
    accelerator: Accelerator | None = None
    replica_count: pulumi.Input[int] = 1
    image: pulumi.Input[str] | None = None
    """``containerSpec.imageUri``; None: the platform's image when it has exactly one. On a
    cloud platform, an image by digest (``platform.image("trainer")``)."""
    command: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None
    args: pulumi.Input[Sequence[pulumi.Input[str]]] = ()
    env: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    boot_disk_type: pulumi.Input[str] | None = None
    """None: the service's default for the machine family."""
    boot_disk_size_gb: pulumi.Input[int] | None = None
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other ``WorkerPoolSpec`` field (camelCase), merged into this pool's body,
    e.g. ``{"machineSpec": {"tpuTopology": "2x2"}}``."""

    def with_replicas(self, replica_count: pulumi.Input[int]) -> WorkerPool:
        """This pool with another replica count (e.g. the workers of a chief's pool)."""
        return dataclasses.replace(self, replica_count=replica_count)


@dataclass(frozen=True, kw_only=True)
class Scheduling(_Checked):
    """``Scheduling``: how long a job may run, on which capacity, and its restarts."""

    strategy: Literal["STANDARD", "SPOT", "FLEX_START"] | None = None
    """None: the service's default (on-demand). ``SPOT`` is cheaper and may be preempted."""
    timeout_seconds: pulumi.Input[float] | None = None
    """The job is cancelled after this long (the service default is 7 days)."""
    max_wait_seconds: pulumi.Input[float] | None = None
    """FLEX_START: how long to wait for capacity."""
    restart_job_on_worker_restart: bool = False
    disable_retries: bool = False


# --------------------------------------------------------------------------- studies


Scale = Literal["linear", "log", "reverse_log"]
_SCALES = {
    "linear": "UNIT_LINEAR_SCALE",
    "log": "UNIT_LOG_SCALE",
    "reverse_log": "UNIT_REVERSE_LOG_SCALE",
}


@dataclass(frozen=True)
class Metric(_Checked):
    """``StudySpec.MetricSpec``: what the trainer reports, and which way is better."""

    metric_id: str = DEFAULT_METRIC
    goal: Literal["maximize", "minimize"] = "maximize"


@dataclass(frozen=True)
class DoubleParameter(_Checked):
    """A real-valued hyperparameter in ``[min_value, max_value]``."""

    parameter_id: str
    """Also the trainer flag: trials run with ``--<parameter_id>=<value>``."""
    min_value: float
    max_value: float
    scale: Scale = "linear"


@dataclass(frozen=True)
class IntegerParameter(_Checked):
    """A whole-number hyperparameter in ``[min_value, max_value]``."""

    parameter_id: str
    min_value: int
    max_value: int
    scale: Scale = "linear"
    conditional: Mapping[int, Sequence[Parameter]] = field(default_factory=dict)
    """Child parameters searched only when this one takes the key's value."""


@dataclass(frozen=True)
class DiscreteParameter(_Checked):
    """A hyperparameter taking one of the listed numbers."""

    parameter_id: str
    values: Sequence[float]
    scale: Scale = "linear"
    conditional: Mapping[float, Sequence[Parameter]] = field(default_factory=dict)


@dataclass(frozen=True)
class CategoricalParameter(_Checked):
    """A hyperparameter taking one of the listed strings."""

    parameter_id: str
    values: Sequence[str]
    conditional: Mapping[str, Sequence[Parameter]] = field(default_factory=dict)
    """e.g. ``{"sgd": [DoubleParameter("momentum", 0, 1)]}``: momentum is searched only
    in trials whose optimizer is sgd."""


Parameter = DoubleParameter | IntegerParameter | DiscreteParameter | CategoricalParameter


@dataclass(frozen=True, kw_only=True)
class MedianStopping(_Checked):
    """Stop a trial whose objective falls below the running trials' median."""

    use_elapsed_duration: bool = False


@dataclass(frozen=True, kw_only=True)
class DecayCurveStopping(_Checked):
    """Stop a trial whose extrapolated curve will not beat the best one."""

    use_elapsed_duration: bool = False


@dataclass(frozen=True, kw_only=True)
class ConvexStopping(_Checked):
    """``convexAutomatedStoppingSpec``; unset fields take the service's defaults."""

    max_step_count: int | None = None
    min_step_count: int | None = None
    min_measurement_count: int | None = None
    learning_rate_parameter_name: str | None = None
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool | None = None


EarlyStopping = MedianStopping | DecayCurveStopping | ConvexStopping


@dataclass(frozen=True, kw_only=True)
class Study(_Checked):
    """``StudySpec``: what is tuned, towards what, and how trials are chosen."""

    parameters: Sequence[Parameter]
    metrics: Sequence[Metric] = (Metric(),)
    """The first metric chooses the best trial."""
    algorithm: Literal["bayesian", "grid", "random"] = "bayesian"
    """``bayesian`` is the service's default search."""
    measurement_selection: Literal["best", "last"] = "best"
    early_stopping: EarlyStopping | None = None


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True, kw_only=True)
class _RunFields(_Checked):
    """The fields of a ``CustomJobSpec``: a job's run, or each trial of a study."""

    chief: WorkerPool
    """Worker pool 0: exactly one replica (the chief)."""
    workers: WorkerPool | None = None
    parameter_servers: WorkerPool | None = None
    evaluator: WorkerPool | None = None
    scheduling: Scheduling | None = None
    service_account: pulumi.Input[str] | None = None
    """None: the platform's training service account."""
    network: pulumi.Input[str] | None = None
    """VPC network peered with Vertex; None: the platform's, if it has one."""
    base_output_directory: pulumi.Input[str] | None = None
    """None: ``<platform bucket>/jobs/<resource name>`` (``AIP_MODEL_DIR`` is its
    ``model/``)."""
    tensorboard: pulumi.Input[str] | None = None
    """A Vertex AI TensorBoard resource name; None: the platform's, if it has one (the
    job streams ``AIP_TENSORBOARD_LOG_DIR`` to it; it needs ``base_output_directory``)."""
    experiment: pulumi.Input[str] | None = None
    """A Vertex Experiment (``projects/P/locations/R/metadataStores/default/contexts/N``)
    the job's run is recorded in."""
    experiment_run: pulumi.Input[str] | None = None
    """The experiment run (a context of ``experiment``); needs ``experiment``."""
    enable_web_access: bool = False
    persistent_resource_id: pulumi.Input[str] | None = None
    """Run on this persistent resource's machines instead of new ones."""


@dataclass(frozen=True, kw_only=True)
class _JobFields(_Checked):
    platform: JobPlatform | None = None
    """Where the job runs and what it uses by default (image, bucket, service account,
    labels). None: give ``project``, ``region`` and each pool's ``image``."""
    display_name: pulumi.Input[str] | None = None
    """None: the resource name."""
    labels: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Added to the platform's labels."""
    kms_key_name: pulumi.Input[str] | None = None
    """CMEK for the job (``encryptionSpec.kmsKeyName``), in the job's region; None: the
    platform's."""
    project: str | None = None
    """Without a platform: the Google Cloud project the job runs in."""
    region: str | None = None
    """Without a platform: the Vertex region (``us-central1``)."""
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other field of the job's body, in the API's camelCase, merged in last:
    ``{"jobSpec": {"enableDashboardAccess": True}}``. The provider parses the whole body
    with the real protos, so an unknown field fails ``pulumi preview``."""
    expected_duration_seconds: float | None = None
    """How long one run is expected to take; cost estimates use it (else the timeout)."""
    strict_hardware_checks: bool | None = None
    """Refuse hardware the catalog does not know; None: the platform's setting."""
    acknowledged_hardware_checks: Sequence[str] = ()
    """Hardware check ids (from an error's "(check ...)") to warn about instead of refusing;
    added to the platform's."""
    wait: bool = True
    """``pulumi up`` waits for the job to end (like the SDK's ``run()``)."""
    wait_timeout_seconds: float = 24 * 3600
    poll_interval_seconds: float = 30
    delete_timeout_seconds: float = 1800


@dataclass(frozen=True, kw_only=True)
class CustomJobArgs(_RunFields, _JobFields):
    """A Vertex AI CustomJob: one run of a chief and, optionally, more pools."""

    def on(self, platform: JobPlatform) -> CustomJobArgs:
        """These Args on ``platform``."""
        return dataclasses.replace(self, platform=platform)


@dataclass(frozen=True, kw_only=True)
class TrialJob(_RunFields):
    """What each trial of a study runs (``trialJobSpec``)."""


@dataclass(frozen=True, kw_only=True)
class HyperparameterTuningJobArgs(_JobFields):
    """A Vertex AI HyperparameterTuningJob: trials of ``trial`` chosen by ``study``."""

    trial: TrialJob
    study: Study
    max_trial_count: pulumi.Input[int]
    parallel_trial_count: pulumi.Input[int]
    max_failed_trial_count: pulumi.Input[int] = 0
    """0: the service's default."""

    def on(self, platform: JobPlatform) -> HyperparameterTuningJobArgs:
        return dataclasses.replace(self, platform=platform)


JobArgs = CustomJobArgs | HyperparameterTuningJobArgs


# --------------------------------------------------------------------------- bodies


def _map(value: Any, fn: Any) -> Any:
    """``fn(value)``, or the Output of it when ``value`` is not known yet."""
    if isinstance(value, pulumi.Output):
        return value.apply(fn)
    if not is_known(value):
        return pulumi.Output.from_input(value).apply(fn)
    return fn(value)


def duration(seconds: float) -> str:
    """A protobuf Duration's JSON: ``3600s``, ``1.5s`` (fractions kept, never rounded)."""
    text = f"{float(seconds):.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def merge_fields(body: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` merged into ``body``: mappings merge key by key, anything else replaces."""
    out = dict(body)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = merge_fields(current, value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class JobContext:
    """What the environment fills in: resolved from a platform or the Args themselves."""

    kind: JobKind
    name: str
    region: str
    project: pulumi.Input[str]
    local: bool
    default_image: pulumi.Input[str] | None = None
    bucket_url: pulumi.Input[str] | None = None
    service_account: pulumi.Input[str] | None = None
    network: pulumi.Input[str] | None = None
    tensorboard: pulumi.Input[str] | None = None
    kms_key_name: pulumi.Input[str] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    local_root: Path | None = None
    strict: bool = False
    acknowledged: tuple[str, ...] = ()
    """Hardware check ids whose errors only warn (``acknowledge``)."""


_POOL_NAMES = ("chief", "workers", "parameter_servers", "evaluator")


def _listed(value: Any) -> Any:
    return list(value) if is_known(value) else value


def _pool_body(pool: WorkerPool, image: pulumi.Input[str] | None, where: str) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": pool.machine_type}
    if pool.accelerator is not None:
        machine["acceleratorType"] = pool.accelerator.type
        machine["acceleratorCount"] = pool.accelerator.count
    chosen = pool.image if pool.image is not None else image
    if chosen is None:
        raise InvalidArgumentsError(
            f"{where}.image: not set, and the platform has no single image to default to; "
            'valid: an image by digest, e.g. image=platform.image("trainer")'
        )
    container: dict[str, Any] = {"imageUri": chosen}
    if pool.command is not None:
        container["command"] = _listed(pool.command)
    if not is_known(pool.args) or pool.args:
        container["args"] = _listed(pool.args)
    if pool.env:
        container["env"] = [{"name": k, "value": v} for k, v in pool.env.items()]
    body: dict[str, Any] = {
        "machineSpec": machine,
        "replicaCount": _map(pool.replica_count, lambda n: str(int(n))),
        "containerSpec": container,
    }
    disk = {
        k: v
        for k, v in (
            ("bootDiskType", pool.boot_disk_type),
            ("bootDiskSizeGb", pool.boot_disk_size_gb),
        )
        if v is not None
    }
    if disk:
        body["diskSpec"] = disk
    return merge_fields(body, pool.extra_fields)


def _run_body(run: _RunFields, context: JobContext, where: str) -> dict[str, Any]:
    pools = [run.chief, run.workers, run.parameter_servers, run.evaluator]
    bodies: list[dict[str, Any]] = [
        _pool_body(pool, context.default_image, f"{where}.{name}") if pool is not None else {}
        for pool, name in zip(pools, _POOL_NAMES, strict=True)
    ]
    while bodies and not bodies[-1]:
        bodies.pop()  # an empty pool keeps a later one in its place
    spec: dict[str, Any] = {"workerPoolSpecs": bodies}
    output = run.base_output_directory
    if output is None and context.bucket_url is not None:
        output = _map(context.bucket_url, lambda url: f"{url.rstrip('/')}/jobs/{context.name}")
    if output is not None:
        spec["baseOutputDirectory"] = {"outputUriPrefix": output}
    if run.scheduling is not None:
        scheduling: dict[str, Any] = {}
        s = run.scheduling
        if s.timeout_seconds is not None:
            scheduling["timeout"] = _map(s.timeout_seconds, duration)
        if s.max_wait_seconds is not None:
            scheduling["maxWaitDuration"] = _map(s.max_wait_seconds, duration)
        if s.strategy is not None:
            scheduling["strategy"] = s.strategy
        if s.restart_job_on_worker_restart:
            scheduling["restartJobOnWorkerRestart"] = True
        if s.disable_retries:
            scheduling["disableRetries"] = True
        if scheduling:
            spec["scheduling"] = scheduling
    for key, value in (
        ("serviceAccount", run.service_account or context.service_account),
        ("network", run.network or context.network),
        ("tensorboard", run.tensorboard or context.tensorboard),
        ("persistentResourceId", run.persistent_resource_id),
        ("experiment", run.experiment),
        ("experimentRun", run.experiment_run),
    ):
        if value is not None:
            spec[key] = value
    if run.enable_web_access:
        spec["enableWebAccess"] = True
    return spec


def _parameter_body(param: Parameter) -> dict[str, Any]:
    body: dict[str, Any] = {"parameterId": param.parameter_id}
    if isinstance(param, DoubleParameter):
        body["doubleValueSpec"] = {"minValue": param.min_value, "maxValue": param.max_value}
    elif isinstance(param, IntegerParameter):
        body["integerValueSpec"] = {
            "minValue": str(param.min_value),
            "maxValue": str(param.max_value),
        }
    elif isinstance(param, DiscreteParameter):
        body["discreteValueSpec"] = {"values": [float(v) for v in param.values]}
    else:
        body["categoricalValueSpec"] = {"values": list(param.values)}
    if not isinstance(param, CategoricalParameter):
        body["scaleType"] = _SCALES[param.scale]
    if not isinstance(param, DoubleParameter) and param.conditional:
        # One entry per child parameter, with every parent value it is searched under.
        grouped: list[tuple[Parameter, list[Any]]] = []
        for value, params in param.conditional.items():
            for child in params:
                entry = next((g for g in grouped if g[0] == child), None)
                if entry is None:
                    grouped.append((child, [value]))
                else:
                    entry[1].append(value)
        children: list[dict[str, Any]] = []
        for child, values in grouped:
            parent: dict[str, Any]
            if isinstance(param, CategoricalParameter):
                parent = {"parentCategoricalValues": {"values": [str(v) for v in values]}}
            elif isinstance(param, IntegerParameter):
                parent = {"parentIntValues": {"values": [str(v) for v in values]}}
            else:
                parent = {"parentDiscreteValues": {"values": [float(v) for v in values]}}
            children.append({**parent, "parameterSpec": _parameter_body(child)})
        body["conditionalParameterSpecs"] = children
    return body


def _study_body(study: Study) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metrics": [{"metricId": m.metric_id, "goal": m.goal.upper()} for m in study.metrics],
        "parameters": [_parameter_body(p) for p in study.parameters],
    }
    if study.algorithm != "bayesian":  # unset is the service's Bayesian search
        body["algorithm"] = f"{study.algorithm.upper()}_SEARCH"
    body["measurementSelectionType"] = f"{study.measurement_selection.upper()}_MEASUREMENT"
    stopping = study.early_stopping
    if isinstance(stopping, ConvexStopping):
        convex = {
            json_name(f.name): getattr(stopping, f.name)
            for f in dataclasses.fields(stopping)
            if getattr(stopping, f.name) not in (None, False)
        }
        for key in ("maxStepCount", "minStepCount", "minMeasurementCount"):
            if key in convex:
                convex[key] = str(convex[key])
        body["convexAutomatedStoppingSpec"] = convex
    elif stopping is not None:
        key = (
            "medianAutomatedStoppingSpec"
            if isinstance(stopping, MedianStopping)
            else "decayCurveStoppingSpec"
        )
        body[key] = {"useElapsedDuration": True} if stopping.use_elapsed_duration else {}
    return body


def job_body(args: JobArgs, context: JobContext) -> dict[str, Any]:
    """The Vertex REST body ``args`` declare in ``context``, ``extra_fields`` merged in.

    Values not known yet (Outputs) stay in place: the engine resolves them, each where it
    is, so that ``check`` sees the rest of the body even in preview."""
    where = type(args).__name__
    body: dict[str, Any] = {
        "displayName": args.display_name if args.display_name is not None else context.name,
        "labels": {**context.labels, **args.labels},
    }
    kms_key_name = args.kms_key_name if args.kms_key_name is not None else context.kms_key_name
    if kms_key_name is not None:
        body["encryptionSpec"] = {"kmsKeyName": kms_key_name}
    if isinstance(args, CustomJobArgs):
        body["jobSpec"] = _run_body(args, context, where)
    else:
        body.update(
            studySpec=_study_body(args.study),
            maxTrialCount=args.max_trial_count,
            parallelTrialCount=args.parallel_trial_count,
            trialJobSpec=_run_body(args.trial, context, f"{where}.trial"),
        )
        if not is_known(args.max_failed_trial_count) or args.max_failed_trial_count:
            body["maxFailedTrialCount"] = args.max_failed_trial_count
    return merge_fields(body, args.extra_fields)


# --------------------------------------------------------------------------- validation

_POOL_FIELD = re.compile(r"workerPoolSpecs\[(\d+)\](?:\.(.*))?$")
_POOL_ARGUMENT = {
    "machineSpec.machineType": "machine_type",
    "machineSpec.acceleratorType": "accelerator.type",
    "machineSpec.acceleratorCount": "accelerator.count",
    "replicaCount": "replica_count",
    "containerSpec.imageUri": "image",
    "containerSpec.command": "command",
    "containerSpec.args": "args",
    "containerSpec.env": "env",
    "diskSpec.bootDiskType": "boot_disk_type",
    "diskSpec.bootDiskSizeGb": "boot_disk_size_gb",
}
_RUN_ARGUMENT = {
    "scheduling.timeout": "scheduling.timeout_seconds",
    "scheduling.maxWaitDuration": "scheduling.max_wait_seconds",
    "baseOutputDirectory.outputUriPrefix": "base_output_directory",
    "baseOutputDirectory": "base_output_directory",
}


def _snake_path(path: str) -> str:
    return ".".join(snake_case(part) for part in path.split(".")) if path else ""


def _run_argument(rest: str) -> str:
    pool = _POOL_FIELD.match(rest)
    if pool is not None:
        index, inner = int(pool[1]), pool[2] or ""
        name = _POOL_NAMES[index] if index < len(_POOL_NAMES) else f"pool[{index}]"
        key = _POOL_ARGUMENT.get(re.sub(r"\[\d+\]$", "", inner), _snake_path(inner))
        return f"{name}.{key}" if key else name
    return _RUN_ARGUMENT.get(rest, _snake_path(rest))


def argument_path(kind: JobKind, api_path: str) -> str:
    """The Python argument an API path comes from (``jobSpec.workerPoolSpecs[1]
    .machineSpec.acceleratorCount`` -> ``workers.accelerator.count``)."""
    head, _, rest = api_path.partition(".")
    if head == "jobSpec":
        return _run_argument(rest)
    if head == "trialJobSpec":
        return f"trial.{_run_argument(rest)}".rstrip(".")
    if head == "studySpec":
        rest = re.sub(r"\.(double|integer|discrete|categorical)ValueSpec", "", rest)
        return f"study.{_snake_path(rest)}".rstrip(".")
    if head == "encryptionSpec":
        return "kms_key_name"
    return snake_case(head) if head else ""


def extra_keys(extra: Mapping[str, Any], api_path: str) -> list[str] | None:
    """The keys (list indexes as digits) under ``extra_fields`` that set the API path, or
    None when ``extra_fields`` does not set it: each route spells them its own way."""
    node: Any = extra
    keys: list[str] = []
    for part in re.findall(r"[^.\[\]]+", api_path):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            keys.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            keys.append(part)
        else:
            return None
    return keys


def _in_extra(extra: Mapping[str, Any], api_path: str) -> str | None:
    """``extra_fields[...]`` when the API path was set through ``extra_fields``."""
    keys = extra_keys(extra, api_path)
    if keys is None:
        return None
    return "extra_fields" + "".join(f"[{k}]" if k.isdigit() else f"[{k!r}]" for k in keys)


def _in_pool_extra(args: JobArgs, api_path: str) -> str | None:
    """``chief.extra_fields[...]`` when a pool's ``extra_fields`` set the API path."""
    pool = _POOL_FIELD.search(api_path)
    if pool is None or int(pool[1]) >= len(_POOL_NAMES):
        return None
    run = args if isinstance(args, CustomJobArgs) else args.trial
    name = _POOL_NAMES[int(pool[1])]
    spec = getattr(run, name)
    where = name if isinstance(args, CustomJobArgs) else f"trial.{name}"
    inner = _in_extra(spec.extra_fields, pool[2] or "") if spec is not None else None
    return f"{where}.{inner}" if inner else None


def body_findings(context: JobContext, body: Mapping[str, Any]) -> list[Finding]:
    """Every finding on ``body`` by the rules (API paths); values not known yet (Outputs)
    stand in as placeholders and what they could change is left unjudged."""
    known, unknown = with_placeholders(body, lambda v: not is_known(v))
    view, unreadable = read_view(context.kind, known)
    findings: list[Finding] = list(unreadable)
    if view is not None and not unreadable:
        findings += job_findings(
            view,
            region=None if context.local else context.region,
            remote=not context.local,
            strict=context.strict,
        )
    return drop_unknown(acknowledge(findings, context.acknowledged), unknown)


def validate_body(
    args: JobArgs, context: JobContext, body: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(errors, warnings) on ``body`` by the rules stack config is checked with, each naming
    the Python argument and the Vertex field."""
    where = type(args).__name__
    errors: list[str] = []
    warnings: list[str] = []
    for finding in body_findings(context, body):
        argument = (
            _in_extra(args.extra_fields, finding.path)
            or _in_pool_extra(args, finding.path)
            or argument_path(context.kind, finding.path)
        )
        if finding.path == "region" and args.region is None:
            argument = "platform.region"  # the job runs where its platform is
        text = f"{where}.{argument}: {finding.message} (Vertex field {finding.path})"
        (warnings if finding.severity == "warning" else errors).append(text)
    return errors, warnings


def job_context(kind: JobKind, name: str, args: JobArgs) -> JobContext:
    """Where the job runs and what it uses, from its platform or its own Args."""
    where = type(args).__name__
    platform = args.platform
    if platform is None:
        missing = [k for k in ("project", "region") if getattr(args, k) is None]
        if missing:
            raise InvalidArgumentsError(
                f"{where}: no platform, so {' and '.join(missing)} must be set; valid: "
                "platform=<a vt.TrainingPlatform>, or project='my-project', region='us-central1'"
            )
        assert args.project is not None and args.region is not None
        return JobContext(
            kind=kind,
            name=name,
            region=args.region,
            project=args.project,
            local=False,
            strict=bool(args.strict_hardware_checks),
            acknowledged=tuple(args.acknowledged_hardware_checks),
        )
    for key in ("project", "region"):
        value = getattr(args, key)
        if value is not None and value != getattr(platform, key):
            raise InvalidArgumentsError(
                f"{where}.{key}: {value!r} differs from the platform's "
                f"{getattr(platform, key)!r}; valid: leave it unset (the platform's) or drop "
                "platform"
            )
    strict = (
        platform.strict_hardware_checks
        if args.strict_hardware_checks is None
        else args.strict_hardware_checks
    )
    return JobContext(
        kind=kind,
        name=name,
        region=platform.region,
        project=platform.project,
        local=platform.environment == "local",
        default_image=platform.default_image(),
        bucket_url=platform.bucket_url,
        service_account=platform.training_service_account,
        network=platform.network,
        tensorboard=platform.tensorboard,
        kms_key_name=platform.kms_key_name,
        labels=platform.labels,
        local_root=platform.local_root,
        strict=strict,
        acknowledged=(
            *platform.acknowledged_hardware_checks,
            *args.acknowledged_hardware_checks,
        ),
    )


def check_settings(args: JobArgs) -> list[str]:
    """Problems with how ``pulumi up`` waits (no Vertex field: named by argument)."""
    where = type(args).__name__
    return [
        f"{where}.{key}: must be a positive number of seconds, got {getattr(args, key)}"
        for key in ("wait_timeout_seconds", "poll_interval_seconds", "delete_timeout_seconds")
        if not getattr(args, key) > 0
    ]
