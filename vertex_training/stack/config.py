"""The one reader of stack configuration.

Turns a stack's settings into frozen, validated models before any resource is
registered. The same validation runs whether the values come from the Pulumi
engine (``load_pulumi_config``, inside a program) or straight from a stack file
(``load_stack_config``, for tools that run without the engine, such as the local
job runner).

Config keys are flat and camelCase (``vertex-training:workbenchMachineType``)
because the project schema in ``Pulumi.yaml`` only types scalars and arrays.
Inside the program they are grouped into one pydantic model per section; a
field's alias *is* its config key. Adding a key means adding a field (or a
section to ``StackConfig`` and ``SECTIONS``) and its entry in ``Pulumi.yaml``;
``tests/test_config.py`` checks that the two agree.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic.fields import FieldInfo

from vertex_training._project import project_root
from vertex_training._spelling import closest
from vertex_training.jobs.declarations import JobDeclaration, job_problems, read_job
from vertex_training.jobs.rules.hardware import acknowledge, catalog, check_region
from vertex_training.platform.names import derived_bucket_name
from vertex_training.platform.rules import (
    GCP_PROJECT_ID,
    EnvironmentKind,
    InvalidValueError,
    Problem,
    bucket_name_problems,
    check_bucket_name,
    image_name_problems,
    image_reference_problems,
    kms_key_problems,
    project_problems,
    repository_problems,
    settings_problems,
    workbench_findings,
    workbench_problems,
)

__all__ = [
    "GCP_PROJECT_KEY",
    "PROJECT_NAME",
    "SECTIONS",
    "ConfigError",
    "ConfigProblem",
    "EnvironmentKind",
    "GeneralSettings",
    "ImageSettings",
    "RegistrySettings",
    "StackConfig",
    "StorageSettings",
    "WorkbenchSettings",
    "check_bucket_name",
    "known_config_keys",
    "load_pulumi_config",
    "load_stack_config",
    "parse_stack_config",
    "stack_name_of",
]

PROJECT_NAME = "vertex-training"
"""The Pulumi project name, and so the namespace of every project config key."""


GCP_PROJECT_KEY = "gcp:project"


_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^.]+)\.ya?ml$")


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a stack's config, phrased so that a user can fix it."""

    key: str
    """The full config key, ``namespace:name``."""
    problem: str
    """What was wrong with the value (or its absence)."""
    valid: str
    """What would be valid."""
    fix: str
    """The command that fixes it."""

    def __str__(self) -> str:
        return f"{self.key}: {self.problem}. Valid: {self.valid}. Fix: {self.fix}"


class ConfigError(ValueError):
    """The stack config is invalid; raised before any resource is registered."""

    def __init__(self, stack: str, problems: list[ConfigProblem]) -> None:
        self.stack = stack
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid config for stack '{stack}':\n{lines}")


# --------------------------------------------------------------------------- sections


def _key(alias: str, default: Any, description: str, valid: str, example: str) -> Any:
    """A config field: its alias is the config key; ``valid``/``example`` feed errors."""
    return Field(
        default,
        alias=alias,
        description=description,
        json_schema_extra={"valid": valid, "example": example},
    )


class _Section(BaseModel):
    # extra="forbid" is belt and braces: unknown keys are caught (with a suggestion)
    # before sections are built, but a section must never swallow a stray field.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=False)


def _empty_to_none(value: object) -> object:
    # Pulumi.yaml cannot declare a null default, so "" means "not set" for optional strings.
    return None if value == "" else value


