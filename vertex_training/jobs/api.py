"""The typed job Args: what a user declares, built into the Vertex REST body one way.

Every class here is a frozen dataclass whose fields follow the Vertex API in snake_case
(``machine_type``, ``replica_count``, ``parameter_id``), and every field that can come
from another resource is a ``pulumi.Input``. Types are checked at construction. Each
rule runs once, where its inputs are first known: what a pool, study or parameter must be
where each is built (``pools``, ``studies``); the rules of a job on its platform (region,
hardware catalog, labels, key, images by digest) where the job meets its platform
(``.on(platform)``, or ``platform=`` at construction; without one, where its resource is
declared), so a wrong job fails before it is registered. Anything the Args do not type
goes in ``extra_fields`` (the API's camelCase names), merged into the body and checked by
the real protos in the provider's ``check``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import pulumi

from vertex_training._checks import (
    LATER,
    Checked,
    InvalidArgumentsError,
    JudgedOnce,
    is_known,
    map_known,
    unchecked_copy,
)
from vertex_training.findings import Finding
from vertex_training.jobs.body import to_body, vertex
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.placeholders import with_placeholders
from vertex_training.jobs.pools import Scheduling, WorkerPool
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.refusals import refusal
from vertex_training.jobs.rules.job import JobSite, Known, job_findings
from vertex_training.jobs.studies import Study
from vertex_training.jobs.view import VIEWS, JobView, read

__all__ = [
    "LATER",
    "SERVING_IMAGE",
    "WAITS",
    "CustomJobArgs",
    "DnsPeeringConfig",
    "HyperparameterTuningJobArgs",
    "JobArgs",
    "JobCapacity",
    "JobPlatform",
    "PlatformFacts",
    "PscInterfaceConfig",
    "ResolvedJob",
    "TrialJob",
    "facts_of",
    "positive_seconds",
    "resolve",
]


SERVING_IMAGE = "serving"
"""The platform image a ``Model`` serves with by default (docker/serving.Dockerfile): a
model's, never a pool's default (``JobPlatform.default_image`` leaves it out)."""


@runtime_checkable
class JobPlatform(Protocol):
    """What a job takes from the environment it runs in (``vt.TrainingPlatform`` is one)."""

    environment: str
    """``local``, ``dev`` or ``prod``: local runs jobs on this machine."""
    project: pulumi.Input[str]
    region: str
    bucket_url: pulumi.Output[str]
    training_service_account: pulumi.Output[str] | None
    network: pulumi.Input[str] | None
    tensorboard: pulumi.Output[str] | None
    kms_key_name: pulumi.Input[str] | None
    """CMEK the platform's jobs are encrypted with by default."""
    labels: Mapping[str, str]
    local_root: Path | None
    strict_hardware_checks: bool
    acknowledged_hardware_checks: tuple[str, ...]

    def default_image(self) -> pulumi.Output[str] | None:
        """The platform's only image besides ``SERVING_IMAGE``, or None when it has none
        or several."""

    def resource_options(self) -> pulumi.ResourceOptions: ...


@runtime_checkable
class JobCapacity(Protocol):
    """Capacity a job is placed on (``vt.PersistentResource`` is one): its id, and the rule
    the job's pools are held to there (the capacity package defines it; jobs cannot import
    it)."""

    resource_id: str
    """What ``jobSpec.persistentResourceId`` takes."""

    def fit_findings(
        self, job_pools: Sequence[Any], path: str, parallel_trials: int = 1
    ) -> list[Finding]:
        """The findings of a job's pools (``WorkerPoolSpec`` views at ``path[i]``) on it."""

    def resource_options(self) -> pulumi.ResourceOptions:
        """What a job on it needs (created after it)."""


def _capacity_id(value: Any) -> Any:
    return value.resource_id if is_known(value) and isinstance(value, JobCapacity) else value


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True, kw_only=True)
class DnsPeeringConfig(Checked):
    """``PscInterfaceConfig.dnsPeeringConfigs[]``: a DNS zone resolved in another network."""

    domain: str
    target_project: str
    target_network: str


@dataclass(frozen=True, kw_only=True)
class PscInterfaceConfig(Checked):
    """``CustomJobSpec.pscInterfaceConfig``: reach a VPC through a Private Service Connect
    interface instead of VPC peering (``network``)."""

    network_attachment: pulumi.Input[str]
    """``projects/P/regions/R/networkAttachments/N`` (or its name in the job's project)."""
    dns_peering_configs: Sequence[DnsPeeringConfig] = ()


