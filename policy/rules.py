"""The policies' logic as plain functions over resource properties (no pulumi_policy here).

Each check takes a ``Resource`` (the type token and the input properties the program
registered, as the engine hands them to a policy pack) or a list of them, plus the
policy's config, and returns the violations as messages; an empty list passes. Tests call
these with what the stack programs register under mocks; ``policy/pack.py`` wires them
to CrossGuard.

The pack stands on what it is given: the resources' properties and its own config. It
reads no file of the project it judges (no stack file), so it judges a platform team's own
program as it judges this repository's. The environment (``local``, ``dev``, ``prod``) of
a resource comes from the policy config (``environment``), else the resource's
``environment`` label (the platform labels everything it creates, its jobs too), else, for
a job, its backend (a job on the local backend runs locally). The budget comes from the
policy config (``make preview|up POLICY=1`` writes the stack's ``budget`` key into it).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from vertex_training._secrets import SECRET_PATHS, secret_finding
from vertex_training.capacity.estimate import estimate_capacity
from vertex_training.cost.budget import budget_verdict
from vertex_training.cost.catalog import PriceCatalog
from vertex_training.cost.estimate import (
    DEFAULT_WORKBENCH_HOURS,
    EstimateError,
    JobEstimate,
    StackEstimate,
    WorkbenchEstimate,
    estimate_workbench,
    stack_estimate,
)
from vertex_training.jobs.estimate import estimate_job
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.hardware import normalize_accelerator
from vertex_training.jobs.rules.image import is_by_digest, not_by_digest

CUSTOM_JOB_TYPE = "pulumi-python:dynamic/vertex:CustomJob"
TUNING_JOB_TYPE = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
JOB_TYPES: Mapping[str, JobKind] = {
    CUSTOM_JOB_TYPE: JobKind.CUSTOM_JOB,
    TUNING_JOB_TYPE: JobKind.HYPERPARAMETER_TUNING_JOB,
}
BUCKET_TYPE = "gcp:storage/bucket:Bucket"
WORKBENCH_TYPE = "gcp:workbench/instance:Instance"
LEGACY_NOTEBOOK_TYPE = "gcp:notebooks/instance:Instance"
NOTEBOOK_TYPES = (WORKBENCH_TYPE, LEGACY_NOTEBOOK_TYPE)
PERSISTENT_RESOURCE_TYPE = "gcp:vertex/aiPersistentResource:AiPersistentResource"
"""Its inputs: pulumi-gcp's (``resourcePools`` as the REST bodies, ``location``, ``labels``)."""
ENDPOINT_TYPE = "pulumi-python:dynamic/vertex:Endpoint"
"""Its inputs: ``body`` (the Endpoint), ``deployments`` (a ``DeployedModel`` body by
deployment name), ``traffic``, ``backend``."""

MODEL_TYPE = "pulumi-python:dynamic/vertex:Model"
BODY_TYPES = (*JOB_TYPES, MODEL_TYPE, ENDPOINT_TYPE)
"""Resources whose body Vertex shows to anyone who may read them."""

EXPECTED_DURATION_PROP = "expected_duration_seconds"
"""The job resource input that declares one run's (one trial's) expected duration."""

R = TypeVar("R")
"""What a rule judges: one ``Resource``, or the stack's resources."""
V = TypeVar("V")
"""A per-environment config's entry: a cap, allowed names."""
_DEFAULT_COMPUTE_ACCOUNT = re.compile(r"^\d+-compute@developer\.gserviceaccount\.com$")


@dataclass(frozen=True)
class Resource:
    """What a policy sees of one resource."""

    type: str
    props: Mapping[str, Any]
    urn: str = ""
    name: str = ""


# ----------------------------------------------------------------------- helpers


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _labels(resource: Resource) -> Mapping[str, Any]:
    if resource.type in JOB_TYPES:
        labels = _get(resource.props, "spec", "labels")
    elif resource.type == ENDPOINT_TYPE:
        labels = _get(resource.props, "body", "labels")
    else:
        labels = resource.props.get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _trial_spec(resource: Resource) -> Mapping[str, Any]:
    spec = resource.props.get("spec")
    key = "jobSpec" if JOB_TYPES[resource.type] is JobKind.CUSTOM_JOB else "trialJobSpec"
    inner = _get(spec, key)
    return inner if isinstance(inner, Mapping) else {}


def _pools(resource: Resource) -> list[tuple[int, Mapping[str, Any]]]:
    pools = _trial_spec(resource).get("workerPoolSpecs")
    if not isinstance(pools, Sequence):
        return []
    return [(i, p) for i, p in enumerate(pools) if isinstance(p, Mapping) and p]


