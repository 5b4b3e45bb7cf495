"""Rules on platform values, shared by ``TrainingPlatformArgs`` and the stack config reader:
names Google Cloud accepts (projects, buckets, repositories, images, zones, keys), the
settings' ranges, the Workbench's zone and GPUs, and the environment kinds. Plain Python:
no pulumi_gcp.

Each rule is a function over plain values returning ``Finding``s, each at the field in
``TrainingPlatformArgs``' spelling (``workbench.zone``, the finding's ``path``); every
route sets its own path as the caller's (``TrainingPlatformArgs.workbench.zone``,
``vertex-training:workbenchZone``) and renders the finding with the same words.
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
import re
from dataclasses import dataclass

from vertex_training.findings import Finding
from vertex_training.jobs.rules.hardware import (
    acknowledge,
    check_machine_spec,
    check_region,
    check_zone,
)
from vertex_training.jobs.rules.image import DIGEST_FORM, is_by_digest
from vertex_training.jobs.rules.located import KMS_KEY, TENSORBOARD

__all__ = [
    "GCP_PROJECT_ID",
    "REPOSITORY_ID",
    "SETTINGS",
    "WORKBENCH_GPU_COUNT_VALID",
    "EnvironmentKind",
    "InvalidValueError",
    "PlatformValues",
    "WorkbenchValues",
    "bucket_name_problems",
    "image_name_problems",
    "image_reference_problems",
    "judge_platform",
    "tensorboard_problems",
]

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*[a-z0-9]$")
REPOSITORY_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
IMAGE_NAME = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
IMAGE_REFERENCE = re.compile(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})?$"
)
ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)-[a-z]$")
GCP_PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


BUCKET_NAME_VALID = (
    "3-63 characters of lowercase letters, digits, '-', '_' and '.', starting and ending "
    "with a letter or digit, no 'goog' prefix, no 'google', not an IP address"
)
REPOSITORY_ID_VALID = "1-63 characters: lowercase letters, digits and '-', starting with a letter"
IMAGE_NAME_VALID = "lowercase letters, digits and single '.', '_', '-' or '/' separators"


class EnvironmentKind(enum.StrEnum):
    """What a stack stands up; the kind decides the safety rules, config the sizes."""

    LOCAL = "local"
    """No Google Cloud account: jobs run on this machine, nothing ``gcp:`` is registered."""
    DEV = "dev"
    """Cheap and disposable: buckets force-destroyed, staging objects expire."""
    PROD = "prod"
    """Trained models survive ``pulumi destroy``: versioning, soft delete, protection."""

    @property
    def is_cloud(self) -> bool:
        return self is not EnvironmentKind.LOCAL


class InvalidValueError(ValueError):
    """A value Google Cloud would refuse: ``problem`` and what would be ``valid``."""

    def __init__(self, problem: str, valid: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.valid = valid


@dataclass(frozen=True)
class Bounds:
    """The range Google Cloud accepts for one platform setting, and how to phrase it."""

    low: int
    high: int
    unit: str
    what: str = "is out of range"
    off: int | None = None
    """A value outside the range that is accepted too (0: the feature off)."""

    @property
    def valid(self) -> str:
        span = f"an integer from {self.low} to {self.high}"
        return span if self.off is None else f"{self.off}, or {span}"

    def in_range(self, value: int) -> bool:
        return value == self.off or self.low <= value <= self.high


SETTINGS: dict[str, Bounds] = {
    "image_keep_count": Bounds(1, 1000, "images"),
    "staging_retention_days": Bounds(1, 3650, "days"),
    # Cloud Storage soft delete: a retention of 7 to 90 days, or 0 to turn it off.
    "soft_delete_retention_days": Bounds(
        7, 90, "days", "is not a soft delete duration Cloud Storage accepts", off=0
    ),
    "disk_size_gb": Bounds(150, 64000, "GB", "is not a valid boot disk size"),
    "idle_timeout_minutes": Bounds(10, 1440, "minutes"),
}
"""The one place each platform setting's range lives: ``TrainingPlatformArgs`` (and its
``Workbench``) and the stack config reader both check these, by these names."""


def settings_problems(values: dict[str, int], prefix: str = "") -> list[Finding]:
    """A problem for each of ``values`` (a ``SETTINGS`` name -> value) out of range, every
    one of them (one run reports them all); fields are ``prefix`` + the name."""
    return [
        Finding(prefix + name, f"{value} {bounds.unit} {bounds.what}", valid=bounds.valid)
        for name, value in values.items()
        if not (bounds := SETTINGS[name]).in_range(value)
    ]


def project_problems(project: str | None, environment: EnvironmentKind) -> list[Finding]:
    """A cloud stack needs a Google Cloud project, by a valid id."""
    valid = (
        "a Google Cloud project id: 6-30 characters of lowercase letters, digits and '-', "
        "starting with a letter (optionally prefixed by a domain and ':')"
    )
    if environment.is_cloud and not project:
        problem = f"missing: a {environment.value} environment needs a Google Cloud project"
        return [Finding("project", f"{problem} to create resources in", valid=valid)]
    if project and not GCP_PROJECT_ID.match(project):
        return [Finding("project", f"'{project}' is not a Google Cloud project id", valid=valid)]
    return []


def bucket_name_problems(name: str | None) -> list[Finding]:
    """The Cloud Storage naming rules."""
    if name is None:
        return []
    if not 3 <= len(name) <= (222 if "." in name else 63):
        problem = f"'{name}' has {len(name)} characters"
    elif not _BUCKET_NAME.match(name):
        problem = f"'{name}' is not a valid bucket name"
    elif any(len(part) > 63 or not part for part in name.split(".")):
        problem = f"'{name}' has an empty or over-long dot-separated part"
    elif name.startswith("goog") or "google" in name:
        problem = f"'{name}' uses a name reserved by Google"
    elif _is_ip_address(name):
        problem = f"'{name}' looks like an IP address"
    else:
        return []
    return [Finding("bucket_name", problem, valid=BUCKET_NAME_VALID)]


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def image_name_problems(name: str, field: str = "image_name") -> list[Finding]:
    if IMAGE_NAME.match(name):
        return []
    return [Finding(field, f"'{name}' is not a valid image name", valid=IMAGE_NAME_VALID)]


def image_reference_problems(reference: str, field: str, *, by_digest: bool) -> list[Finding]:
    """An image reference; ``by_digest``: jobs must run exactly the image that was tested
    (a tag can move, a digest cannot)."""
    if not IMAGE_REFERENCE.match(reference):
        valid = DIGEST_FORM if by_digest else f"REGISTRY/PATH[:TAG] or {DIGEST_FORM}"
        return [Finding(field, f"'{reference}' is not a container image reference", valid=valid)]
    if by_digest and not is_by_digest(reference):
        problem = f"'{reference}' is not an image by digest (a tag can move while a job runs)"
        return [Finding(field, problem, valid=DIGEST_FORM)]
    return []


def tensorboard_problems(name: str | None, region: str) -> list[Finding]:
    """An existing Vertex AI TensorBoard's name, in ``region``: Vertex refuses a job whose
    TensorBoard lives elsewhere (only the first job that names it, long after ``up``)."""
    problem = TENSORBOARD.problem(name, region)
    if problem is None:
        return []
    message, valid = problem
    return [Finding("tensorboard.existing", message, valid=valid)]


@dataclass(frozen=True)
class WorkbenchValues:
    """A Workbench instance's values, as both routes have them."""

    zone: str | None
    machine_type: str
    gpu_type: str | None
    gpu_count: int
    container_image: str | None
    disk_size_gb: int
    idle_timeout_minutes: int
    enabled: bool = True
    """False: a stack that declares the values but no instance. Its zone, image, ranges
    and machine type name are still held to their rules (a typo is a typo); the catalog's
    fit and availability checks have no instance to judge."""