class GeneralSettings(_Section):
    environment: EnvironmentKind = _key(
        "environment",
        EnvironmentKind.LOCAL,
        "What the stack stands up: local (no cloud), dev (disposable) or prod (protected).",
        "one of local, dev, prod",
        "dev",
    )
    region: str = _key(
        "region",
        "us-central1",
        "Google Cloud region of the bucket, the registry and the training jobs.",
        "a region where Vertex AI training runs, e.g. us-central1, europe-west4",
        "us-central1",
    )
    strict_hardware_checks: bool = _key(
        "strictHardwareChecks",
        False,
        "Refuse machines, accelerators and regions the hardware catalog does not know "
        "(off: they pass with a warning).",
        "true or false",
        "true",
    )
    acknowledged_hardware_checks: tuple[str, ...] = _key(
        "acknowledgedHardwareChecks",
        (),
        "Hardware check ids (each error names its own: '(check accelerator-region:"
        "NVIDIA_B200@europe-west4)') to warn about instead of refusing: the override for one "
        "catalog row that is out of date.",
        "a list of check ids",
        '["accelerator-region:NVIDIA_B200@europe-west4"]',
    )
    budget: int = _key(
        "budget",
        0,
        "USD one run of every job of the stack plus an hour of Workbench may cost (0: no "
        "budget); the policy pack refuses an estimate over it in prod, warns elsewhere.",
        "0 (no budget) or a whole number of US dollars > 0",
        "50",
    )
    tensorboard_enabled: bool = _key(
        "tensorboardEnabled",
        False,
        "Cloud stacks: a Vertex AI TensorBoard the jobs stream their logs to "
        "(local: make tensorboard).",
        "true or false",
        "true",
    )
    kms_key_name: str | None = _key(
        "kmsKeyName",
        None,
        'CMEK for the bucket, the TensorBoard and every job; "" means Google-managed keys.',
        "projects/P/locations/<region>/keyRings/K/cryptoKeys/C, in the stack's region",
        "projects/my-project/locations/us-central1/keyRings/ml/cryptoKeys/training",
    )
    local_root: str = _key(
        "localRoot",
        ".local-vertex",
        "local stack: directory (relative to the project) that holds the local bucket and logs.",
        "a relative or absolute directory path",
        ".local-vertex",
    )

    @field_validator("region")
    @classmethod
    def _region_is_known(cls, value: str) -> str:
        # A malformed name or a near miss of a catalog region is refused here; a region the
        # catalog does not list is judged with the stack's strictness (_region_problems).
        if any(
            f.severity == "error"
            for f in check_region(path="region", region=value, accelerators=())
        ):
            guess = closest(value, sorted(catalog().regions), cutoff=0.8)
            raise InvalidValueError(
                f"'{value}' is not a region where Vertex AI training runs"
                + (f" (did you mean {guess}?)" if guess else ""),
                "one of " + ", ".join(sorted(catalog().regions)),
            )
        return value

    kms_empty_means_unset = field_validator("kms_key_name", mode="before")(_empty_to_none)

    @field_validator("budget", mode="before")
    @classmethod
    def _budget_not_a_flag(cls, value: object) -> object:
        # Lax integers would take true as $1.
        if isinstance(value, bool) or value in ("true", "false"):
            raise InvalidValueError(
                f"{value!r} is not a budget", "0 (no budget) or a whole number of US dollars > 0"
            )
        return value

    @field_validator("budget")
    @classmethod
    def _budget_not_negative(cls, value: int) -> int:
        if value < 0:
            raise InvalidValueError(
                f"{value} is not a budget", "0 (no budget) or a whole number of US dollars > 0"
            )
        return value

    @field_validator("local_root")
    @classmethod
    def _local_root_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise InvalidValueError("the directory is empty", "a relative or absolute path")
        return value


class StorageSettings(_Section):
    bucket_name: str | None = _key(
        "bucketName",
        None,
        'Bucket for staging, checkpoints, model exports and job dirs; "" derives '
        "<gcp project>-<stack>-vertex.",
        "3-63 characters of lowercase letters, digits, '-', '_' and '.', starting and "
        "ending with a letter or digit, no 'goog' prefix, no 'google', not an IP address",
        "my-project-dev-vertex",
    )
    staging_retention_days: int = _key(
        "stagingRetentionDays",
        7,
        "Days after which objects under staging/ are deleted (job packages, temporary files).",
        "an integer from 1 to 3650",
        "7",
    )
    soft_delete_retention_days: int = _key(
        "softDeleteRetentionDays",
        7,
        "prod: days a deleted or overwritten object stays recoverable (0 turns it off).",
        "0, or an integer from 7 to 90",
        "7",
    )

    empty_means_unset = field_validator("bucket_name", mode="before")(_empty_to_none)


class RegistrySettings(_Section):
    repository_name: str = _key(
        "repositoryName",
        "trainers",
        "Artifact Registry Docker repository id for the trainer images.",
        "1-63 characters: lowercase letters, digits and '-', starting with a letter",
        "trainers",
    )
    keep_count: int = _key(
        "imageKeepCount",
        10,
        "Cleanup policy: how many most recent image versions the repository keeps.",
        "an integer from 1 to 1000",
        "10",
    )


