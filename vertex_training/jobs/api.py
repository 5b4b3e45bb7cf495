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

import contextlib
import contextvars
import copy
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import pulumi

from vertex_training._checks import InvalidArgumentsError, check_fields, is_known
from vertex_training.jobs.fields import caller_path, merge_fields, to_body, vertex
from vertex_training.jobs.finding import Finding
from vertex_training.jobs.placeholders import drop_unknown, with_placeholders
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.hardware import acknowledge, catalog
from vertex_training.jobs.rules.job import (
    job_findings,
    kms_findings,
    label_findings,
    parameter_findings,
    pool_findings,
    study_findings,
)
from vertex_training.jobs.view import read_parameter, read_pool, read_study, read_view

__all__ = [
    "SERVING_IMAGE",
    "Accelerator",
    "CategoricalParameter",
    "ConvexStopping",
    "CustomJobArgs",
    "DecayCurveStopping",
    "DiscreteParameter",
    "DnsPeeringConfig",
    "DoubleParameter",
    "HyperparameterTuningJobArgs",
    "IntegerParameter",
    "JobPlatform",
    "MedianStopping",
    "Metric",
    "NfsMount",
    "Parameter",
    "ParameterBase",
    "PscInterfaceConfig",
    "ReservationAffinity",
    "Scheduling",
    "Study",
    "TrialJob",
    "WorkerPool",
    "merge_fields",
]

DEFAULT_METRIC = "accuracy"
"""The metric this repo's trainer reports to the tuning service (cloudml-hypertune)."""


SERVING_IMAGE = "serving"
"""The platform image a ``Model`` serves with by default (docker/serving.Dockerfile): a
model's, never a pool's default (``JobPlatform.default_image`` leaves it out)."""


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
        """The platform's only image besides ``SERVING_IMAGE``, or None when it has none
        or several."""
        ...

    def resource_options(self) -> pulumi.ResourceOptions: ...


class _Checked:
    """Types checked at construction (``check_fields``); a positional call to a
    keyword-only class gets a message that says so (not a bare TypeError)."""

    def __post_init__(self) -> None:
        check_fields(self)


_WITH_THE_JOB: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "judged_with_the_job", default=False
)


@contextlib.contextmanager
def judged_with_the_job() -> Iterator[None]:
    """Within it, pools, studies and parameters are not judged where they are built but
    with the job that holds them: the stack config reader judges every job of a stack
    at once (every problem in one run, the stack's acknowledgements applied)."""
    token = _WITH_THE_JOB.set(True)
    try:
        yield
    finally:
        _WITH_THE_JOB.reset(token)


_LATER = object()
"""A value the job's platform fills in (a pool's image): unknown where the pool is built."""


def acknowledge_hint(where: str, check: str) -> str:
    """How to acknowledge ``check`` in the Args class ``where``, for the end of its error:
    a hardware catalog row can be out of date, and the message alone must say the way out."""
    return (
        f"where the hardware catalog (as of {catalog().as_of}) is out of date: "
        f"{where}(..., acknowledged_hardware_checks=[{check!r}]) only warns"
    )


def _refuse_wrong_everywhere(
    obj: Any,
    root: str,
    read: Callable[[Any, str], tuple[Any, list[Finding]]],
    rules: Callable[[Any], list[Finding]],
    *,
    filled_later: tuple[str, ...] = (),
    acknowledged: Sequence[str] = (),
) -> None:
    """Raise ``InvalidArgumentsError`` where ``obj`` (a pool, study or parameter) is built
    if the job rules find it wrong whatever job, platform and region it meets: its body
    read at the API path ``root`` and judged by the same rules the job is judged by, values
    not known yet (and the ``filled_later`` paths the platform may fill) left unjudged.
    Each line names the caller's own field; a hardware check ``acknowledged`` is not
    refused here (the job that runs ``obj`` reports it as a warning)."""
    if _WITH_THE_JOB.get():
        return
    body = to_body(obj)
    for path in filled_later:
        *parents, leaf = path.split(".")
        node = body
        for key in parents:
            node = node.setdefault(key, {})
        node.setdefault(leaf, _LATER)
    known, unknown = with_placeholders(body, lambda v: v is _LATER or not is_known(v), root)
    spec, unreadable = read(known, root)
    findings = unreadable or (rules(spec) if spec is not None else [])
    findings = acknowledge(drop_unknown(findings, unknown), acknowledged)
    errors = [f for f in findings if f.severity == "error"]
    if not errors:
        return
    cls = type(obj)
    lines = []
    for finding in errors:
        api_path = finding.path.removeprefix(root).lstrip(".")
        where = caller_path(cls, api_path) if api_path else ""
        lines.append(
            f"{cls.__name__}{'.' + where if where else ''}: {finding.message}"
            + (f" (Vertex field {api_path})" if api_path else "")
            + (f"; {acknowledge_hint(cls.__name__, finding.check)}" if finding.check else "")
        )
    raise InvalidArgumentsError("\n".join(lines))