def _is_vertex_job(resource: Resource) -> bool:
    return resource.type in JOB_TYPES and _get(resource.props, "backend", "kind") != "local"


def _runs_locally(resource: Resource) -> bool:
    """A job or an endpoint on the local backend (this machine, not Vertex)."""
    return (
        resource.type in (*JOB_TYPES, ENDPOINT_TYPE)
        and _get(resource.props, "backend", "kind") == "local"
    )


def _deployments(resource: Resource) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, ``dedicatedResources``) of each of an endpoint's deployed models."""
    if resource.type != ENDPOINT_TYPE:
        return []
    deployments = resource.props.get("deployments")
    if not isinstance(deployments, Mapping):
        return []
    out = []
    for name, body in sorted(deployments.items()):
        resources = _get(body, "dedicatedResources")
        out.append((str(name), resources if isinstance(resources, Mapping) else {}))
    return out


def environment_of(resource: Resource, config: Mapping[str, Any]) -> str | None:
    """The policy config's ``environment``, else the resource's ``environment`` label, else
    ``local`` for a job on the local backend; None where none of these says."""
    override = config.get("environment")
    if isinstance(override, str) and override:
        return override
    label = _labels(resource).get("environment")
    if isinstance(label, str) and label:
        return label
    if _runs_locally(resource):
        return "local"
    return None


def applies(resource: Resource, config: Mapping[str, Any], default: Iterable[str]) -> bool:
    """Whether a policy limited to some environments (config ``environments``) applies."""
    wanted = config.get("environments", list(default))
    return environment_of(resource, config) in set(wanted)


# ----------------------------------------------------------------------- labels


DEFAULT_REQUIRED_LABELS = ("team", "cost-center")
LABELLED_TYPES = (BUCKET_TYPE, *NOTEBOOK_TYPES, *JOB_TYPES)


def _missing_labels(resource: Resource, keys: Sequence[str]) -> tuple[str, str]:
    """(the ``keys`` the resource has no value for, the labels it has), each as a list."""
    labels = _labels(resource)
    missing = ", ".join(key for key in keys if not labels.get(key))
    return missing, ", ".join(sorted(labels)) or "none"


def required_labels(resource: Resource, keys: Sequence[str] = DEFAULT_REQUIRED_LABELS) -> list[str]:
    if resource.type not in LABELLED_TYPES:
        return []
    missing, has = _missing_labels(resource, keys)
    if not missing:
        return []
    return [f"missing label(s) {missing} (required: {', '.join(keys)}; has: {has})"]


# ----------------------------------------------------------------------- GPUs


DEFAULT_MAX_GPUS_PER_JOB: Mapping[str, int] = {"local": 0, "dev": 4, "prod": 16}
DEFAULT_MAX_GPUS_PER_STACK: Mapping[str, int] = {"local": 0, "dev": 8, "prod": 64}


def _job_estimate(resource: Resource, catalog: PriceCatalog | None = None) -> JobEstimate:
    region = _get(resource.props, "backend", "location") or "unknown-region"
    duration = resource.props.get(EXPECTED_DURATION_PROP)
    return estimate_job(
        JOB_TYPES[resource.type],
        resource.props["spec"],
        str(region),
        name=resource.name or None,
        expected_duration_seconds=float(duration) if duration else None,
        catalog=catalog,
    )


def job_gpus(resource: Resource) -> int:
    """GPUs (and TPU chips) a job holds at once: every replica, every parallel trial."""
    return _job_estimate(resource).gpus_at_once


def per_environment(
    rule: Callable[[R, str, V], list[str]],
) -> Callable[[R, str | None, Mapping[str, V]], list[str]]:
    """``rule`` judged with the entry its config holds for the resource's environment;
    an environment the config does not list (or none) is not judged."""

    @functools.wraps(rule)
    def judged(resources: R, environment: str | None, config: Mapping[str, V]) -> list[str]:
        if environment is None or environment not in config:
            return []
        return rule(resources, environment, config[environment])

    return judged


@per_environment
def job_gpu_limit(resource: Resource, environment: str, cap: int) -> list[str]:
    if resource.type not in JOB_TYPES:
        return []
    gpus = job_gpus(resource)
    if gpus <= cap:
        return []
    return [f"the job holds {gpus} accelerators at once; {environment} allows {cap} per job"]