class ImageSettings(_Section):
    image_name: str = _key(
        "imageName",
        "trainer",
        "Name of the trainer image inside the repository.",
        "lowercase letters, digits and single '.', '_', '-' or '/' separators",
        "trainer",
    )
    pinned_reference: str | None = _key(
        "trainerImage",
        None,
        '"" builds docker/trainer.Dockerfile and pushes it; otherwise an existing image '
        "by digest to use as is.",
        '"" or an image reference by digest, REGISTRY/PATH@sha256:<64 hex digits>',
        "us-central1-docker.pkg.dev/my-project/trainers/trainer@sha256:<digest>",
    )

    empty_means_unset = field_validator("pinned_reference", mode="before")(_empty_to_none)


class WorkbenchSettings(_Section):
    enabled: bool = _key(
        "workbenchEnabled",
        True,
        "Whether the stack has a Vertex AI Workbench instance for interactive work.",
        "true or false",
        "false",
    )
    zone: str | None = _key(
        "workbenchZone",
        None,
        'Zone of the Workbench instance; "" means <region>-a.',
        '"" or a zone of the stack\'s region, e.g. us-central1-a',
        "us-central1-a",
    )
    machine_type: str = _key(
        "workbenchMachineType",
        "n1-standard-4",
        "Compute Engine machine type of the Workbench instance.",
        "a machine type such as n1-standard-4, e2-standard-8, g2-standard-8",
        "n1-standard-4",
    )
    gpu_type: str | None = _key(
        "workbenchGpuType",
        None,
        '"" for no GPU, or the accelerator attached to the Workbench instance.',
        '"" or a GPU type a Workbench machine takes (the hardware catalog lists them)',
        "NVIDIA_TESLA_T4",
    )
    gpu_count: int = _key(
        "workbenchGpuCount",
        0,
        "Number of GPUs on the Workbench instance (0 without workbenchGpuType).",
        "0 without a GPU type; 1, 2, 4 or 8 with one",
        "1",
    )
    disk_size_gb: int = _key(
        "workbenchDiskSizeGb",
        150,
        "Boot disk size of the Workbench instance in GB.",
        "an integer from 150 to 64000",
        "150",
    )
    container_image: str | None = _key(
        "workbenchContainerImage",
        None,
        '"" for the standard Workbench image, or a custom container image to run instead.',
        '"" or an image reference, REGISTRY/PATH[:TAG]',
        "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/tf2-cpu.2-17.py310",
    )
    idle_timeout_minutes: int = _key(
        "workbenchIdleTimeoutMinutes",
        60,
        "Minutes of inactivity after which the Workbench instance shuts down.",
        "an integer from 10 to 1440",
        "60",
    )

    empty_means_unset = field_validator("zone", "gpu_type", "container_image", mode="before")(
        _empty_to_none
    )


class JobsSettings(_Section):
    # The Args types are the jobs' schema (declarations.read_job), not pydantic.
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    jobs: tuple[JobDeclaration, ...] = _key(
        "jobs",
        (),
        "Training and tuning jobs of the stack (vertex_training/jobs/declarations.py: the format).",
        valid="a list of job mappings: name, and the fields of vt.CustomJobArgs (or, with "
        "trial and study, vt.HyperparameterTuningJobArgs) in camelCase",
        example="[{name: my-job, chief: {machineType: n1-standard-4}}]",
    )


class StackConfig(BaseModel):
    """Everything a stack says, validated. Built only by this module's loaders."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str
    gcp_project: str | None
    """``gcp:project``; None only on local stacks."""
    general: GeneralSettings
    storage: StorageSettings
    registry: RegistrySettings
    image: ImageSettings
    workbench: WorkbenchSettings
    jobs: JobsSettings
    warnings: tuple[str, ...] = ()
    """What passed but deserves a look (hardware the catalog does not know)."""

    @property
    def environment(self) -> EnvironmentKind:
        return self.general.environment

    @property
    def region(self) -> str:
        return self.general.region

    @property
    def budget(self) -> float | None:
        """``budget`` in USD, None when the stack sets none (0)."""
        return float(self.general.budget) if self.general.budget else None

    @property
    def bucket_name(self) -> str:
        """The configured bucket name, or the derived ``<project>-<stack>-vertex``."""
        if self.storage.bucket_name is not None:
            return self.storage.bucket_name
        return derived_bucket_name(self.gcp_project or PROJECT_NAME, self.stack)

    @property
    def workbench_zone(self) -> str:
        return self.workbench.zone or f"{self.region}-a"

    @property
    def local_root(self) -> Path:
        """Absolute directory of the local stack's bucket, logs and job state."""
        root = Path(self.general.local_root)
        return root if root.is_absolute() else project_root() / root