def _keywords_only(cls: type[Any]) -> type[Any]:
    """``WorkerPool("n1-standard-4")`` raises an ``InvalidArgumentsError`` naming the
    keywords to use, instead of Python's bare ``TypeError``."""
    init = cls.__init__

    @functools.wraps(init)
    def keyword_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            names = [f.name for f in dataclasses.fields(cls) if f.init]
            raise InvalidArgumentsError(
                f"{cls.__name__}: takes keyword arguments only, got {len(args)} positional "
                f"({', '.join(repr(a) for a in args)[:80]}); valid: "
                f"{cls.__name__}({names[0]}=..., ...), keywords: {', '.join(names)}"
            )
        init(self, **kwargs)

    cls.__init__ = keyword_init  # type: ignore[method-assign]
    return cls


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


def _int64(value: Any) -> Any:
    """An int64 field's JSON: a string (``"3"``)."""
    return _map(value, lambda n: str(int(n)))


def _seconds(value: Any) -> Any:
    return _map(value, duration)


# --------------------------------------------------------------------------- pools


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class ReservationAffinity(_Checked):
    """``MachineSpec.reservationAffinity``: which Compute Engine reservations a pool's VMs
    may consume."""

    type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"] = field(
        metadata=vertex("reservationAffinityType")
    )
    key: str | None = field(default=None, metadata=vertex("key"))
    """SPECIFIC_RESERVATION: the label key, ``compute.googleapis.com/reservation-name``."""
    values: Sequence[str] = field(default=(), metadata=vertex("values"))
    """SPECIFIC_RESERVATION: the reservations, ``projects/P/zones/Z/reservations/R``."""


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class NfsMount(_Checked):
    """``WorkerPoolSpec.nfsMounts[]``: an NFS share mounted in each replica."""

    server: str = field(metadata=vertex("server"))
    """IP address of the NFS server."""
    path: str = field(metadata=vertex("path"))
    """Source path exported by the server (starts with ``/``)."""
    mount_point: str = field(metadata=vertex("mountPoint"))
    """Mounted at ``/mnt/nfs/<mount_point>`` in the container."""


