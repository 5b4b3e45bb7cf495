"""Rules over a job's view: what Vertex would refuse, found before anything is created.

Each finding names the field by its API path (``trialJobSpec.workerPoolSpecs[0]...``);
the stack-config reader maps those paths to config keys. Hardware (machines,
accelerators, regions) is checked against the catalog in ``hardware``; the rest are the
API's own limits (counts, durations, label syntax, resource-name shapes).
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from vertex_training.findings import INT32_MAX, Finding
from vertex_training.jobs.placeholders import drop_unknown
from vertex_training.jobs.rules.hardware import Machine, acknowledge, check_job
from vertex_training.jobs.rules.image import DIGEST_FORM, is_by_digest, not_by_digest
from vertex_training.jobs.rules.located import EXPERIMENT, EXPERIMENT_RUN, KMS_KEY, TENSORBOARD
from vertex_training.jobs.view import (
    CustomJobSpec,
    DiskSpec,
    HyperparameterTuningJobView,
    JobView,
    MetricGoal,
    ParameterSpec,
    PoolRole,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    StudySpec,
    WorkerPoolSpec,
)

MAX_POOLS = len(PoolRole)
MAX_DISPLAY_NAME = 128
# Google's label requirements (Resource Manager, "Requirements for labels"): at most 64
# labels; keys 1-63 characters, values 0-63; lowercase letters (international ones too),
# digits, '_' and '-'; keys start with a lowercase letter; keys and values under 128 bytes.
MAX_LABELS = 64
MAX_LABEL_LENGTH = 63
MAX_LABEL_BYTES = 127
BOOT_DISK_GB_RANGE = (100, 65536)
# DiskSpec.bootDiskType: "Valid values: "pd-ssd" (Persistent Disk Solid State Drive) or
# "pd-standard" (Persistent Disk Hard Disk Drive)"; hyperdisk-balanced for the machine
# series that need it (Vertex AI API reference, DiskSpec; "Configure compute resources
# for custom training", boot disk options).
BOOT_DISK_TYPES = ("pd-ssd", "pd-standard", "hyperdisk-balanced")
# ContainerSpec.env: "Environment variables to be passed to the container. Maximum limit
# is 100." (Vertex AI API reference, ContainerSpec).
MAX_ENV_VARS = 100
# StudySpec.ParameterSpec.DiscreteValueSpec.values: "in increasing order and at least
# 1e-10 apart ... should not contain more than 1,000 values" (Vertex AI API reference).
MAX_DISCRETE_VALUES = 1000
MIN_DISCRETE_GAP = 1e-10

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERVICE_ACCOUNT = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]+$")
_NETWORK = re.compile(r"^projects/[^/]+/global/networks/[^/]+$")
# CreatePersistentResourceRequest.persistent_resource_id: "The maximum length is 63
# characters, and valid characters are /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/."
PERSISTENT_RESOURCE_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
"""A persistent resource's id: what a job names and what the resource is created as."""


Found = Iterator[tuple[str, str] | tuple[str, str, str]]
"""What a rule yields: (the field under the part it judges, what is wrong[, what would be
valid where the message does not say it]), each an error; a field "" is the part itself."""


def _at(
    path: str, found: Iterable[tuple[str, str] | tuple[str, str, str] | Finding]
) -> list[Finding]:
    """The errors ``found`` under ``path``; a hardware catalog's Finding is kept as it is."""
    return [
        f
        if isinstance(f, Finding)
        else Finding(".".join(filter(None, (path, f[0]))), f[1], "error", valid="".join(f[2:]))
        for f in found
    ]


# ------------------------------------------------------------------------------ labels
# Google's label syntax: lowercase letters (international ones too), digits, '_' and '-';
# keys start with a lowercase letter. "Lowercase" is Unicode's Ll, plus letters without
# case (Lo: CJK, Arabic, ...), which are allowed as they are.


def _label_char(char: str) -> bool:
    # [\p{Ll}\p{Lo}\p{N}_-]: the documented character class of label keys and values.
    category = unicodedata.category(char)
    return char in "_-" or category in ("Ll", "Lo") or category.startswith("N")


def _label_valid(text: str) -> bool:
    return (
        len(text) <= MAX_LABEL_LENGTH
        and len(text.encode("utf-8")) <= MAX_LABEL_BYTES
        and all(map(_label_char, text))
    )


