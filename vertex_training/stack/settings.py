"""The settings a stack holds: one frozen pydantic model per section, a field's alias is
its config key (``vertex-training:workbenchMachineType``), with the default, what is valid
and an example for error messages. What a key means is written once, in ``Pulumi.yaml``
(``docs/config.md`` is generated from both).

Config keys are flat and camelCase because the project schema in ``Pulumi.yaml`` only types
scalars and arrays. Adding a key means adding a field here (or a section to
``StackConfig``) and its entry in ``Pulumi.yaml``; ``tests/test_config.py`` checks that the
two agree on its type and default. The rules on the values live with what
they describe (``platform.rules``, ``jobs.rules``); the only checks here are on keys no
resource has (``budget``, ``localRoot``). ``stack.config`` reads and phrases.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, field_validator
from pydantic.fields import FieldInfo

from vertex_training._project import project_root
from vertex_training.findings import Finding
from vertex_training.jobs.declarations import JobDeclaration, name_problems
from vertex_training.jobs.yaml_reader import config_problem, yaml_value
from vertex_training.platform.names import derived_bucket_name
from vertex_training.platform.rules import (
    BUCKET_NAME_VALID,
    IMAGE_NAME_VALID,
    REPOSITORY_ID_VALID,
    SETTINGS,
    WORKBENCH_GPU_COUNT_VALID,
    EnvironmentKind,
    InvalidValueError,
)

__all__ = [
    "PROJECT_NAME",
    "SECTIONS",
    "GeneralSettings",
    "ImageSettings",
    "JobsSettings",
    "RegistrySettings",
    "Section",
    "StackConfig",
    "StorageSettings",
    "WorkbenchSettings",
    "entries",
    "known_config_keys",
]

PROJECT_NAME = "vertex-training"
"""The Pulumi project name, and so the namespace of every project config key."""


MAX_BUDGET = 2**53
"""The largest whole number of dollars a float holds exactly."""
BUDGET_VALID = f"0 (no budget) or a whole number of US dollars from 1 to {MAX_BUDGET}"


def _key(alias: str, default: Any, valid: str, example: str = "") -> Any:
    """A config field: its alias is the config key; ``valid`` and ``example`` (by default
    the default) feed errors. A value the platform rules judge is held by the field of
    ``TrainingPlatformArgs``' name (the Workbench's in its section), so that their problems
    land on its key (``stack.config``)."""
    extra: dict[str, JsonValue] = {"valid": valid, "example": example or str(default)}
    return Field(default, alias=alias, json_schema_extra=extra)


def _optional(alias: str, valid: str, example: str) -> Any:
    """A config field that is not set unless the stack sets it (``OptionalText``)."""
    return _key(alias, None, valid, example)


class Section(BaseModel):
    # extra="forbid" is belt and braces: unknown keys are caught (with a suggestion)
    # before sections are built, but a section must never swallow a stray field.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=False)


def _whole_number(value: object) -> object:
    # Lax integers would take true as 1 (and "true" from the CLI fails anyway).
    if isinstance(value, bool):
        raise InvalidValueError(f"{str(value).lower()} is not a number", "a whole number")
    return value


Count = Annotated[int, BeforeValidator(_whole_number)]
"""A whole number: ``true`` is not 1."""

OptionalText = Annotated[str | None, BeforeValidator(lambda v: None if v == "" else v)]
"""An optional string: Pulumi.yaml cannot declare a null default, so "" means "not set"."""


class GeneralSettings(Section):
    environment: EnvironmentKind = _key(
        "environment", EnvironmentKind.LOCAL, "one of local, dev, prod", "dev"
    )
    region: str = _key(
        "region",
        "us-central1",
        "a region where Vertex AI training runs, e.g. us-central1, europe-west4",
    )
    strict_hardware_checks: bool = _key("strictHardwareChecks", False, "true or false", "true")
    acknowledged_hardware_checks: tuple[str, ...] = _key(
        "acknowledgedHardwareChecks",
        (),
        "a list of check ids",
        '["accelerator-region:NVIDIA_B200@europe-west4"]',
    )
    budget: int = _key("budget", 0, BUDGET_VALID, "50")
    tensorboard_enabled: bool = _key("tensorboardEnabled", False, "true or false", "true")
    kms_key_name: OptionalText = _optional(
        "kmsKeyName",
        "projects/P/locations/<region>/keyRings/K/cryptoKeys/C, in the stack's region",
        "projects/my-project/locations/us-central1/keyRings/ml/cryptoKeys/training",
    )
    local_root: str = _key("localRoot", ".local-vertex", "a relative or absolute directory path")

    @field_validator("budget", mode="before")
    @classmethod
    def _budget_in_dollars(cls, value: object) -> object:
        # Lax integers would take true as $1; below 0 is no budget either.
        text = str(value).strip()
        if isinstance(value, bool) or text in ("true", "false") or text.startswith("-"):
            raise InvalidValueError(f"{value!r} is not a budget", BUDGET_VALID)
        return value

    @field_validator("budget")
    @classmethod
    def _budget_a_float_holds(cls, value: int) -> int:
        # The estimate and the policy pack compare it as a float, exactly.
        if value > MAX_BUDGET:
            raise InvalidValueError(f"a budget of {len(str(value))} digits", BUDGET_VALID)
        return value

    @field_validator("local_root")
    @classmethod
    def _local_root_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise InvalidValueError("the directory is empty", "a relative or absolute path")
        return value


class StorageSettings(Section):
    bucket_name: OptionalText = _optional("bucketName", BUCKET_NAME_VALID, "my-project-dev-vertex")
    staging_retention_days: Count = _key(
        "stagingRetentionDays", 7, SETTINGS["staging_retention_days"].valid
    )
    soft_delete_retention_days: Count = _key(
        "softDeleteRetentionDays", 7, SETTINGS["soft_delete_retention_days"].valid
    )


class RegistrySettings(Section):
    repository_name: str = _key("repositoryName", "trainers", REPOSITORY_ID_VALID)
    image_keep_count: Count = _key("imageKeepCount", 10, SETTINGS["image_keep_count"].valid)


class ImageSettings(Section):
    image_name: str = _key("imageName", "trainer", IMAGE_NAME_VALID)
    trainer_image: OptionalText = _optional(
        "trainerImage",
        '"" or an image reference by digest, REGISTRY/PATH@sha256:<64 hex digits>',
        "us-central1-docker.pkg.dev/my-project/trainers/trainer@sha256:<digest>",
    )


class WorkbenchSettings(Section):
    enabled: bool = _key("workbenchEnabled", True, "true or false", "false")
    zone: OptionalText = _optional(
        "workbenchZone",
        '"" or a zone of the stack\'s region, e.g. us-central1-a',
        "us-central1-a",
    )
    machine_type: str = _key(
        "workbenchMachineType",
        "n1-standard-4",
        "a machine type such as n1-standard-4, e2-standard-8, g2-standard-8",
    )
    gpu_type: OptionalText = _optional(
        "workbenchGpuType",
        '"" or a GPU type a Workbench machine takes (the hardware catalog lists them)',
        "NVIDIA_TESLA_T4",
    )
    gpu_count: Count = _key("workbenchGpuCount", 0, WORKBENCH_GPU_COUNT_VALID, "1")
    disk_size_gb: Count = _key("workbenchDiskSizeGb", 150, SETTINGS["disk_size_gb"].valid)
    container_image: OptionalText = _optional(
        "workbenchContainerImage",
        '"" or an image reference, REGISTRY/PATH[:TAG]',
        "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/tf2-cpu.2-17.py310",
    )
    idle_timeout_minutes: Count = _key(
        "workbenchIdleTimeoutMinutes", 60, SETTINGS["idle_timeout_minutes"].valid
    )


class JobsSettings(Section):
    # The Args types are the jobs' schema (declarations.read_job), not pydantic.
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    jobs: tuple[JobDeclaration, ...] = _key(
        "jobs",
        (),
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
    serving: Any = None
    """``ServingDeclarations`` (stack/serving.py): the stack's models and endpoints."""
    capacity: Any = None
    """``CapacityDeclarations`` (stack/capacity.py): the stack's persistent resources."""
    warnings: tuple[Finding, ...] = ()
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
    def local_root(self) -> Path:
        """Absolute directory of the local stack's bucket, logs and job state."""
        root = Path(self.general.local_root)
        return root if root.is_absolute() else project_root() / root