@dataclass(frozen=True, kw_only=True)
class _RunFields(Checked):
    """The fields of a ``CustomJobSpec``: a job's run, or each trial of a study."""

    chief: WorkerPool = field(metadata=vertex("workerPoolSpecs[0]"))
    """Worker pool 0: exactly one replica (the chief)."""
    workers: WorkerPool | None = field(default=None, metadata=vertex("workerPoolSpecs[1]"))
    parameter_servers: WorkerPool | None = field(
        default=None, metadata=vertex("workerPoolSpecs[2]")
    )
    evaluator: WorkerPool | None = field(default=None, metadata=vertex("workerPoolSpecs[3]"))
    scheduling: Scheduling | None = None
    service_account: pulumi.Input[str] | None = None
    """None: the platform's training service account."""
    network: pulumi.Input[str] | Literal[False] | None = None
    """VPC network peered with Vertex; None: the platform's, if it has one; False: none
    (the job does not join the platform's network)."""
    base_output_directory: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("baseOutputDirectory.outputUriPrefix")
    )
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
    """An interactive shell into each replica (``webAccessUris``)."""
    enable_dashboard_access: bool = False
    """The training container's dashboard over HTTPS (``webAccessUris``)."""
    persistent_resource_id: pulumi.Input[str] | JobCapacity | None = field(
        default=None, metadata=vertex("persistentResourceId", encode=_capacity_id)
    )
    """Run on this persistent resource's machines instead of new ones: its id, or the
    resource itself (``vt.PersistentResource``), which the job's pools must fit."""
    psc_interface_config: PscInterfaceConfig | None = None
    """Reach a VPC through a Private Service Connect interface."""
    reserved_ip_ranges: Sequence[str] = ()
    """Names of the ranges reserved for Vertex in ``network`` that the job's VMs take
    their addresses from (``CustomJobSpec.reservedIpRanges``); empty: any of them."""
    protected_artifact_location_id: pulumi.Input[str] | None = None
    """Where the job's artifacts are kept, a location id (``us-central1``), for data
    residency (``CustomJobSpec.protectedArtifactLocationId``); None: the job's region."""


WAITS = ("wait_timeout_seconds", "poll_interval_seconds", "delete_timeout_seconds")
"""How long ``up`` waits for a job and how often it looks (``positive_seconds``)."""


def positive_seconds(values: Mapping[str, Any]) -> list[Finding]:
    """How ``up`` waits (``WAITS``): each a positive number of seconds."""
    return [
        Finding(key, f"must be a positive number of seconds, got {values[key]}", caller=key)
        for key in WAITS
        if not values[key] > 0
    ]


@dataclass(frozen=True, kw_only=True)
class _JobFields(JudgedOnce):
    platform: JobPlatform | None = field(default=None, metadata=vertex(None))
    """Where the job runs and what it uses by default (image, bucket, service account,
    labels). None: give ``project``, ``region`` and each pool's ``image``."""
    display_name: pulumi.Input[str] | None = None
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
    project: str | None = field(default=None, metadata=vertex(None))
    """Without a platform: the Google Cloud project the job runs in."""
    region: str | None = field(default=None, metadata=vertex(None))
    """Without a platform: the Vertex region (``us-central1``)."""
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other field of the job's body, in the API's camelCase, merged in last:
    ``{"jobSpec": {"models": [...]}}``. The provider parses the whole body with the real
    protos, so an unknown field fails ``pulumi preview``."""
    expected_duration_seconds: float | None = field(default=None, metadata=vertex(None))
    """How long one run is expected to take; cost estimates use it (else the timeout)."""
    strict_hardware_checks: bool | None = field(default=None, metadata=vertex(None))
    """Refuse hardware the catalog does not know; None: the platform's setting."""
    acknowledged_hardware_checks: Sequence[str] = field(default=(), metadata=vertex(None))
    """Hardware check ids (from an error's "(check ...)") to warn about instead of refusing;
    added to the platform's."""
    wait: bool = field(default=True, metadata=vertex(None))
    """``pulumi up`` waits for the job to end (like the SDK's ``run()``)."""
    wait_timeout_seconds: float = field(default=24 * 3600, metadata=vertex(None))
    poll_interval_seconds: float = field(default=30, metadata=vertex(None))
    delete_timeout_seconds: float = field(default=1800, metadata=vertex(None))

    def __post_init__(self) -> None:
        super().__post_init__()
        problems = positive_seconds({key: getattr(self, key) for key in WAITS})
        if problems:
            raise refusal(type(self).__name__, problems)

    def on(self, platform: JobPlatform) -> Any:
        """These Args on ``platform``. A stack's job was judged on the facts of the platform
        the stack declares (``judged``): where they are ``platform``'s, it stays judged."""
        return dataclasses.replace(self, platform=platform)


@dataclass(frozen=True, kw_only=True)
class CustomJobArgs(_RunFields, _JobFields):
    """A Vertex AI CustomJob: one run of a chief and, optionally, more pools."""

    KIND: ClassVar[JobKind] = JobKind.CUSTOM_JOB
    VERTEX_NESTED: ClassVar[dict[type, str]] = {_RunFields: "jobSpec"}