WORKBENCH_GPU_COUNT_VALID = "0 without a GPU type; 1, 2, 4 or 8 with one"


def _catalog_field(finding: Finding) -> str:
    """The Workbench field a hardware catalog finding is about, in
    ``TrainingPlatformArgs``' spelling. A machine that does not take the GPU (``attach:``)
    is the machine type's to change: the message lists the machines that take it; so is a
    machine that comes with its GPUs where none was given (``accelerator-required:``): the
    machine type is what the user wrote."""
    key = finding.path.rsplit(".", 1)[-1]
    machine_said = finding.check.startswith(("attach:", "accelerator-required:"))
    if key == "acceleratorType" and not machine_said:
        return "workbench.accelerator.type"
    if key == "acceleratorCount":
        return "workbench.accelerator.count"
    return "workbench.zone" if key == "zone" else "workbench.machine_type"


def _judge_workbench(
    region: str, workbench: WorkbenchValues, *, cloud: bool
) -> tuple[list[Finding], list[Finding]]:
    """The Workbench instance's own values (a zone of ``region``, a container image, a GPU
    count not negative, the disk and idle timeout ranges), and the hardware catalog's view
    of it, to be acknowledged by the caller: a machine type name, a GPU type with a count,
    a count with a type, the machine takes them, and (cloud) the zone offers them. Paths:
    ``workbench.<name>``."""
    zone = workbench.zone
    out: list[Finding] = []
    if zone is not None and not ZONE.match(zone):
        valid = "REGION-LETTER, e.g. us-central1-a"
        out.append(Finding("workbench.zone", f"'{zone}' is not a zone name", valid=valid))
    elif zone is not None and not zone.startswith(f"{region}-"):
        problem = f"'{zone}' is not a zone of the region {region}"
        valid = f"unset (means {region}-a) or {region}-<letter>"
        out.append(Finding("workbench.zone", problem, valid=valid))
    if workbench.gpu_count < 0:
        problem = f"{workbench.gpu_count} GPUs is negative"
        out.append(Finding("workbench.accelerator.count", problem, valid=WORKBENCH_GPU_COUNT_VALID))
    findings = check_machine_spec(
        path="workbench",
        machine_type=workbench.machine_type,
        accelerator_type=workbench.gpu_type,
        accelerator_count=max(workbench.gpu_count, 0),
        target="workbench",
    )
    if not workbench.enabled:
        # No instance: the catalog has nothing to say of it, but a typo is a typo.
        findings = [f for f in findings if f.check == "machine-type-name"]
    elif cloud and not out:  # a refused zone is not judged again
        findings += check_zone(
            path="workbench.zone", zone=zone or f"{region}-a", accelerator_type=workbench.gpu_type
        )
    if workbench.container_image is not None:
        out += image_reference_problems(
            workbench.container_image, "workbench.container_image", by_digest=False
        )
    out += settings_problems(
        {
            "disk_size_gb": workbench.disk_size_gb,
            "idle_timeout_minutes": workbench.idle_timeout_minutes,
        },
        "workbench.",
    )
    return out, [dataclasses.replace(f, path=_catalog_field(f)) for f in findings]