@per_environment
def stack_gpu_limit(resources: Sequence[Resource], environment: str, cap: int) -> list[str]:
    jobs = [r for r in resources if r.type in JOB_TYPES]
    gpus = sum(job_gpus(r) for r in jobs)
    if gpus <= cap:
        return []
    each = ", ".join(f"{r.name or r.urn}: {job_gpus(r)}" for r in jobs if job_gpus(r))
    return [
        f"the stack's jobs hold {gpus} accelerators if they run at once ({each}); "
        f"{environment} allows {cap} per stack"
    ]


# ----------------------------------------------------------------------- capacity


DEFAULT_MAX_CAPACITY_USD_PER_HOUR: Mapping[str, float] = {"local": 0, "dev": 10, "prod": 200}
"""What an environment's persistent resources may cost per hour, always on (at minimum
replicas): they bill every hour they exist, whether or not a job runs."""
DEFAULT_CAPACITY_TEAM_LABELS = ("team",)


def capacity_per_hour(resource: Resource) -> float:
    """A persistent resource's USD per hour at its pools' minimum replicas (known prices)."""
    pools = resource.props.get("resourcePools")
    region = str(resource.props.get("location") or "unknown-region")
    if not isinstance(pools, Sequence):
        return 0.0
    estimate = estimate_capacity(
        resource.name, region, [p for p in pools if isinstance(p, Mapping)]
    )
    return estimate.usd_per_hour


@per_environment
def stack_capacity_limit(resources: Sequence[Resource], environment: str, cap: float) -> list[str]:
    held = [r for r in resources if r.type == PERSISTENT_RESOURCE_TYPE]
    usd = sum(capacity_per_hour(r) for r in held)
    if usd <= cap:
        return []
    each = ", ".join(f"{r.name or r.urn}: ${capacity_per_hour(r):,.2f}" for r in held)
    return [
        f"the stack's persistent resources cost ${usd:,.2f} per hour while they exist, "
        f"whether or not a job runs ({each}); {environment} allows ${cap:,.2f} per hour"
    ]


def capacity_team_label(
    resource: Resource, keys: Sequence[str] = DEFAULT_CAPACITY_TEAM_LABELS
) -> list[str]:
    """Capacity billed by the hour says whose it is."""
    if resource.type != PERSISTENT_RESOURCE_TYPE:
        return []
    missing, has = _missing_labels(resource, keys)
    if not missing:
        return []
    return [
        f"a persistent resource (billed every hour it exists) without label(s) {missing} "
        f"identifying its team; has: {has}"
    ]


# ----------------------------------------------------------------------- accelerator types


DEFAULT_ALLOWED_ACCELERATORS: Mapping[str, Sequence[str]] = {
    "local": (),
    "dev": ("NVIDIA_TESLA_T4", "NVIDIA_L4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P100"),
    "prod": (
        "NVIDIA_TESLA_T4",
        "NVIDIA_L4",
        "NVIDIA_TESLA_V100",
        "NVIDIA_TESLA_A100",
        "NVIDIA_A100_80GB",
        "NVIDIA_H100_80GB",
    ),
}


def accelerators_of(resource: Resource) -> list[tuple[str, str]]:
    """(where, accelerator type) of a job's pools, an endpoint's deployed models or a
    notebook's GPUs."""
    if resource.type == ENDPOINT_TYPE:
        return [
            (f"deployments.{name}.dedicatedResources.machineSpec", str(kind))
            for name, dedicated in _deployments(resource)
            if (kind := _get(dedicated, "machineSpec", "acceleratorType"))
        ]
    if resource.type in JOB_TYPES:
        out = []
        for index, pool in _pools(resource):
            kind = _get(pool, "machineSpec", "acceleratorType")
            if isinstance(kind, str) and normalize_accelerator(kind) is not None:
                out.append((f"workerPoolSpecs[{index}]", kind))
        return out
    if resource.type == WORKBENCH_TYPE:
        configs = _get(resource.props, "gceSetup", "acceleratorConfigs") or []
        return [("gceSetup.acceleratorConfigs", str(c.get("type"))) for c in configs if c]
    if resource.type == LEGACY_NOTEBOOK_TYPE:
        kind = _get(resource.props, "acceleratorConfig", "type")
        return [("acceleratorConfig", str(kind))] if kind else []
    return []


@per_environment
def allowed_accelerators(resource: Resource, environment: str, allowed: Sequence[str]) -> list[str]:
    permitted = set(allowed)
    return [
        f"{where}: {kind} is not allowed in {environment} (allowed: "
        f"{', '.join(sorted(permitted)) or 'none'})"
        for where, kind in accelerators_of(resource)
        if kind not in permitted
    ]


# ----------------------------------------------------------------------- endpoints