@dataclass(frozen=True)
class Accelerator(_Checked):
    """GPUs (or TPU chips) attached to each replica: ``MachineSpec.acceleratorType``/``Count``."""

    type: pulumi.Input[str] = field(metadata=vertex("acceleratorType"))
    """The API's enum name, e.g. ``NVIDIA_TESLA_V100``, ``NVIDIA_H100_80GB``, ``TPU_V5_LITEPOD``."""
    count: pulumi.Input[int] = field(default=1, metadata=vertex("acceleratorCount"))
    tpu_topology: pulumi.Input[str] | None = field(
        default=None, kw_only=True, metadata=vertex("tpuTopology")
    )
    """TPUs: the slice's topology (``MachineSpec.tpuTopology``), e.g. ``2x2``."""


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class WorkerPool(_Checked):
    """A ``WorkerPoolSpec``: the machine each replica runs on and the container it runs."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _refuse_wrong_everywhere(
            self,
            "workerPoolSpecs[0]",
            read_pool,
            pool_findings,
            filled_later=("containerSpec.imageUri",),
            acknowledged=self.acknowledged_hardware_checks,
        )

    machine_type: pulumi.Input[str] = field(metadata=vertex("machineSpec.machineType"))
    accelerator: Accelerator | None = field(default=None, metadata=vertex("machineSpec"))
    replica_count: pulumi.Input[int] = field(
        default=1, metadata=vertex("replicaCount", encode=_int64)
    )
    image: pulumi.Input[str] | None = field(default=None, metadata=vertex("containerSpec.imageUri"))
    """``containerSpec.imageUri``; None: the platform's image when it has exactly one. On a
    cloud platform, an image by digest (``platform.image("trainer")``)."""
    command: pulumi.Input[Sequence[pulumi.Input[str]]] | None = field(
        default=None, metadata=vertex("containerSpec.command")
    )
    args: pulumi.Input[Sequence[pulumi.Input[str]]] = field(
        default=(), metadata=vertex("containerSpec.args")
    )
    env: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict,
        metadata=vertex(
            "containerSpec.env",
            encode=lambda env: [{"name": k, "value": v} for k, v in env.items()],
        ),
    )
    boot_disk_type: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("diskSpec.bootDiskType")
    )
    """None: the service's default for the machine family."""
    boot_disk_size_gb: pulumi.Input[int] | None = field(
        default=None, metadata=vertex("diskSpec.bootDiskSizeGb")
    )
    reservation_affinity: ReservationAffinity | None = field(
        default=None, metadata=vertex("machineSpec.reservationAffinity")
    )
    """None: the service's default (consume any matching reservation)."""
    nfs_mounts: Sequence[NfsMount] = field(default=(), metadata=vertex("nfsMounts"))
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other ``WorkerPoolSpec`` field (camelCase), merged into this pool's body,
    e.g. ``{"lustreMounts": [...]}``."""
    acknowledged_hardware_checks: Sequence[str] = ()
    """Hardware check ids (from an error's "(check ...)") to warn about instead of refusing,
    for a catalog row that is out of date: not refused where the pool is built, and only
    warned about by the job that runs the pool. Never part of the Vertex body."""

    def with_replicas(self, replica_count: pulumi.Input[int]) -> WorkerPool:
        """This pool with another replica count (e.g. the workers of a chief's pool)."""
        return dataclasses.replace(self, replica_count=replica_count)


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class Scheduling(_Checked):
    """``Scheduling``: how long a job may run, on which capacity, and its restarts."""

    strategy: Literal["STANDARD", "SPOT", "FLEX_START"] | None = field(
        default=None, metadata=vertex("strategy")
    )
    """None: the service's default (on-demand). ``SPOT`` is cheaper and may be preempted."""
    timeout_seconds: pulumi.Input[float] | None = field(
        default=None, metadata=vertex("timeout", encode=_seconds)
    )
    """The job is cancelled after this long (the service default is 7 days)."""
    max_wait_seconds: pulumi.Input[float] | None = field(
        default=None, metadata=vertex("maxWaitDuration", encode=_seconds)
    )
    """FLEX_START: how long to wait for capacity."""
    restart_job_on_worker_restart: bool = field(
        default=False, metadata=vertex("restartJobOnWorkerRestart")
    )
    disable_retries: bool = field(default=False, metadata=vertex("disableRetries"))


# --------------------------------------------------------------------------- studies


Scale = Literal["linear", "log", "reverse_log"]
_SCALES = {
    "linear": "UNIT_LINEAR_SCALE",
    "log": "UNIT_LOG_SCALE",
    "reverse_log": "UNIT_REVERSE_LOG_SCALE",
}


def _scale(scale: Scale) -> str:
    return _SCALES[scale]


@dataclass(frozen=True)
class Metric(_Checked):
    """``StudySpec.MetricSpec``: what the trainer reports, and which way is better."""

    metric_id: str = field(default=DEFAULT_METRIC, metadata=vertex("metricId"))
    goal: Literal["maximize", "minimize"] = field(
        default="maximize", metadata=vertex("goal", encode=str.upper)
    )


class ParameterBase(_Checked):
    """What every hyperparameter has: ``parameter_id``, also the trainer flag (trials run
    with ``--<parameter_id>=<value>``)."""

    parameter_id: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _refuse_wrong_everywhere(
            self,
            "parameter",
            read_parameter,
            lambda spec: parameter_findings(spec, "parameter"),
        )


def _conditional(parent_key: str, cast: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``conditional`` as ``conditionalParameterSpecs``: one entry per child parameter,
    with every parent value it is searched under."""

    def encode(conditional: Mapping[Any, Sequence[ParameterBase]]) -> list[dict[str, Any]]:
        grouped: list[tuple[ParameterBase, list[Any]]] = []
        for value, params in conditional.items():
            for child in params:
                entry = next((g for g in grouped if g[0] == child), None)
                if entry is None:
                    grouped.append((child, [value]))
                else:
                    entry[1].append(value)
        return [
            {parent_key: {"values": [cast(v) for v in values]}, "parameterSpec": to_body(child)}
            for child, values in grouped
        ]

    return encode


@dataclass(frozen=True)
class DoubleParameter(ParameterBase):
    """A real-valued hyperparameter in ``[min_value, max_value]``."""

    parameter_id: str = field(metadata=vertex("parameterId"))
    """Also the trainer flag: trials run with ``--<parameter_id>=<value>``."""
    min_value: float = field(metadata=vertex("doubleValueSpec.minValue"))
    max_value: float = field(metadata=vertex("doubleValueSpec.maxValue"))
    scale: Scale = field(default="linear", metadata=vertex("scaleType", encode=_scale))


@dataclass(frozen=True)
class IntegerParameter(ParameterBase):
    """A whole-number hyperparameter in ``[min_value, max_value]``."""

    parameter_id: str = field(metadata=vertex("parameterId"))
    min_value: int = field(metadata=vertex("integerValueSpec.minValue", encode=str))
    max_value: int = field(metadata=vertex("integerValueSpec.maxValue", encode=str))
    scale: Scale = field(default="linear", metadata=vertex("scaleType", encode=_scale))
    conditional: Mapping[int, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex("conditionalParameterSpecs", encode=_conditional("parentIntValues", str)),
    )
    """Child parameters searched only when this one takes the key's value."""


@dataclass(frozen=True)
class DiscreteParameter(ParameterBase):
    """A hyperparameter taking one of the listed numbers."""

    parameter_id: str = field(metadata=vertex("parameterId"))
    values: Sequence[float] = field(
        metadata=vertex("discreteValueSpec.values", encode=lambda vs: [float(v) for v in vs])
    )
    scale: Scale = field(default="linear", metadata=vertex("scaleType", encode=_scale))
    conditional: Mapping[float, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex(
            "conditionalParameterSpecs", encode=_conditional("parentDiscreteValues", float)
        ),
    )


@dataclass(frozen=True)
class CategoricalParameter(ParameterBase):
    """A hyperparameter taking one of the listed strings."""

    parameter_id: str = field(metadata=vertex("parameterId"))
    values: Sequence[str] = field(metadata=vertex("categoricalValueSpec.values", encode=list))
    conditional: Mapping[str, Sequence[Parameter]] = field(
        default_factory=dict,
        metadata=vertex(
            "conditionalParameterSpecs", encode=_conditional("parentCategoricalValues", str)
        ),
    )
    """e.g. ``{"sgd": [DoubleParameter("momentum", 0, 1)]}``: momentum is searched only
    in trials whose optimizer is sgd."""


Parameter = DoubleParameter | IntegerParameter | DiscreteParameter | CategoricalParameter


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class MedianStopping(_Checked):
    """Stop a trial whose objective falls below the running trials' median."""

    VERTEX_KEY: ClassVar[str] = "medianAutomatedStoppingSpec"
    use_elapsed_duration: bool = field(default=False, metadata=vertex("useElapsedDuration"))


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class DecayCurveStopping(_Checked):
    """Stop a trial whose extrapolated curve will not beat the best one."""

    VERTEX_KEY: ClassVar[str] = "decayCurveStoppingSpec"
    use_elapsed_duration: bool = field(default=False, metadata=vertex("useElapsedDuration"))


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class ConvexStopping(_Checked):
    """``convexAutomatedStoppingSpec``; unset fields take the service's defaults."""

    VERTEX_KEY: ClassVar[str] = "convexAutomatedStoppingSpec"
    max_step_count: int | None = field(default=None, metadata=vertex("maxStepCount", encode=str))
    min_step_count: int | None = field(default=None, metadata=vertex("minStepCount", encode=str))
    min_measurement_count: int | None = field(
        default=None, metadata=vertex("minMeasurementCount", encode=str)
    )
    learning_rate_parameter_name: str | None = field(
        default=None, metadata=vertex("learningRateParameterName")
    )
    use_elapsed_duration: bool = field(default=False, metadata=vertex("useElapsedDuration"))
    update_all_stopped_trials: bool | None = field(
        default=None, metadata=vertex("updateAllStoppedTrials")
    )


EarlyStopping = MedianStopping | DecayCurveStopping | ConvexStopping


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class Study(_Checked):
    """``StudySpec``: what is tuned, towards what, and how trials are chosen."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _refuse_wrong_everywhere(self, "studySpec", read_study, study_findings)

    parameters: Sequence[Parameter] = field(metadata=vertex("parameters", keep_empty=True))
    metrics: Sequence[Metric] = field(default=(Metric(),), metadata=vertex("metrics"))
    """The first metric chooses the best trial."""
    algorithm: Literal["bayesian", "grid", "random"] = field(
        default="bayesian",
        metadata=vertex("algorithm", encode=lambda a: f"{a.upper()}_SEARCH", omit=("bayesian",)),
    )
    """``bayesian`` is the service's default search."""
    measurement_selection: Literal["best", "last"] = field(
        default="best",
        metadata=vertex("measurementSelectionType", encode=lambda m: f"{m.upper()}_MEASUREMENT"),
    )
    early_stopping: EarlyStopping | None = field(default=None, metadata=vertex(""))


# --------------------------------------------------------------------------- jobs


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class DnsPeeringConfig(_Checked):
    """``PscInterfaceConfig.dnsPeeringConfigs[]``: a DNS zone resolved in another network."""

    domain: str = field(metadata=vertex("domain"))
    target_project: str = field(metadata=vertex("targetProject"))
    target_network: str = field(metadata=vertex("targetNetwork"))


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class PscInterfaceConfig(_Checked):
    """``CustomJobSpec.pscInterfaceConfig``: reach a VPC through a Private Service Connect
    interface instead of VPC peering (``network``)."""

    network_attachment: pulumi.Input[str] = field(metadata=vertex("networkAttachment"))
    """``projects/P/regions/R/networkAttachments/N`` (or its name in the job's project)."""
    dns_peering_configs: Sequence[DnsPeeringConfig] = field(
        default=(), metadata=vertex("dnsPeeringConfigs")
    )


@dataclass(frozen=True, kw_only=True)
class _RunFields(_Checked):
    """The fields of a ``CustomJobSpec``: a job's run, or each trial of a study."""

    chief: WorkerPool = field(metadata=vertex("workerPoolSpecs[0]"))
    """Worker pool 0: exactly one replica (the chief)."""
    workers: WorkerPool | None = field(default=None, metadata=vertex("workerPoolSpecs[1]"))
    parameter_servers: WorkerPool | None = field(
        default=None, metadata=vertex("workerPoolSpecs[2]")
    )
    evaluator: WorkerPool | None = field(default=None, metadata=vertex("workerPoolSpecs[3]"))
    scheduling: Scheduling | None = field(default=None, metadata=vertex("scheduling"))
    service_account: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("serviceAccount")
    )
    """None: the platform's training service account."""
    network: pulumi.Input[str] | Literal[False] | None = field(
        default=None, metadata=vertex("network")
    )
    """VPC network peered with Vertex; None: the platform's, if it has one; False: none
    (the job does not join the platform's network)."""
    base_output_directory: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("baseOutputDirectory.outputUriPrefix")
    )
    """None: ``<platform bucket>/jobs/<resource name>`` (``AIP_MODEL_DIR`` is its
    ``model/``)."""
    tensorboard: pulumi.Input[str] | None = field(default=None, metadata=vertex("tensorboard"))
    """A Vertex AI TensorBoard resource name; None: the platform's, if it has one (the
    job streams ``AIP_TENSORBOARD_LOG_DIR`` to it; it needs ``base_output_directory``)."""
    experiment: pulumi.Input[str] | None = field(default=None, metadata=vertex("experiment"))
    """A Vertex Experiment (``projects/P/locations/R/metadataStores/default/contexts/N``)
    the job's run is recorded in."""
    experiment_run: pulumi.Input[str] | None = field(default=None, metadata=vertex("experimentRun"))
    """The experiment run (a context of ``experiment``); needs ``experiment``."""
    enable_web_access: bool = field(default=False, metadata=vertex("enableWebAccess"))
    """An interactive shell into each replica (``webAccessUris``)."""
    enable_dashboard_access: bool = field(default=False, metadata=vertex("enableDashboardAccess"))
    """The training container's dashboard over HTTPS (``webAccessUris``)."""
    persistent_resource_id: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("persistentResourceId")
    )
    """Run on this persistent resource's machines instead of new ones."""
    psc_interface_config: PscInterfaceConfig | None = field(
        default=None, metadata=vertex("pscInterfaceConfig")
    )
    """Reach a VPC through a Private Service Connect interface."""
    reserved_ip_ranges: Sequence[str] = field(default=(), metadata=vertex("reservedIpRanges"))
    """Names of the ranges reserved for Vertex in ``network`` that the job's VMs take
    their addresses from (``CustomJobSpec.reservedIpRanges``); empty: any of them."""