# --------------------------------------------------------------------------- a platform


@dataclass(frozen=True)
class PlatformValues:
    """What every route knows of a platform before anything is registered, as plain
    values: ``TrainingPlatformArgs`` and the stack config reader each build one and judge
    it with ``judge_platform``. None: not set (or, for the project, not known yet)."""

    environment: EnvironmentKind
    project: str | None
    region: str
    bucket_name: str | None
    derived_bucket_name: str | None
    """The name the platform gives its bucket when ``bucket_name`` is None (None: not
    known yet); it must follow the same rules as a chosen one."""
    repository_name: str | None
    kms_key_name: str | None
    image_keep_count: int
    staging_retention_days: int
    soft_delete_retention_days: int
    workbench: WorkbenchValues | None
    strict: bool
    acknowledged: tuple[str, ...] = ()
    check_project: bool = True
    """False where the project comes from another resource (judged when known)."""


def judge_platform(values: PlatformValues) -> list[Finding]:
    """Every problem and warning on ``values``, each at its field in
    ``TrainingPlatformArgs``' spelling: the names Google Cloud accepts, the settings'
    ranges, the region, and the Workbench's values, then the hardware catalog's view of
    them (acknowledged checks become warnings). All of them, so one run shows the list."""
    out: list[Finding] = []
    if values.check_project:
        out += project_problems(values.project, values.environment)
    out += bucket_name_problems(values.bucket_name)
    if values.bucket_name is None and values.derived_bucket_name is not None and not out:
        # Derived from the project: only worth judging once the project is a valid id.
        out += [
            Finding(p.path, f"not set, and the derived name {p.message}", valid=p.valid)
            for p in bucket_name_problems(values.derived_bucket_name)
        ]
    repository = values.repository_name
    if repository is not None and not REPOSITORY_ID.match(repository):
        problem = f"'{repository}' is not a valid repository id"
        out.append(Finding("repository_name", problem, valid=REPOSITORY_ID_VALID))
    if (kms := KMS_KEY.problem(values.kms_key_name, values.region)) is not None:
        out.append(Finding("kms_key_name", kms[0], valid=kms[1]))
    out += settings_problems(
        {
            "image_keep_count": values.image_keep_count,
            "staging_retention_days": values.staging_retention_days,
            "soft_delete_retention_days": values.soft_delete_retention_days,
        }
    )
    # The catalog's findings say what would be valid themselves (the regions, the machines).
    findings = check_region(values.region, (), strict=values.strict)
    if values.workbench is not None:
        problems, found = _judge_workbench(
            values.region, values.workbench, cloud=values.environment.is_cloud
        )
        out += problems
        findings += found
        if values.workbench.enabled and not values.environment.is_cloud:
            message = "a local platform has no Workbench instance: the settings are ignored"
            out.append(Finding("workbench", message, "warning", valid="None on local"))
    return out + acknowledge(findings, values.acknowledged)