DEFAULT_ALLOWED_PREDICTION_MACHINES: Mapping[str, Sequence[str]] = {
    "dev": ("e2-standard-2", "e2-standard-4", "n1-standard-2", "n1-standard-4", "n2-standard-2"),
    "prod": ("e2-*", "n1-*", "n2-*", "n2d-*", "c3-*", "g2-standard-*", "a2-highgpu-*"),
}
"""Machine types (``fnmatch`` patterns) an endpoint's deployed models may use, by
environment; an environment not listed (local: the twin runs on this machine) is not
judged. dev: small CPU machines; prod: no A3 or 16-GPU machines unless the config says."""

DEFAULT_MAX_REPLICAS: Mapping[str, int] = {"dev": 2, "prod": 20}
"""The most replicas (``maxReplicaCount``, what autoscaling may reach) of one deployed model,
by environment; an environment not listed is not judged."""


@per_environment
def endpoint_machines(resource: Resource, environment: str, allowed: Sequence[str]) -> list[str]:
    patterns = list(allowed)
    out = []
    for name, dedicated in _deployments(resource):
        machine = _get(dedicated, "machineSpec", "machineType")
        if not any(fnmatch.fnmatchcase(str(machine), pattern) for pattern in patterns):
            out.append(
                f"deployments.{name}.dedicatedResources.machineSpec.machineType: {machine} is "
                f"not allowed for an endpoint in {environment} (allowed: "
                f"{', '.join(patterns) or 'none'})"
            )
    return out


@per_environment
def endpoint_replicas(resource: Resource, environment: str, cap: int) -> list[str]:
    out = []
    for name, dedicated in _deployments(resource):
        low, high = dedicated.get("minReplicaCount"), dedicated.get("maxReplicaCount")
        replicas = max(int(v) for v in (low, high, 1) if isinstance(v, int | float))
        if replicas > cap:
            out.append(
                f"deployments.{name}.dedicatedResources: up to {replicas} replicas; "
                f"{environment} allows {cap} per deployed model (maxReplicaCount)"
            )
    return out


# ----------------------------------------------------------------------- jobs


def job_timeout(resource: Resource) -> list[str]:
    if resource.type not in JOB_TYPES:
        return []
    if _get(_trial_spec(resource), "scheduling", "timeout"):
        return []
    field = "jobSpec" if JOB_TYPES[resource.type] is JobKind.CUSTOM_JOB else "trialJobSpec"
    return [
        f"{field}.scheduling.timeout is not set: a stuck job would run (and bill) for Vertex's "
        "default 7 days; set timeoutSeconds"
    ]


def no_secret_in_body(resource: Resource) -> list[str]:
    """A secret in a job's, a model's or an endpoint's body (the program lists their API
    paths in ``secret_paths``): encrypted in the state, shown in plain text by Vertex."""
    if resource.type not in BODY_TYPES:
        return []
    return [str(secret_finding(path)) for path in resource.props.get(SECRET_PATHS) or ()]


def image_by_digest(resource: Resource) -> list[str]:
    if resource.type not in JOB_TYPES:
        return []
    out = []
    for index, pool in _pools(resource):
        image = _get(pool, "containerSpec", "imageUri")
        if isinstance(image, str) and not is_by_digest(image):
            out.append(f"workerPoolSpecs[{index}].containerSpec.imageUri {not_by_digest(image)}")
    return out


def _account_problem(where: str, account: Any) -> list[str]:
    if not isinstance(account, str) or not account:
        return [f"{where} is not set: the job or notebook would run as the default compute account"]
    if _DEFAULT_COMPUTE_ACCOUNT.match(account):
        return [f"{where} is the default compute service account {account} (project-wide Editor)"]
    return []


def no_default_service_account(resource: Resource) -> list[str]:
    if resource.type in JOB_TYPES:
        return _account_problem("serviceAccount", _trial_spec(resource).get("serviceAccount"))
    if resource.type == WORKBENCH_TYPE:
        accounts = _get(resource.props, "gceSetup", "serviceAccounts") or [{}]
        return _account_problem("gceSetup.serviceAccounts[0].email", accounts[0].get("email"))
    if resource.type == LEGACY_NOTEBOOK_TYPE:
        return _account_problem("serviceAccount", resource.props.get("serviceAccount"))
    return []


def notebook_no_public_ip(resource: Resource) -> list[str]:
    if resource.type == WORKBENCH_TYPE:
        if _get(resource.props, "gceSetup", "disablePublicIp") is True:
            return []
        return ["gceSetup.disablePublicIp is not true: the notebook VM gets a public IP"]
    if resource.type == LEGACY_NOTEBOOK_TYPE and resource.props.get("noPublicIp") is not True:
        return ["noPublicIp is not true: the notebook VM gets a public IP"]
    return []