@dataclass(frozen=True, kw_only=True)
class _JobFields(_Checked):
    platform: JobPlatform | None = None
    """Where the job runs and what it uses by default (image, bucket, service account,
    labels). None: give ``project``, ``region`` and each pool's ``image``."""
    display_name: pulumi.Input[str] | None = field(default=None, metadata=vertex("displayName"))
    """None: the resource name."""
    labels: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict, metadata=vertex("labels", keep_empty=True)
    )
    """Added to the platform's labels."""
    kms_key_name: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("encryptionSpec.kmsKeyName")
    )
    """CMEK for the job (``encryptionSpec.kmsKeyName``), in the job's region; None: the
    platform's."""
    project: str | None = None
    """Without a platform: the Google Cloud project the job runs in."""
    region: str | None = None
    """Without a platform: the Vertex region (``us-central1``)."""
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other field of the job's body, in the API's camelCase, merged in last:
    ``{"jobSpec": {"models": [...]}}``. The provider parses the whole body with the real
    protos, so an unknown field fails ``pulumi preview``."""
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

    def __post_init__(self) -> None:
        super().__post_init__()
        problems = check_settings(self)
        if problems:
            raise InvalidArgumentsError("\n".join(problems))


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class CustomJobArgs(_RunFields, _JobFields):
    """A Vertex AI CustomJob: one run of a chief and, optionally, more pools."""

    VERTEX_NESTED: ClassVar[dict[type, str]] = {_RunFields: "jobSpec"}

    def on(self, platform: JobPlatform) -> CustomJobArgs:
        """These Args on ``platform``."""
        return _carry_judgement(self, dataclasses.replace(self, platform=platform))


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class TrialJob(_RunFields):
    """What each trial of a study runs (``trialJobSpec``)."""


@_keywords_only
@dataclass(frozen=True, kw_only=True)
class HyperparameterTuningJobArgs(_JobFields):
    """A Vertex AI HyperparameterTuningJob: trials of ``trial`` chosen by ``study``."""

    trial: TrialJob = field(metadata=vertex("trialJobSpec"))
    study: Study = field(metadata=vertex("studySpec"))
    max_trial_count: pulumi.Input[int] = field(metadata=vertex("maxTrialCount"))
    parallel_trial_count: pulumi.Input[int] = field(metadata=vertex("parallelTrialCount"))
    max_failed_trial_count: pulumi.Input[int] = field(
        default=0, metadata=vertex("maxFailedTrialCount", omit=(0,))
    )
    """0: the service's default."""

    def on(self, platform: JobPlatform) -> HyperparameterTuningJobArgs:
        return _carry_judgement(self, dataclasses.replace(self, platform=platform))