def label_problems(labels: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(path, problem) for each way ``labels`` break Vertex's label rules (a job's, a
    persistent resource's)."""
    if len(labels) > MAX_LABELS:
        yield "labels", f"has {len(labels)} labels; at most {MAX_LABELS} are allowed"
    for key, value in labels.items():
        if not (key and unicodedata.category(key[0]) in ("Ll", "Lo") and _label_valid(key)):
            yield (
                f"labels.{key}",
                "label keys are 1-63 characters (under 128 bytes): a lowercase letter, then "
                "lowercase letters (international ones too), digits, '_' or '-'",
            )
        if not _label_valid(value):
            yield (
                f"labels.{key}",
                f"label value {value!r} invalid: up to 63 (under 128 bytes) lowercase letters "
                "(international ones too), digits, '_' or '-'",
            )


def display_name_findings(name: str) -> list[Finding]:
    """The display-name rule alone: a job's default display name is its resource name,
    first known where the resource is declared."""
    problems = []
    if not name.strip():
        problems.append(Finding("displayName", "must not be empty (1-128 characters)"))
    elif len(name) > MAX_DISPLAY_NAME:
        message = f"is {len(name)} characters long; at most 128 are allowed"
        problems.append(Finding("displayName", message))
    if control := next((c for c in name if unicodedata.category(c) == "Cc"), None):
        message = f"has a control character ({control!r}) in {name!r}"
        valid = "1-128 printable characters (no tabs or line breaks)"
        problems.append(Finding("displayName", message, valid=valid))
    return problems


# ------------------------------------------------------------------------------- pools


def pool_findings(pool: WorkerPoolSpec, path: str) -> list[Finding]:
    """What one pool at ``path`` must be in any place, job and region (its machine against
    the hardware catalog included): judged where the pool is built."""
    machine = _machine(path, pool)
    specs = [machine[0]] if _judgeable(pool) else []
    out = _at(path, _pool(pool))
    return out + check_job([machine], strategy=None, provisioning=False, specs=specs)


def _machine(path: str, pool: WorkerPoolSpec) -> Machine:
    m = pool.machine_spec
    at = ".".join(filter(None, (path, "machineSpec")))
    return at, m.machine_type, m.accelerator_type, m.accelerator_count, m.tpu_topology


def _judgeable(pool: WorkerPoolSpec) -> bool:
    """What a pool's machine must be before it is looked up: a machine type, a count."""
    machine = pool.machine_spec
    return bool(machine.machine_type) and 0 <= machine.accelerator_count <= INT32_MAX


def _pool(pool: WorkerPoolSpec) -> Found:
    if pool.replica_count < 1:
        count = pool.replica_count
        yield "replicaCount", f"must be at least 1, got {count}; use an empty pool ({{}}) instead"
    machine = pool.machine_spec
    if not machine.machine_type:
        yield "machineSpec.machineType", "is required, e.g. n1-standard-4"
    elif not 0 <= machine.accelerator_count <= INT32_MAX:
        yield "machineSpec.acceleratorCount", "must be between 0 and 2^31-1"
    container = pool.container_spec
    if container is not None:
        if not container.image_uri.strip():
            yield "containerSpec.imageUri", "must not be empty"
        names = [variable.name for variable in container.env]
        if len(names) > MAX_ENV_VARS:
            yield (
                "containerSpec.env",
                f"has {len(names)} variables; a container takes at most {MAX_ENV_VARS}",
            )
        for i, name in enumerate(names):
            if not _ENV_NAME.match(name):
                yield (
                    f"containerSpec.env[{i}].name",
                    f"{name!r}: names are letters, digits and '_', not starting with a digit",
                )
    disk = pool.disk_spec or DiskSpec()
    if disk.boot_disk_type not in (None, *BOOT_DISK_TYPES):
        yield (
            "diskSpec.bootDiskType",
            f"{disk.boot_disk_type!r} is not a boot disk type Vertex documents",
            ", ".join(BOOT_DISK_TYPES),
        )
    low, high = BOOT_DISK_GB_RANGE
    if disk.boot_disk_size_gb is not None and not low <= disk.boot_disk_size_gb <= high:
        yield (
            "diskSpec.bootDiskSizeGb",
            f"{disk.boot_disk_size_gb} is outside the valid range {low}-{high}",
        )


def _custom_job_spec(
    spec: CustomJobSpec, path: str, *, remote: bool
) -> Iterator[tuple[str, str] | tuple[str, str, str] | Finding]:
    pools = spec.worker_pool_specs
    strategy = spec.scheduling.strategy
    if not pools or pools[0] is None:
        yield "workerPoolSpecs", "the first pool (the chief) must be present"
    if len(pools) > MAX_POOLS:
        yield (
            "workerPoolSpecs",
            f"has {len(pools)} pools; Vertex has 4 (chief, workers, parameter servers, evaluators)",
        )
    elif pools and pools[-1] is None:
        yield (
            f"workerPoolSpecs[{len(pools) - 1}]",
            "an empty pool is only a placeholder before a later pool; drop trailing empty pools",
        )
    for index, pool in enumerate(pools[:MAX_POOLS]):
        if pool is None:
            continue
        at = f"workerPoolSpecs[{index}]"
        if index == PoolRole.CHIEF and pool.replica_count > 1:
            yield (
                f"{at}.replicaCount",
                f"the first pool (the chief) runs exactly 1 replica, got {pool.replica_count}; "
                "put further replicas in workerPoolSpecs[1]",
            )
        if pool.nfs_mounts and spec.network is None and spec.psc_interface_config is None:
            # NFS shares live in a VPC: Vertex reaches them over VPC peering (network) or a
            # Private Service Connect interface ("Mount a Network File System share").
            yield (
                f"{at}.nfsMounts",
                "NFS shares are reached over a VPC, and the job has no network",
                "set network (projects/PROJECT_NUMBER/global/networks/NAME) or "
                "pscInterfaceConfig, or drop nfsMounts",
            )
    base = spec.base_output_directory.output_uri_prefix
    if base is not None and not base.strip():
        yield "baseOutputDirectory.outputUriPrefix", "must not be empty when set"
    elif base is not None and remote and not base.startswith("gs://"):
        yield (
            "baseOutputDirectory.outputUriPrefix",
            f"{base!r} must be a Cloud Storage URI (gs://...)",
        )
    if spec.service_account is not None and not _SERVICE_ACCOUNT.match(spec.service_account):
        yield "serviceAccount", f"{spec.service_account!r} is not an email"
    if spec.network is not None and not _NETWORK.match(spec.network):
        yield "network", f"{spec.network!r} must be projects/PROJECT_NUMBER/global/networks/NAME"
    if spec.psc_interface_config is not None and spec.network is not None:
        # Two ways into a VPC, and Vertex takes one per job.
        yield (
            "pscInterfaceConfig",
            "cannot be set with network (Vertex refuses both)",
            "a Private Service Connect interface or a peered VPC network, not both",
        )
    timeout, max_wait = spec.scheduling.timeout, spec.scheduling.max_wait_duration
    if timeout is not None and timeout <= 0:
        yield "scheduling.timeout", "must be positive when set"
    if max_wait is not None and max_wait < 0:
        yield "scheduling.maxWaitDuration", "must not be negative"
    elif max_wait is not None and strategy is not SchedulingStrategy.FLEX_START:
        # Scheduling.max_wait_duration: how long a job waits for resources "if the
        # scheduling strategy is set to [Strategy.DWS_FLEX_START]" (Vertex AI API reference).
        named = "unset" if strategy is SchedulingStrategy.UNSPECIFIED else strategy.value
        yield (
            "scheduling.maxWaitDuration",
            f"applies only to the FLEX_START strategy (the strategy is {named})",
            "set scheduling.strategy to FLEX_START, or drop maxWaitDuration",
        )
    resource_id = spec.persistent_resource_id
    if resource_id is not None and not PERSISTENT_RESOURCE_ID.match(resource_id):
        yield (
            "persistentResourceId",
            f"{resource_id!r} is not a persistent resource id",
            "1-63 characters: a lowercase letter, then lowercase letters, digits or '-', not "
            "ending with '-'",
        )


def _located(view: JobView, region: str | None) -> Found:
    """The job's names that carry their location (its CMEK key, TensorBoard and Vertex
    Experiments): well formed, in the job's region, with the fields each needs beside it."""
    spec, path = view.trial_job, view.trial_job_path
    for field, name, kind in (
        ("encryptionSpec.kmsKeyName", view.encryption_spec.kms_key_name, KMS_KEY),
        (f"{path}.tensorboard", spec.tensorboard, TENSORBOARD),
        (f"{path}.experiment", spec.experiment, EXPERIMENT),
        (f"{path}.experimentRun", spec.experiment_run, EXPERIMENT_RUN),
    ):
        if problem := kind.problem(name, region):
            yield field, *problem
    if spec.tensorboard is not None and spec.base_output_directory.output_uri_prefix is None:
        yield (
            f"{path}.baseOutputDirectory",
            "is required with tensorboard (Vertex derives AIP_TENSORBOARD_LOG_DIR from it)",
        )
    if spec.experiment_run is not None and spec.experiment is None:
        yield (
            f"{path}.experimentRun",
            f"needs {path}.experiment (the run's experiment): name the experiment too",
        )
    run = EXPERIMENT_RUN.match(spec.experiment_run or "")
    experiment = EXPERIMENT.match(spec.experiment or "")
    if run and experiment:
        store, name = experiment["store"], experiment["context"]
        if run["store"] != store or not run["context"].startswith(f"{name}-"):
            yield (
                f"{path}.experimentRun",
                f"context {run['context']!r} is not a run of the experiment {name!r}: a run's "
                "context id is '<experiment>-<run>' in the experiment's metadata store",
            )


# ------------------------------------------------------------------------------ studies


def _in_domain(param: ParameterSpec, value: float | int | str) -> bool:
    if param.categorical_value_spec is not None:
        return isinstance(value, str) and value in param.categorical_value_spec.values
    if isinstance(value, str | bool):
        return False
    if param.integer_value_spec is not None:
        low, high = param.integer_value_spec.min_value, param.integer_value_spec.max_value
        return float(value).is_integer() and low <= value <= high
    if param.discrete_value_spec is not None:
        return value in param.discrete_value_spec.values
    return False


def parameter_findings(param: ParameterSpec, path: str) -> list[Finding]:
    """What one parameter at ``path`` must be in any study: judged where the parameter is
    built (its conditional children are parameters of their own, judged where each is
    built)."""
    return _at(path, _parameter(param))


def _parameter(param: ParameterSpec) -> Found:
    pid = param.parameter_id
    if not pid.strip():
        yield "parameterId", "must not be empty"
    elif any(c.isspace() for c in pid):
        yield (
            "parameterId",
            f"{pid!r} has whitespace",
            "letters, digits and '_' without spaces (the trainer gets it as --<parameterId>)",
        )
    log_scale = param.scale_type in (ScaleType.LOG, ScaleType.REVERSE_LOG)
    bounds = param.double_value_spec or param.integer_value_spec
    if bounds is not None:
        low, high = bounds.min_value, bounds.max_value
        if not (math.isfinite(low) and math.isfinite(high)):
            yield param.domain, "minValue and maxValue must be finite"
        elif low >= high:
            yield f"{param.domain}.minValue", f"{low} must be less than maxValue {high}"
        if log_scale and low <= 0:
            yield "scaleType", f"a log scale needs minValue > 0, got {low}; use UNIT_LINEAR_SCALE"
    elif param.discrete_value_spec is not None:
        values = param.discrete_value_spec.values
        pairs = list(itertools.pairwise(values))
        close = next(((a, b) for a, b in pairs if 0 < b - a < MIN_DISCRETE_GAP), None)
        at = "discreteValueSpec.values"
        if not values:
            yield at, "must list at least one value"
        elif len(values) > MAX_DISCRETE_VALUES:
            yield at, f"has {len(values)} values; at most {MAX_DISCRETE_VALUES} are allowed"
        elif any(not math.isfinite(v) for v in values):
            yield at, "values must be finite numbers"
        elif any(b <= a for a, b in pairs):
            yield at, f"must be strictly increasing, got {list(values)}"
        elif close is not None:
            yield (
                at,
                f"values must be at least {MIN_DISCRETE_GAP:g} apart: {close[0]!r} and "
                f"{close[1]!r} are not",
            )
        elif log_scale and values[0] <= 0:
            yield "scaleType", "a log scale needs all values > 0"
    elif param.categorical_value_spec is not None:
        categories = param.categorical_value_spec.values
        if not categories:
            yield "categoricalValueSpec.values", "must list at least one category"
        elif len(set(categories)) != len(categories):
            yield "categoricalValueSpec.values", "categories must be unique"
    for index, child in enumerate(param.conditional_parameter_specs):
        at = f"conditionalParameterSpecs[{index}]"
        if param.double_value_spec is not None:
            yield (
                at,
                "a double parameter cannot have conditional children; make the parent integer, "
                "discrete or categorical",
            )
        elif not child.parent_values:
            yield at, "names no parent values"
        elif bad := [v for v in child.parent_values if not _in_domain(param, v)]:
            yield at, f"{bad} are not values of the parent {pid!r}"


def _search_space(study: StudySpec) -> Iterator[tuple[ParameterSpec, str]]:
    """Every parameter of ``study`` and its path under the study, each followed by its
    conditional children (and theirs)."""
    todo = [(p, f"parameters[{i}]") for i, p in enumerate(study.parameters)]
    while todo:
        param, at = todo.pop(0)
        yield param, at
        todo[:0] = [
            (c.parameter_spec, f"{at}.conditionalParameterSpecs[{i}].parameterSpec")
            for i, c in enumerate(param.conditional_parameter_specs)
        ]


def _tuning_job(job: HyperparameterTuningJobView) -> Found:
    for key, value, low in (
        ("maxTrialCount", job.max_trial_count, 1),
        ("parallelTrialCount", job.parallel_trial_count, 1),
        ("maxFailedTrialCount", job.max_failed_trial_count, 0),
    ):
        if not low <= value <= INT32_MAX:
            yield key, f"must be between {low} and {INT32_MAX}, got {value}"
    if 1 <= job.max_trial_count < job.parallel_trial_count:
        parallel, most = job.parallel_trial_count, job.max_trial_count
        yield "parallelTrialCount", f"{parallel} exceeds maxTrialCount {most}"


def study_findings(study: StudySpec, path: str) -> list[Finding]:
    """What one study at ``path`` must be, whatever job runs it."""
    return _at(path, _study(study))


def _study(study: StudySpec) -> Found:
    if not study.metrics:
        yield "metrics", "needs at least one metric"
    ids = [m.metric_id for m in study.metrics]
    for index, metric in enumerate(study.metrics):
        at = f"metrics[{index}]"
        if not metric.metric_id.strip():
            yield f"{at}.metricId", "must not be empty: it is the tag the trainer reports"
        elif ids.count(metric.metric_id) > 1:
            yield f"{at}.metricId", f"{metric.metric_id!r} repeats"
        if metric.goal is MetricGoal.UNSPECIFIED:
            yield f"{at}.goal", "must be MAXIMIZE or MINIMIZE"
    if not study.parameters:
        yield "parameters", "needs at least one parameter to tune"
    # What a study asks of all its parameters, conditional children included: unique ids,
    # and none a grid cannot enumerate.
    seen: set[str] = set()
    for param, at in _search_space(study):
        pid = param.parameter_id
        if pid in seen:
            yield f"{at}.parameterId", f"{pid!r} is used twice; ids are unique"
        seen.add(pid)
        if study.algorithm is SearchAlgorithm.GRID and param.double_value_spec is not None:
            yield (
                at,
                f"GRID_SEARCH cannot enumerate the double parameter {pid!r}; use integer, "
                "discrete or categorical parameters, or another algorithm",
            )


def _later(later: Sequence[str] | None) -> tuple[Callable[..., bool], Callable[[str], bool]]:
    """``reads(*fields)``: whether a rule of these API fields reads a value of ``later``
    (the values not known where the Args judged the body; None: every rule runs);
    ``touched(at)``: whether the part at ``at`` holds one (its image is the job's)."""

    def reads(*fields: str) -> bool:
        return later is None or any(
            p == f or p.startswith((f"{f}.", f"{f}[")) for p in later for f in fields
        )

    def touched(at: str) -> bool:
        return later is None or any(
            p.startswith((f"{at}.", f"{at}[")) and not p.endswith(".containerSpec.imageUri")
            for p in later
        )

    return reads, touched


def _job_rules(view: JobView, reads: Callable[..., bool], site: JobSite) -> list[Finding]:
    """The job's own fields: its name, labels, located resources, run and tuning counts."""
    path = view.trial_job_path
    located = [f"{path}.{key}" for key in ("tensorboard", "experiment", "experimentRun")]
    out: list[Finding] = []
    if view.display_name is not None and reads("displayName"):
        out += display_name_findings(view.display_name)
    if reads("labels"):
        out += _at("", label_problems(view.labels))
    if reads("encryptionSpec", f"{path}.baseOutputDirectory", *located):
        out += _at("", _located(view, site.region))
    if reads(path):
        out += _at(path, _custom_job_spec(view.trial_job, path, remote=site.remote))
    tuning = ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")
    if isinstance(view, HyperparameterTuningJobView) and reads(*tuning):
        out += _at("", _tuning_job(view))
    return out


def _images_by_digest(pools: Sequence[tuple[str, WorkerPoolSpec]]) -> list[Finding]:
    """On Vertex a tag can move under a running job (and its retries, and a study's later
    trials); the local backend runs this checkout, whatever the tag."""
    valid = f'{DIGEST_FORM}, e.g. platform.image("trainer")'
    images = [(at, p.container_spec.image_uri) for at, p in pools if p.container_spec]
    return [
        Finding(f"{at}.containerSpec.imageUri", not_by_digest(image), valid=valid)
        for at, image in images
        if image.strip() and not is_by_digest(image)
    ]


@dataclass(frozen=True)
class JobSite:
    """Where a job runs, as its rules need it: the platform's place and its choices about
    the hardware catalog."""

    remote: bool
    """The job runs on Vertex: output directories are ``gs://`` URIs, images by digest."""
    region: str | None = None
    """The Vertex location whose availability is checked (None: none is, as on the local
    backend)."""
    strict: bool = False
    """What the hardware catalog does not know is an error, not a warning."""
    acknowledged: tuple[str, ...] = ()
    """The hardware checks that only warn (their ids)."""


LOCAL = JobSite(remote=False)
"""The local backend: no availability to check, any output directory."""


@dataclass(frozen=True)
class Known:
    """What of a job's body is known where its rules run."""

    unknown: tuple[str, ...] = ()
    """The API paths of values not known yet (preview): no finding about them."""
    later: tuple[str, ...] | None = None
    """The body came from the Args, all but the values at these API paths, not known when
    they judged it: judge only what reads such a value (a pool, the study or a parameter
    only where the value is theirs; an image is the job's to judge). None: judge it all."""


def job_findings(
    view: JobView,
    site: JobSite = LOCAL,
    known: Known = Known(),
    *,
    parts: Collection[str] = ("pools", "study"),
    capacity: Callable[[Sequence[WorkerPoolSpec | None], str, int], list[Finding]] | None = None,
) -> list[Finding]:
    """The rules of a job at ``site`` (the local backend unless told): errors Vertex would
    refuse, warnings for what the hardware catalog does not know; none about the values not
    ``known`` yet.

    ``parts``: also what each pool (``"pools"``), the study and each parameter (``"study"``)
    must be anywhere; the Args judged each part where it was built, but for pools given in
    ``extra_fields``.
    ``capacity``: the rule of the persistent resource the job is placed on, over its pools
    (``JobCapacity.fit_findings``).
    """
    path, later = view.trial_job_path, known.later
    reads, touched = _later(later)
    out = _job_rules(view, reads, site)
    pools = [
        (f"{path}.workerPoolSpecs[{index}]", pool)
        for index, pool in enumerate(view.trial_job.worker_pool_specs[:MAX_POOLS])
        if pool is not None
    ]
    specs = []
    if "pools" in parts:
        for at, pool in pools:
            if touched(at):
                out += _at(at, _pool(pool))
                specs += [f"{at}.machineSpec"] if _judgeable(pool) else []
    if "study" in parts and isinstance(view, HyperparameterTuningJobView) and touched("studySpec"):
        out += study_findings(view.study_spec, "studySpec")
        for param, at in _search_space(view.study_spec):
            out += parameter_findings(param, f"studySpec.{at}")
    if site.remote and reads(path):
        out += _images_by_digest(pools)
    # The job's hardware in one look at the catalog: each machine (in full where its pool
    # is judged here) with the job's scheduling strategy, and all of them in its region.
    machines = [_machine(at, pool) for at, pool in pools]
    out += check_job(
        machines,
        strategy=view.trial_job.scheduling.strategy,
        provisioning=reads(path),
        specs=specs,
        region=site.region if later is None or any(".machineSpec" in p for p in later) else None,
        strict=site.strict,
    )
    if capacity is not None:  # the machines of the persistent resource it is placed on
        parallel = max(getattr(view, "parallel_trial_count", 1), 1)
        out += capacity(view.trial_job.worker_pool_specs, f"{path}.workerPoolSpecs", parallel)
    return acknowledge(drop_unknown(out, list(known.unknown)), site.acknowledged)


__all__ = [
    "BOOT_DISK_GB_RANGE",
    "BOOT_DISK_TYPES",
    "LOCAL",
    "PERSISTENT_RESOURCE_ID",
    "JobSite",
    "Known",
    "display_name_findings",
    "job_findings",
    "label_problems",
    "parameter_findings",
    "pool_findings",
    "study_findings",
]