# ----------------------------------------------------------------------- buckets, CMEK


def bucket_access(resource: Resource) -> list[str]:
    if resource.type != BUCKET_TYPE:
        return []
    out = []
    if resource.props.get("uniformBucketLevelAccess") is not True:
        out.append("uniformBucketLevelAccess is not true: object ACLs could grant access")
    if resource.props.get("publicAccessPrevention") != "enforced":
        out.append(
            f"publicAccessPrevention is {resource.props.get('publicAccessPrevention')!r}, "
            "not 'enforced'"
        )
    return out


def cmek(resource: Resource) -> list[str]:
    if resource.type == BUCKET_TYPE:
        if _get(resource.props, "encryption", "defaultKmsKeyName"):
            return []
        return ["encryption.defaultKmsKeyName is not set: the bucket is not encrypted with CMEK"]
    if resource.type in JOB_TYPES:
        if _get(resource.props, "spec", "encryptionSpec", "kmsKeyName"):
            return []
        return ["encryptionSpec.kmsKeyName is not set: the job is not encrypted with CMEK"]
    return []


# ----------------------------------------------------------------------- cost


def _workbench_estimate(resource: Resource, hours: float) -> WorkbenchEstimate:
    setup = resource.props.get("gceSetup") or {}
    configs = setup.get("acceleratorConfigs") or []
    first = configs[0] if configs else {}
    zone = str(resource.props.get("location") or "")
    return estimate_workbench(
        machine_type=str(setup.get("machineType") or "<no machineType>"),
        gpu_type=first.get("type") or None,
        gpu_count=int(first.get("coreCount") or 0),
        region=zone.rsplit("-", 1)[0] if zone.count("-") >= 2 else zone,
        hours=hours,
    )


def estimate_from_resources(
    resources: Sequence[Resource], workbench_hours: float = DEFAULT_WORKBENCH_HOURS
) -> StackEstimate:
    """The stack's estimate from what it registers: every Vertex job once, Workbench for
    ``workbench_hours``. Jobs on the local backend cost nothing."""
    jobs = [_job_estimate(r) for r in resources if _is_vertex_job(r)]
    notebooks = [r for r in resources if r.type == WORKBENCH_TYPE]
    workbench = _workbench_estimate(notebooks[0], workbench_hours) if notebooks else None
    return stack_estimate(jobs, workbench)


def budget_of(config: Mapping[str, Any]) -> tuple[float | None, list[str]]:
    """The budget in USD from the policy config's ``budget`` (None: no budget)."""
    value = config.get("budget")
    if value is None:
        return None, []
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None, [f"policy config budget must be a number of USD > 0, got {value!r}"]
    return float(value), []


def stack_budget(total: StackEstimate, budget: float | None) -> list[str]:
    if budget is None:
        return []
    verdict = budget_verdict(total, budget)
    return [verdict.message] if verdict is not None and verdict.action(None) else []


def estimate_errors(resources: Sequence[Resource]) -> list[str]:
    """Job bodies that cannot be estimated, named (a policy must not pass them silently)."""
    out = []
    for resource in resources:
        if _is_vertex_job(resource):
            try:
                _job_estimate(resource)
            except EstimateError as error:
                out.append(f"{resource.name or resource.urn}: {error}")
    return out


__all__ = [
    "BUCKET_TYPE",
    "CUSTOM_JOB_TYPE",
    "DEFAULT_ALLOWED_ACCELERATORS",
    "DEFAULT_ALLOWED_PREDICTION_MACHINES",
    "DEFAULT_MAX_GPUS_PER_JOB",
    "DEFAULT_MAX_GPUS_PER_STACK",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_REQUIRED_LABELS",
    "ENDPOINT_TYPE",
    "EXPECTED_DURATION_PROP",
    "JOB_TYPES",
    "MODEL_TYPE",
    "PERSISTENT_RESOURCE_TYPE",
    "TUNING_JOB_TYPE",
    "WORKBENCH_TYPE",
    "Resource",
    "accelerators_of",
    "allowed_accelerators",
    "applies",
    "bucket_access",
    "budget_of",
    "capacity_per_hour",
    "capacity_team_label",
    "cmek",
    "endpoint_machines",
    "endpoint_replicas",
    "environment_of",
    "estimate_errors",
    "estimate_from_resources",
    "image_by_digest",
    "job_gpu_limit",
    "job_gpus",
    "job_timeout",
    "no_default_service_account",
    "no_secret_in_body",
    "notebook_no_public_ip",
    "required_labels",
    "stack_budget",
    "stack_capacity_limit",
    "stack_gpu_limit",
]