JobArgs = CustomJobArgs | HyperparameterTuningJobArgs


def _carry_judgement(old: Any, new: Any) -> Any:
    """``new`` (``old`` on a platform) with the judgement of ``old``'s body, if any."""
    judgement = old.__dict__.get(_JUDGEMENT)
    if judgement is not None:
        object.__setattr__(new, _JUDGEMENT, judgement)
    return new


# --------------------------------------------------------------------------- bodies


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


POOL_NAMES = ("chief", "workers", "parameter_servers", "evaluator")
_POOL_NAMES = POOL_NAMES


def _with(obj: Any, **changes: Any) -> Any:
    """``obj`` with ``changes``, not checked again (the defaults come from the platform)."""
    out = copy.copy(obj)
    for key, value in changes.items():
        object.__setattr__(out, key, value)
    return out


def _resolved_run(run: Any, context: JobContext, where: str) -> Any:
    """``run`` with what the environment provides filled in where the caller left it unset."""
    changes: dict[str, Any] = {}
    for name in _POOL_NAMES:
        pool = getattr(run, name)
        if pool is None or pool.image is not None:
            continue
        if context.default_image is None:
            raise InvalidArgumentsError(
                f"{where}.{name}.image: not set, and the platform has no single image to "
                'default to; valid: an image by digest, e.g. image=platform.image("trainer")'
            )
        changes[name] = _with(pool, image=context.default_image)
    if run.base_output_directory is None and context.bucket_url is not None:
        changes["base_output_directory"] = _map(
            context.bucket_url, lambda url: f"{url.rstrip('/')}/jobs/{context.name}"
        )
    for key in ("service_account", "network", "tensorboard"):
        if getattr(run, key) is None and getattr(context, key) is not None:
            changes[key] = getattr(context, key)
    return _with(run, **changes) if changes else run