@dataclass(frozen=True, kw_only=True)
class TrialJob(_RunFields):
    """What each trial of a study runs (``trialJobSpec``)."""


@dataclass(frozen=True, kw_only=True)
class HyperparameterTuningJobArgs(_JobFields):
    """A Vertex AI HyperparameterTuningJob: trials of ``trial`` chosen by ``study``."""

    KIND: ClassVar[JobKind] = JobKind.HYPERPARAMETER_TUNING_JOB

    trial: TrialJob = field(metadata=vertex("trialJobSpec"))
    study: Study = field(metadata=vertex("studySpec"))
    max_trial_count: pulumi.Input[int]
    parallel_trial_count: pulumi.Input[int]
    max_failed_trial_count: pulumi.Input[int] = field(
        default=0, metadata=vertex("maxFailedTrialCount", omit=(0,))
    )
    """0: the service's default."""


JobArgs = CustomJobArgs | HyperparameterTuningJobArgs


# --------------------------------------------------------------------------- bodies


@dataclass(kw_only=True)
class PlatformFacts:
    """A ``JobPlatform`` of plain values: known now, ``LATER`` for what the platform fills
    in later, None for what it does not set. The stack reader judges its jobs on the facts
    of the platform the stack declares; a job without a platform runs on the facts of its
    own project and region."""

    environment: str
    """``local``, ``dev`` or ``prod``; ``""`` for a job without a platform (on Vertex)."""
    region: str
    strict_hardware_checks: bool = False
    acknowledged_hardware_checks: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    kms_key_name: Any = None
    network: Any = None
    tensorboard: Any = None
    training_service_account: Any = None
    image: Any = None
    project: Any = "placeholder"
    """Never in a body: the rules do not read it."""
    bucket_url: Any = LATER
    local_root: Path | None = None

    def default_image(self) -> Any:
        return self.image

    def resource_options(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions()


POOL_NAMES = ("chief", "workers", "parameter_servers", "evaluator")


def job_platform(args: JobArgs, platform: JobPlatform | None = None) -> JobPlatform:
    """Where ``args`` run: on ``platform`` (the facts a stack's job is judged on), else on
    their own, else on the facts of their own project and region."""
    where = type(args).__name__
    own = args.platform
    if isinstance(own, PlatformFacts):
        if platform is None:
            raise InvalidArgumentsError(
                f"{where}: a stack's job runs on the stack's platform; valid: "
                "vt.declare_job(name, args.on(platform))"
            )
        own = None
    for key in ("project", "region"):
        value = getattr(args, key)
        if own is not None and value is not None and value != getattr(own, key):
            raise InvalidArgumentsError(
                f"{where}.{key}: {value!r} differs from the platform's {getattr(own, key)!r}; "
                "valid: leave it unset (the platform's) or drop platform"
            )
    if platform is not None or own is not None:
        return platform if platform is not None else own  # type: ignore[return-value]
    missing = [k for k in ("project", "region") if getattr(args, k) is None]
    if missing:
        raise InvalidArgumentsError(
            f"{where}: no platform, so {' and '.join(missing)} must be set; valid: "
            "platform=<a vt.TrainingPlatform>, or project='my-project', region='us-central1'"
        )
    assert args.region is not None
    return PlatformFacts(environment="", region=args.region, project=args.project, bucket_url=None)


def _on_platform(args: JobArgs, name: str, platform: JobPlatform) -> JobArgs:
    """``args`` as the resource ``name`` on ``platform``: what the platform provides filled
    in where the caller left it unset (values not known yet, Outputs, in place: the engine
    resolves each where it is, so that ``check`` sees the rest of the body in preview)."""
    run: _RunFields = args if isinstance(args, CustomJobArgs) else args.trial
    where = type(args).__name__ if run is args else f"{type(args).__name__}.trial"
    changes: dict[str, Any] = {}
    for pool_name in POOL_NAMES:
        pool = getattr(run, pool_name)
        if pool is None or pool.image is not None:
            continue
        image = platform.default_image()
        if image is None:
            raise InvalidArgumentsError(
                f"{where}.{pool_name}.image: not set, and the platform has no single image to "
                'default to; valid: an image by digest, e.g. image=platform.image("trainer")'
            )
        changes[pool_name] = unchecked_copy(pool, image=image)
    for key, value in (
        ("service_account", platform.training_service_account),
        ("network", platform.network),
        ("tensorboard", platform.tensorboard),
    ):
        if getattr(run, key) is None and value is not None:
            changes[key] = value
    if run.base_output_directory is None and platform.bucket_url is not None:
        changes["base_output_directory"] = map_known(
            platform.bucket_url, lambda url: f"{url.rstrip('/')}/jobs/{name}"
        )
    kms_key_name = args.kms_key_name
    job = {
        "display_name": args.display_name if args.display_name is not None else name,
        "labels": {**dict(platform.labels), **args.labels},
        "kms_key_name": platform.kms_key_name if kms_key_name is None else kms_key_name,
    }
    if isinstance(args, CustomJobArgs):
        return unchecked_copy(args, **job, **changes)
    return unchecked_copy(args, **job, trial=unchecked_copy(run, **changes))


_FILLED = ("kms_key_name", "network", "tensorboard", "training_service_account")
"""What a platform fills in that another resource may give it (known later)."""


def _fact(value: Any) -> Any:
    return value if value is None or is_known(value) else LATER


def facts_of(platform: JobPlatform) -> PlatformFacts:
    """What the job rules read of ``platform``: values known now, ``LATER`` for the rest."""
    if isinstance(platform, PlatformFacts):
        return platform
    return PlatformFacts(
        environment=platform.environment,
        region=platform.region,
        strict_hardware_checks=platform.strict_hardware_checks,
        acknowledged_hardware_checks=tuple(platform.acknowledged_hardware_checks),
        labels=dict(platform.labels),
        image=None if platform.default_image() is None else LATER,
        **{key: _fact(getattr(platform, key)) for key in _FILLED},
    )


# --------------------------------------------------------------------------- one pass


@dataclass(frozen=True)
class ResolvedJob:
    """A job resolved once, where its name and its platform are both known: what its
    resource sends, what the cost estimate reads and what ``check`` judges later."""

    body: dict[str, Any]
    """The Vertex REST body; values not known yet (Outputs) in place."""
    unknown: tuple[str, ...]
    """The API paths of the values not known yet: ``check`` judges them once they are."""
    view: JobView | None
    """The body read for the rules and the estimate, a stand-in for each value not known
    yet; None where it cannot be read (``findings`` say why)."""
    findings: tuple[Finding, ...]
    """Every finding of the job's rules (its pools' warnings included), at its API path and
    the caller's (Python) path, acknowledgements applied; empty where the job was judged
    already (a stack's job, on the same facts)."""
    platform: JobPlatform
    acknowledged: tuple[str, ...]
    """The hardware checks acknowledged by the platform, the job and its pools."""


def resolve(args: JobArgs, name: str, platform: JobPlatform | None = None) -> ResolvedJob:
    """The one pass of a job: its body as the resource ``name`` on ``platform`` (else its
    own, ``job_platform``), the paths not known yet, and the findings of the rules of a job
    on its platform. What a pool, study or parameter must be anywhere was judged where each
    was built; pools given in ``extra_fields`` are judged here."""
    platform = job_platform(args, platform)
    run = args if isinstance(args, CustomJobArgs) else args.trial
    pools = [(i, p) for i, key in enumerate(POOL_NAMES) if (p := getattr(run, key)) is not None]
    acknowledged = [*platform.acknowledged_hardware_checks, *args.acknowledged_hardware_checks]
    acknowledged += [check for _, pool in pools for check in pool.acknowledged_hardware_checks]
    # Judged already: a stack's job, judged on facts equal to this platform's.
    kept = None if args.judged is None else args.findings_on((name, facts_of(platform)))
    strict = args.strict_hardware_checks
    where = None if platform.environment == "local" else platform.region
    extra_pools = "workerPoolSpecs" in (
        args.extra_fields.get(VIEWS[args.KIND].trial_job_path) or {}
    )
    job = _on_platform(args, name, platform)
    capacity = run.persistent_resource_id
    placed_on = capacity if is_known(capacity) and isinstance(capacity, JobCapacity) else None
    body = to_body(job)
    known, unknown = with_placeholders(body)
    view, findings = read(VIEWS[args.KIND], known)
    if kept is not None:
        findings = list(kept)
    elif view is not None:
        site = JobSite(
            remote=where is not None,
            region=where,
            strict=platform.strict_hardware_checks if strict is None else strict,
            acknowledged=tuple(acknowledged),
        )
        findings = job_findings(
            view,
            site,
            Known(unknown=tuple(unknown)),
            # Pools the Args did not build: what a pool must be anywhere, judged here.
            parts=("pools",) if extra_pools else (),
            capacity=None if placed_on is None else placed_on.fit_findings,
        )
        at = f"{view.trial_job_path}.workerPoolSpecs"
        if not extra_pools:  # what the Args' pools found where they were built
            findings += [
                dataclasses.replace(f, path=f"{at}[{i}].{f.path}")
                for i, p in pools
                for f in p.warnings
            ]
    region = "platform.region" if args.region is None else "region"
    findings = [
        f.at(caller_path(args, f.path) or (region if f.path == "region" else f.path))
        for f in findings
    ]
    acks = tuple(acknowledged)
    return ResolvedJob(body, tuple(unknown), view, tuple(findings), platform, acks)