SECTIONS: Mapping[str, type[Section]] = {
    name: info.annotation
    for name, info in StackConfig.model_fields.items()
    if isinstance(info.annotation, type) and issubclass(info.annotation, Section)
}
"""``StackConfig`` field -> section model; each section field's alias is a config key."""


def entries(
    raw: object, key: str, what: str, out: list[Finding]
) -> list[tuple[str, Mapping[str, Any], list[Finding]]]:
    """Each mapping of the stack's list ``key`` with its path (``models[0]``) and the
    problems of its name (a ``what`` name, unique in the list); what is not a list, or not
    a mapping, is said in ``out``."""
    if raw is None or raw == "":
        return []
    if not isinstance(raw, list | tuple):
        out.append(config_problem(key, f"got {yaml_value(raw)}", "a YAML list of mappings"))
        return []
    found: list[tuple[str, Mapping[str, Any], list[Finding]]] = []
    names: set[str] = set()
    for index, item in enumerate(raw):
        path = f"{key}[{index}]"
        if not isinstance(item, Mapping):
            out.append(config_problem(path, f"got {yaml_value(item)}", "a mapping"))
            continue
        name = item.get("name")
        problems = name_problems(name, path, what)
        if not problems and name in names:
            problems.append(config_problem(f"{path}.name", f"{name!r} repeats", "unique names"))
        names.add(str(name))
        found.append((path, item, problems))
    return found


def known_config_keys() -> dict[str, FieldInfo]:
    """Every project config key (without namespace) and the field that holds it."""
    keys: dict[str, FieldInfo] = {}
    for model in SECTIONS.values():
        for name, info in model.model_fields.items():
            keys[info.alias or name] = info
    return keys