def job_body(args: JobArgs, context: JobContext) -> dict[str, Any]:
    """The Vertex REST body ``args`` declare in ``context``, ``extra_fields`` merged in.

    Values not known yet (Outputs) stay in place: the engine resolves them, each where it
    is, so that ``check`` sees the rest of the body even in preview."""
    where = type(args).__name__
    changes: dict[str, Any] = {
        "display_name": args.display_name if args.display_name is not None else context.name,
        "labels": {**context.labels, **args.labels},
        "kms_key_name": args.kms_key_name
        if args.kms_key_name is not None
        else context.kms_key_name,
    }
    if isinstance(args, CustomJobArgs):
        resolved = _resolved_run(_with(args, **changes), context, where)
    else:
        changes["trial"] = _resolved_run(args.trial, context, f"{where}.trial")
        resolved = _with(args, **changes)
    return to_body(resolved)


# --------------------------------------------------------------------------- validation

_POOL_FIELD = re.compile(r"workerPoolSpecs\[(\d+)\](?:\.(.*))?$")


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


def _judge(context: JobContext, body: Mapping[str, Any]) -> tuple[list[Finding], list[str], bool]:
    """(findings before acknowledgements, the paths of values not known yet, whether the
    view could be read): the rules over ``body``."""
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
    return findings, unknown, view is not None and not unreadable