SECTIONS: Mapping[str, type[_Section]] = {
    "general": GeneralSettings,
    "storage": StorageSettings,
    "registry": RegistrySettings,
    "image": ImageSettings,
    "workbench": WorkbenchSettings,
    "jobs": JobsSettings,
}
"""``StackConfig`` field -> section model; each section field's alias is a config key."""


def known_config_keys() -> dict[str, FieldInfo]:
    """Every project config key (without namespace) and the field that holds it."""
    keys: dict[str, FieldInfo] = {}
    for model in SECTIONS.values():
        for name, info in model.model_fields.items():
            keys[info.alias or name] = info
    return keys


# --------------------------------------------------------------------------- parsing


def _fix_set(key: str, example: str, stack: str) -> str:
    return f"pulumi config set {key} {_shell_quote(example)} --stack {stack}"


def _shell_quote(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_./:@<>-]+", value) else f"'{value}'"


def _decode(value: object) -> object:
    # The CLI hands structured values to the program as JSON text.
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def parse_stack_config(stack: str, raw: Mapping[str, object]) -> StackConfig:
    """Validate ``raw`` (full ``namespace:key`` -> value) into a ``StackConfig``.

    Collects every problem before failing, so one run shows the whole list.
    """
    problems: list[ConfigProblem] = []
    known = known_config_keys()
    prefix = f"{PROJECT_NAME}:"
    ours: dict[str, object] = {}
    for full_key, value in raw.items():
        if not full_key.startswith(prefix):
            # Other namespaces (gcp:, pulumi:, docker-build:, ...) belong to their providers;
            # one that is only a misspelling of ours would be silently ignored.
            problem = _misspelt_namespace(full_key, stack)
            if problem is not None:
                problems.append(problem)
            continue
        short = full_key.removeprefix(prefix)
        if short.startswith("config:"):  # the legacy "project:config:key" spelling
            short = short.removeprefix("config:")
        if short not in known:
            close = difflib.get_close_matches(short, list(known), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(
                ConfigProblem(
                    key=full_key,
                    problem=f"unknown config key{hint}; a typo here would be silently ignored",
                    valid="one of " + ", ".join(sorted(known)),
                    fix=f"pulumi config rm {full_key} --stack {stack}"
                    + (
                        f" && pulumi config set {prefix}{close[0]} <value> --stack {stack}"
                        if close
                        else ""
                    ),
                )
            )
            continue
        ours[short] = _decode(value)

    sections: dict[str, _Section] = {}
    for section_name, model in SECTIONS.items():
        if model is JobsSettings:
            continue
        aliases = {info.alias or name for name, info in model.model_fields.items()}
        try:
            sections[section_name] = model.model_validate(
                {k: v for k, v in ours.items() if k in aliases}
            )
        except ValidationError as error:
            problems.extend(_problems_from(error, model, stack))

    try:
        # Read on its own so a bad region does not hide a missing gcp:project.
        environment: EnvironmentKind | None = EnvironmentKind(
            str(ours.get("environment", EnvironmentKind.LOCAL))
        )
    except ValueError:
        environment = None  # already reported by the general section
    gcp_project = raw.get(GCP_PROJECT_KEY)
    if gcp_project is not None and not isinstance(gcp_project, str):
        gcp_project = str(gcp_project)
    problems += [
        _phrased(p, stack)
        for p in project_problems(gcp_project, environment or EnvironmentKind.LOCAL)
    ]
    general = sections.get("general")
    jobs, job_problems_found, warnings = _jobs(
        stack, ours.get("jobs"), general if isinstance(general, GeneralSettings) else None
    )
    sections["jobs"] = JobsSettings.model_construct(jobs=jobs)
    problems.extend(job_problems_found)
    rule_problems, rule_warnings = _rule_problems(stack, sections, str(ours.get("region", "")))
    problems.extend(rule_problems)
    warnings.extend(rule_warnings)
    storage = sections.get("storage")
    if (
        isinstance(storage, StorageSettings)
        and storage.bucket_name is None
        and gcp_project
        and GCP_PROJECT_ID.match(gcp_project)
    ):
        # The derived name must follow the same rules as a configured one.
        for p in bucket_name_problems(derived_bucket_name(gcp_project, stack)):
            bucket_key = f"{PROJECT_NAME}:bucketName"
            problems.append(
                ConfigProblem(
                    key=bucket_key,
                    problem=f"not set, and the derived name {p.problem}",
                    valid=p.valid,
                    fix=_fix_set(bucket_key, "<a-valid-bucket-name>", stack),
                )
            )
    if problems:
        raise ConfigError(stack, problems)
    # model_validate rather than the constructor: sections is keyed by field name.
    return StackConfig.model_validate(
        {
            "stack": stack,
            "gcp_project": gcp_project or None,
            **sections,
            "warnings": tuple(warnings),
        }
    )


def _misspelt_namespace(full_key: str, stack: str) -> ConfigProblem | None:
    """A problem when ``full_key``'s namespace is a misspelling of the project's name
    (``vertex-trainng:jobs``, ``vertex_training:region``); None for any other namespace."""
    namespace, colon, short = full_key.partition(":")
    if not colon:
        return None
    # A close spelling only: "vertex:" or "gcp:" may well be someone else's namespace.
    near = difflib.SequenceMatcher(None, namespace.lower(), PROJECT_NAME).ratio() >= 0.85
    if not near and _squeezed(namespace) != _squeezed(PROJECT_NAME):
        return None
    meant = f"{PROJECT_NAME}:{short}"
    return ConfigProblem(
        key=full_key,
        problem=f"unknown namespace '{namespace}' (did you mean '{meant}'?); a misspelt "
        "namespace would be silently ignored",
        valid=f"{PROJECT_NAME}:<key> for this project's keys (the name in Pulumi.yaml); "
        "other namespaces (gcp:, pulumi:, ...) are their providers'",
        fix=f"pulumi config rm {full_key} --stack {stack} && pulumi config set {meant} <value> "
        f"--stack {stack}",
    )


def _squeezed(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _problems_from(
    error: ValidationError, model: type[_Section], stack: str
) -> list[ConfigProblem]:
    by_alias = {info.alias or name: info for name, info in model.model_fields.items()}
    problems: list[ConfigProblem] = []
    for item in error.errors():
        alias = str(item["loc"][0]) if item["loc"] else "?"
        info = by_alias.get(alias)
        extra = info.json_schema_extra if info is not None else None
        meta = extra if isinstance(extra, dict) else {}
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, InvalidValueError):
            problem, valid = cause.problem, cause.valid
        else:
            problem = f"{item['msg']} (got {item.get('input')!r})"
            valid = str(meta.get("valid", "see Pulumi.yaml"))
        if len(item["loc"]) > 1:
            # Structured values (lists of objects): say where inside the value.
            inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"][1:])
            problem = f"at {alias}{inner}: {problem}"
        key = f"{PROJECT_NAME}:{alias}"
        problems.append(
            ConfigProblem(
                key=key,
                problem=problem,
                valid=valid,
                fix=_fix_set(key, str(meta.get("example", "<value>")), stack),
            )
        )
    return problems


def _jobs_key(stack: str, path: str) -> tuple[str, str]:
    key = f"{PROJECT_NAME}:{path}"
    return key, (
        f"edit {path} under {PROJECT_NAME}:jobs in stacks/Pulumi.{stack}.yaml "
        "(pulumi config set would replace the whole job list)"
    )


def _jobs(
    stack: str, raw: object, general: GeneralSettings | None
) -> tuple[tuple[JobDeclaration, ...], list[ConfigProblem], list[str]]:
    """Each job validated on its own, so one job's mistake hides no other's; then every
    job's body checked against the rules (GPUs in the stack's region on cloud stacks)."""
    if raw is None or raw == "":
        return (), [], []
    if not isinstance(raw, list | tuple):
        key, fix = _jobs_key(stack, "jobs")
        return (), [ConfigProblem(key, "must be a list of job mappings", "a YAML list", fix)], []
    jobs: list[JobDeclaration] = []
    problems: list[ConfigProblem] = []
    indexes: list[int] = []
    for index, item in enumerate(raw):
        job, unreadable = read_job(item, f"jobs[{index}]")
        for one in unreadable:
            key, fix = _jobs_key(stack, one.path)
            problems.append(ConfigProblem(key, one.problem, one.valid, fix))
        if job is not None:
            jobs.append(job)
            indexes.append(index)
    if general is None:
        return tuple(jobs), problems, []
    cloud = general.environment.is_cloud
    warnings: list[str] = []
    found = job_problems(
        tuple(jobs),
        region=general.region if cloud else None,
        remote=cloud,
        strict=general.strict_hardware_checks,
    )
    checked = acknowledge((f for _, f in found), general.acknowledged_hardware_checks)
    for (path, _), finding in zip(found, checked, strict=True):
        # job_problems numbers the valid jobs; name them by their place in the list.
        head, _, rest = path.partition("]")
        position = indexes[int(head.removeprefix("jobs["))]
        config_path = f"jobs[{position}]{rest}"
        text = f"{finding.message} (Vertex field {finding.path})"
        if finding.path == "region" and finding.check.startswith("unknown-region:"):
            continue  # the stack's region itself: reported once, at the region key
        if finding.path == "region":
            # The job runs in the stack's region: that is the key to change.
            text = f"jobs[{position}]: {finding.message}"
            if finding.severity == "warning":
                warnings.append(f"{PROJECT_NAME}:region: {text}")
            else:
                region_key = f"{PROJECT_NAME}:region"
                problems.append(
                    ConfigProblem(
                        region_key, text, "see the problem", _fix_set(region_key, "<region>", stack)
                    )
                )
            continue
        if finding.severity == "warning":
            warnings.append(f"{PROJECT_NAME}:{config_path}: {text}")
            continue
        key, fix = _jobs_key(stack, config_path)
        problems.append(ConfigProblem(key, text, "see the problem", fix))
    return tuple(jobs), problems, warnings


_RULE_KEYS = {
    "project": GCP_PROJECT_KEY,
    "kms_key_name": "kmsKeyName",
    "bucket_name": "bucketName",
    "staging_retention_days": "stagingRetentionDays",
    "soft_delete_retention_days": "softDeleteRetentionDays",
    "repository_name": "repositoryName",
    "image_keep_count": "imageKeepCount",
    "image_name": "imageName",
    "trainer_image": "trainerImage",
    "workbench.zone": "workbenchZone",
    "workbench.machine_type": "workbenchMachineType",
    "workbench.accelerator.type": "workbenchGpuType",
    "workbench.accelerator.count": "workbenchGpuCount",
    "workbench.container_image": "workbenchContainerImage",
    "workbench.disk_size_gb": "workbenchDiskSizeGb",
    "workbench.idle_timeout_minutes": "workbenchIdleTimeoutMinutes",
}
"""A platform rule's field (``TrainingPlatformArgs``' spelling) -> the config key."""


def _phrased(problem: Problem, stack: str) -> ConfigProblem:
    """A platform rule's problem, at the config key that holds its field."""
    short = _RULE_KEYS[problem.field]
    if short == GCP_PROJECT_KEY:
        key, example = short, "<your-project-id>"
    else:
        key = f"{PROJECT_NAME}:{short}"
        extra = known_config_keys()[short].json_schema_extra
        example = str(extra.get("example", "<value>")) if isinstance(extra, dict) else "<value>"
    return ConfigProblem(key, problem.problem, problem.valid, _fix_set(key, example, stack))


def _rule_problems(
    stack: str, sections: Mapping[str, _Section], raw_region: str
) -> tuple[list[ConfigProblem], list[str]]:
    """The platform's rules (``platform.rules``, the ones ``TrainingPlatformArgs`` is
    checked with) on every section that was read, each problem at its config key; then
    the hardware catalog on the region and the Workbench."""
    general = sections.get("general")
    storage = sections.get("storage")
    registry = sections.get("registry")
    image = sections.get("image")
    workbench = sections.get("workbench")
    region = general.region if isinstance(general, GeneralSettings) else raw_region
    found: list[Problem] = []
    if isinstance(general, GeneralSettings):
        found += kms_key_problems(general.kms_key_name, region)
    if isinstance(storage, StorageSettings):
        found += bucket_name_problems(storage.bucket_name)
        found += settings_problems(
            {
                "staging_retention_days": storage.staging_retention_days,
                "soft_delete_retention_days": storage.soft_delete_retention_days,
            }
        )
    if isinstance(registry, RegistrySettings):
        found += repository_problems(registry.repository_name)
        found += settings_problems({"image_keep_count": registry.keep_count})
    if isinstance(image, ImageSettings):
        found += image_name_problems(image.image_name)
        if image.pinned_reference is not None:
            found += image_reference_problems(
                image.pinned_reference, "trainer_image", by_digest=True
            )
    if isinstance(workbench, WorkbenchSettings):
        found += workbench_problems(
            region=region,
            zone=workbench.zone,
            machine_type=workbench.machine_type,
            gpu_type=workbench.gpu_type,
            gpu_count=workbench.gpu_count,
            container_image=workbench.container_image,
            disk_size_gb=workbench.disk_size_gb,
            idle_timeout_minutes=workbench.idle_timeout_minutes,
        )
    problems = [_phrased(p, stack) for p in found]
    warnings: list[str] = []
    if not isinstance(general, GeneralSettings):
        return problems, warnings
    # A region the catalog does not list (a near miss is refused by the field): a warning,
    # an error in strict stacks; the catalog's rule, the one TrainingPlatformArgs uses.
    strict = general.strict_hardware_checks
    findings = [
        ("region", f)
        for f in check_region(path="region", region=region, accelerators=(), strict=strict)
    ]
    if (
        isinstance(workbench, WorkbenchSettings)
        and workbench.enabled
        and not any(p.field.startswith("workbench.") for p in found)
    ):
        findings += workbench_findings(
            region=region,
            zone=workbench.zone,
            machine_type=workbench.machine_type,
            gpu_type=workbench.gpu_type,
            gpu_count=workbench.gpu_count,
            cloud=general.environment.is_cloud,
            strict=strict,
        )
    checked = acknowledge((f for _, f in findings), general.acknowledged_hardware_checks)
    for (field, _), finding in zip(findings, checked, strict=True):
        key = f"{PROJECT_NAME}:{_RULE_KEYS.get(field, field)}"
        if finding.severity == "warning":
            warnings.append(f"{key}: {finding.message}")
        else:
            problems.append(
                ConfigProblem(
                    key, finding.message, "see the problem", _fix_set(key, "<value>", stack)
                )
            )
    return problems, warnings


# --------------------------------------------------------------------------- loaders


def stack_name_of(stack_file: Path) -> str:
    match = _STACK_FILE.match(stack_file.name)
    if match is None:
        raise ValueError(
            f"{stack_file}: not a stack file name; valid: Pulumi.<stack>.yaml, e.g. "
            "stacks/Pulumi.local.yaml"
        )
    return match["stack"]


def load_stack_config(stack_file: Path) -> StackConfig:
    """Validate a stack file directly, without the Pulumi engine (same rules as a program)."""
    stack = stack_name_of(stack_file)
    document = yaml.safe_load(stack_file.read_text(encoding="utf-8")) or {}
    if not isinstance(document, dict):
        raise ValueError(f"{stack_file}: expected a mapping with a 'config' key")
    raw = document.get("config") or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{stack_file}: 'config' must be a mapping of key: value")
    return parse_stack_config(stack, {str(k): v for k, v in raw.items()})


def load_pulumi_config() -> StackConfig:
    """Validate the config the engine handed to this program (or the one tests set)."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    # pulumi.Config only answers for keys we ask about; finding typos needs the whole map.
    # The engine passes it as PULUMI_CONFIG; set_all_config (tests, automation) overrides.
    raw: dict[str, object] = dict(runtime_config.get_config_env())
    raw.update(runtime_config.CONFIG.get())
    project = pulumi.get_project()
    if project != PROJECT_NAME:
        raise pulumi.RunError(
            f"this program belongs to Pulumi project '{PROJECT_NAME}', not '{project}'; "
            "run it from the directory holding its Pulumi.yaml"
        )
    try:
        config = parse_stack_config(pulumi.get_stack(), raw)
    except ConfigError as error:
        # RunError: the CLI shows the message alone, without a Python traceback.
        raise pulumi.RunError(str(error)) from None
    for warning in config.warnings:
        pulumi.log.warn(warning)
    return config