def body_findings(context: JobContext, body: Mapping[str, Any]) -> list[Finding]:
    """Every finding on ``body`` by the rules (API paths); values not known yet (Outputs)
    stand in as placeholders and what they could change is left unjudged."""
    findings, unknown, _ = _judge(context, body)
    return drop_unknown(acknowledge(findings, context.acknowledged), unknown)


# ----------------------------------------------------------------- judged once
#
# A stack's job is judged where the stack is read (``declarations``: every problem with
# its YAML path, before anything is registered), with stand-ins for what its platform
# will provide. Its Args carry that judgement to the job resource, which takes it instead
# of judging the same body again when its platform is, for the rules, the same
# environment: same region, locality and strictness, and each value the platform puts in
# the body the same, or not known yet where the stand-in was (the resource would leave
# the value unjudged; the stand-in is valid), or unset where no rule but its own reads
# whether it is set. The platform's labels were not known: the label rule (the only one
# that reads labels) judges the body's labels; and so does the key rule a platform's CMEK
# key. Anything else: judged again, in full.

_JUDGEMENT = "_stack_judgement"
"""The attribute of a stack job's Args that holds its ``_Judgement``."""

_KMS = "encryptionSpec.kmsKeyName"
_STAND_IN_EQUALS_UNSET = frozenset({_KMS, "serviceAccount", "tensorboard"})
"""Environment fields whose presence no rule reads but their own (the job's tensorboard:
only with an output directory, which it needs): unset there and set here judge alike.
A CMEK key the reader did not know is judged here, by the key rule."""


@dataclass(frozen=True)
class _Judgement:
    """What the stack reader found on a job's body (before acknowledgements) and what it
    judged it with."""

    fields: tuple[Any, ...]
    """The Args' field values, platform aside: another value is another job."""
    context: JobContext
    environment: Mapping[str, Any]
    """The body's values at ``_environment_paths``, as judged."""
    findings: tuple[Finding, ...]


_MISSING = object()


def _fields_of(args: JobArgs) -> tuple[Any, ...]:
    return tuple(getattr(args, f.name) for f in dataclasses.fields(args) if f.name != "platform")


@functools.cache
def _environment_paths(kind: JobKind) -> tuple[str, ...]:
    """The body fields a job's environment may fill (``job_body``), besides its labels."""
    run = "jobSpec" if kind is JobKind.CUSTOM_JOB else "trialJobSpec"
    return (
        "displayName",
        "encryptionSpec.kmsKeyName",
        *(f"{run}.{key}" for key in ("serviceAccount", "network", "tensorboard")),
        f"{run}.baseOutputDirectory.outputUriPrefix",
        *(f"{run}.workerPoolSpecs[{i}].containerSpec.imageUri" for i in range(len(POOL_NAMES))),
    )


@functools.cache
def _steps(path: str) -> tuple[str | int, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path))


def _at(body: Mapping[str, Any], path: str) -> Any:
    """The value at the API path ``path`` of ``body``; ``_MISSING`` where none (or None)."""
    node: Any = body
    for step in _steps(path):
        if isinstance(step, str) and isinstance(node, Mapping):
            node = node.get(step)
        elif isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        else:
            return _MISSING
        if node is None:
            return _MISSING
    return node


def judge_declared(args: JobArgs, context: JobContext) -> list[Finding]:
    """``body_findings`` on the body ``args`` declare in ``context`` (the stack reader's
    stand-ins), the judgement kept on ``args`` for the job resource."""
    body = job_body(args, context)
    findings, unknown, readable = _judge(context, body)
    if readable and not unknown:
        judgement = _Judgement(
            fields=_fields_of(args),
            context=context,
            environment={p: _at(body, p) for p in _environment_paths(context.kind)},
            findings=tuple(findings),
        )
        object.__setattr__(args, _JUDGEMENT, judgement)
    return drop_unknown(acknowledge(findings, context.acknowledged), unknown)


def _same_environment(judgement: _Judgement, context: JobContext, body: Mapping[str, Any]) -> bool:
    """The rules find on ``body`` in ``context`` what they found on the judged body (the
    labels aside): same region, locality and strictness, and at each environment field the
    same value; or, here, a value not known yet (left unjudged) where the judged one was
    found right; or, for a field whose presence no other rule reads, unset on one side
    and, on the other, unjudged or found right (or, for a CMEK key, judged by its rule)."""
    then = judgement.context
    if (then.kind, then.local, then.strict) != (context.kind, context.local, context.strict):
        return False
    if not context.local and then.region != context.region:
        return False
    run = "jobSpec" if context.kind is JobKind.CUSTOM_JOB else "trialJobSpec"
    output = f"{run}.baseOutputDirectory.outputUriPrefix"
    both_output = (
        judgement.environment[output] is not _MISSING and _at(body, output) is not _MISSING
    )
    for path, was in judgement.environment.items():
        now = _at(body, path)
        if now is _MISSING and was is _MISSING:
            continue
        if now is not _MISSING and was is not _MISSING:
            if not is_known(now):
                same = not _judged_at(judgement, path)
            else:
                same = is_known(was) and type(now) is type(was) and now == was
        else:
            leaf = path.removeprefix(f"{run}.")
            same = (
                leaf in _STAND_IN_EQUALS_UNSET
                and (leaf != "tensorboard" or both_output)
                and (now is _MISSING or not is_known(now) or (path == _KMS and type(now) is str))
                and not _judged_at(judgement, path)
            )
        if not same:
            return False
    return True


def _judged_at(judgement: _Judgement, path: str) -> bool:
    return any(
        f.path == path or f.path.startswith((f"{path}.", f"{path}[")) for f in judgement.findings
    )


def _is_label(path: str) -> bool:
    return path == "labels" or path.startswith("labels.")


def _judged_where_declared(
    args: JobArgs, context: JobContext, body: Mapping[str, Any]
) -> list[Finding] | None:
    """``body_findings(context, body)`` from the judgement ``args`` carry from the stack
    reader, with the body's labels judged; None when it does not apply here."""
    judgement: _Judgement | None = getattr(args, _JUDGEMENT, None)
    if judgement is None:
        return None
    fields = _fields_of(args)
    if len(fields) != len(judgement.fields) or any(
        a is not b for a, b in zip(fields, judgement.fields, strict=True)
    ):
        return None
    labels = body.get("labels", {})
    if not isinstance(labels, Mapping) or not all(
        type(k) is str and type(v) is str for k, v in labels.items()
    ):
        return None
    if not _same_environment(judgement, context, body):
        return None
    then = judgement.findings
    key = _at(body, _KMS)
    found = [
        *(f for f in then if f.path == "displayName"),
        *label_findings(tuple(labels.items())),
        *(
            kms_findings(key, None if context.local else context.region)
            if judgement.environment[_KMS] is _MISSING and type(key) is str
            else ()
        ),
        *(f for f in then if f.path != "displayName" and not _is_label(f.path)),
    ]
    return acknowledge(found, context.acknowledged)


def validate_body(
    args: JobArgs, context: JobContext, body: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(errors, warnings) on ``body`` by the rules stack config is checked with, each naming
    the Python argument and the Vertex field. A stack job's body was judged where the
    stack was read: that judgement stands where it applies (``_judged_where_declared``)."""
    where = type(args).__name__
    errors: list[str] = []
    warnings: list[str] = []
    findings = _judged_where_declared(args, context, body)
    if findings is None:
        findings = body_findings(context, body)
    for finding in findings:
        argument = (
            _in_extra(args.extra_fields, finding.path)
            or _in_pool_extra(args, finding.path)
            or caller_path(type(args), finding.path)
            or finding.path
        )
        if finding.path == "region" and args.region is None:
            argument = "platform.region"  # the job runs where its platform is
        text = f"{where}.{argument}: {finding.message} (Vertex field {finding.path})"
        if finding.severity == "warning":
            warnings.append(text)
        else:
            errors.append(
                text + (f"; {acknowledge_hint(where, finding.check)}" if finding.check else "")
            )
    return errors, warnings


def acknowledged_checks(args: JobArgs) -> tuple[str, ...]:
    """The hardware check ids a job's own Args acknowledge: the job's, then its pools'."""
    run = args if isinstance(args, CustomJobArgs) else args.trial
    pools = [getattr(run, name) for name in POOL_NAMES]
    ids = [*args.acknowledged_hardware_checks]
    ids += [
        check for pool in pools if pool is not None for check in pool.acknowledged_hardware_checks
    ]
    return tuple(dict.fromkeys(ids))


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
            acknowledged=acknowledged_checks(args),
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
        acknowledged=(*platform.acknowledged_hardware_checks, *acknowledged_checks(args)),
    )


def check_settings(args: _JobFields) -> list[str]:
    """Problems with how ``pulumi up`` waits (no Vertex field: named by argument)."""
    where = type(args).__name__
    return [
        f"{where}.{key}: must be a positive number of seconds, got {getattr(args, key)}"
        for key in ("wait_timeout_seconds", "poll_interval_seconds", "delete_timeout_seconds")
        if not getattr(args, key) > 0
    ]
