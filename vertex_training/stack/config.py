"""The one reader of stack configuration: it reads and phrases, the rules live elsewhere.

Turns a stack's settings into a frozen ``StackConfig`` (``stack.settings``: one model per
section, a field's alias is its config key) before any resource is registered. The same
reading runs whether the values come from the Pulumi engine (``load_pulumi_config``, inside a
program) or straight from a stack file (``load_stack_config``, for tools that run without
the engine: ``make estimate``, the policy pack's config, ``make tensorboard``).

The values are judged by the rules every route shares: ``platform.rules.judge_platform`` (the
one ``TrainingPlatformArgs`` is judged by) and ``jobs.declarations.job_problems`` (the job
rules). This module only says each problem at the config key that holds the value, with the
command that fixes it, and collects them all so that one run shows the whole list.
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
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from vertex_training._spelling import closest
from vertex_training.jobs.api import LATER, PlatformFacts
from vertex_training.jobs.declarations import JobDeclaration, job_problems, read_job
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.platform.names import derived_bucket_name
from vertex_training.platform.platform import platform_labels
from vertex_training.platform.rules import (
    GCP_PROJECT_ID,
    EnvironmentKind,
    InvalidValueError,
    PlatformValues,
    Problem,
    WorkbenchValues,
    image_name_problems,
    image_reference_problems,
    judge_platform,
)
from vertex_training.stack.capacity import CAPACITY_KEY, read_capacity
from vertex_training.stack.serving import SERVING_KEYS, read_serving
from vertex_training.stack.settings import (
    PROJECT_NAME,
    SECTIONS,
    GeneralSettings,
    JobsSettings,
    Section,
    StackConfig,
    known_config_keys,
)

__all__ = [
    "PROJECT_NAME",
    "ConfigError",
    "ConfigProblem",
    "EnvironmentKind",
    "StackConfig",
    "known_config_keys",
    "load_pulumi_config",
    "load_stack_config",
    "parse_stack_config",
]

GCP_PROJECT_KEY = "gcp:project"

_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^.]+)\.ya?ml$")


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


# --------------------------------------------------------------------------- reading


def parse_stack_config(stack: str, raw: Mapping[str, object]) -> StackConfig:
    """Validate ``raw`` (full ``namespace:key`` -> value) into a ``StackConfig``.

    Collects every problem before failing, so one run shows the whole list.
    """
    problems: list[ConfigProblem] = []
    ours = _our_keys(stack, raw, problems)
    sections: dict[str, Any] = {}
    for section_name, model in SECTIONS.items():
        if model is not JobsSettings:
            sections[section_name] = _section(model, ours, stack, problems)
    gcp_project = raw.get(GCP_PROJECT_KEY)
    # What the rules judge: the sections as read (jobs and serving are read next).
    project = None if gcp_project is None else str(gcp_project) or None
    draft = StackConfig.model_construct(stack=stack, gcp_project=project, **sections)
    general = draft.general
    found, warnings = _platform_problems(draft)
    # A refused value's default stood in: what the rules say of that key is not news.
    refused = {p.key for p in problems}
    problems += [p for p in found if p.key not in refused]
    region_refused = any(p.key == f"{PROJECT_NAME}:region" for p in found)
    jobs, job_problems_found, job_warnings = _jobs(stack, ours.get("jobs"), general, region_refused)
    jobs_section = JobsSettings.model_construct(jobs=jobs)
    problems += job_problems_found
    serving, unreadable = read_serving(
        ours,
        [job.name for job in jobs],
        region=general.region if general.environment.is_cloud and not region_refused else None,
        environment=general.environment.value,
    )
    problems += [
        ConfigProblem(
            f"{PROJECT_NAME}:{p.path}",
            p.problem,
            p.valid,
            f"edit {p.path} in stacks/Pulumi.{stack}.yaml",
        )
        for p in unreadable
    ]
    capacity, unfit, capacity_warnings = read_capacity(
        ours.get(CAPACITY_KEY), _facts(stack, general), jobs, _job_paths(ours.get("jobs"), jobs)
    )
    problems += [
        ConfigProblem(
            f"{PROJECT_NAME}:{p.path}",
            p.problem,
            p.valid,
            f"edit {p.path} in stacks/Pulumi.{stack}.yaml",
        )
        for p in unfit
    ]
    if problems:
        raise ConfigError(stack, problems)
    return draft.model_copy(
        update={
            "jobs": jobs_section,
            "serving": serving,
            "capacity": capacity,
            "warnings": tuple(warnings + job_warnings + capacity_warnings),
        }
    )


def _job_paths(raw: object, jobs: tuple[JobDeclaration, ...]) -> list[str]:
    """Each read job's YAML path (``jobs[2]``), found by its name."""
    items = raw if isinstance(raw, list | tuple) else []
    where = {
        item.get("name"): f"jobs[{index}]"
        for index, item in enumerate(items)
        if isinstance(item, Mapping)
    }
    return [where.get(job.name, "jobs") for job in jobs]


def _our_keys(
    stack: str, raw: Mapping[str, object], problems: list[ConfigProblem]
) -> dict[str, object]:
    """The project's keys (without namespace) and their values, decoded; an unknown key of
    ours, or a misspelt namespace, is a problem (a typo would be silently ignored)."""
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
        if short in known or short in SERVING_KEYS or short == CAPACITY_KEY:
            ours[short] = _decode(value)
            continue
        close = difflib.get_close_matches(short, list(known), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        fix = f"pulumi config rm {full_key} --stack {stack}"
        if close:
            fix += f" && pulumi config set {prefix}{close[0]} <value> --stack {stack}"
        problems.append(
            ConfigProblem(
                key=full_key,
                problem=f"unknown config key{hint}; a typo here would be silently ignored",
                valid="one of " + ", ".join(sorted(known)),
                fix=fix,
            )
        )
    return ours


def _section(
    model: type[Section], ours: Mapping[str, object], stack: str, problems: list[ConfigProblem]
) -> Section:
    """``model`` from its keys in ``ours``; a value pydantic refuses is a problem, and the
    section is then read without it (its default stands in), so that the rules still judge
    the section's other values in this run."""
    aliases = {info.alias or name for name, info in model.model_fields.items()}
    given = {k: v for k, v in ours.items() if k in aliases}
    try:
        return model.model_validate(given)
    except ValidationError as error:
        problems.extend(_problems_from(error, model, stack))
        refused = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
        return model.model_validate({k: v for k, v in given.items() if k not in refused})


def _decode(value: object) -> object:
    # The CLI hands structured values to the program as JSON text.
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _misspelt_namespace(full_key: str, stack: str) -> ConfigProblem | None:
    """A problem when ``full_key``'s namespace is a misspelling of the project's name
    (``vertex-trainng:jobs``, ``vertex_training:region``); None for any other namespace."""
    namespace, colon, short = full_key.partition(":")
    if not colon:
        return None
    # A close spelling only: "vertex:" or "gcp:" may well be someone else's namespace.
    if difflib.SequenceMatcher(None, namespace.lower(), PROJECT_NAME).ratio() < 0.85:
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


def _problems_from(error: ValidationError, model: type[Section], stack: str) -> list[ConfigProblem]:
    by_alias = {info.alias or name: info for name, info in model.model_fields.items()}
    problems: list[ConfigProblem] = []
    for item in error.errors():
        alias = str(item["loc"][0]) if item["loc"] else "?"
        meta = _meta(by_alias.get(alias))
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


# --------------------------------------------------------------------------- the rules


def _config_key(field: str) -> str:
    """The config key that holds a platform rule's field (``TrainingPlatformArgs``'
    spelling): the section field of that name, the Workbench's in its section (its
    ``accelerator.type``/``count`` as ``gpu_type``/``gpu_count``)."""
    if field == "project":
        return GCP_PROJECT_KEY
    section, _, name = field.replace("accelerator.", "gpu_").rpartition(".")
    models = [SECTIONS[section]] if section else SECTIONS.values()
    info = next(m.model_fields[name] for m in models if name in m.model_fields)
    return f"{PROJECT_NAME}:{info.alias}"


def _meta(info: FieldInfo | None) -> dict[str, Any]:
    """A config key's ``valid`` and ``example`` (``settings._key``)."""
    extra = info.json_schema_extra if info is not None else None
    return extra if isinstance(extra, dict) else {}


def _platform_problems(config: StackConfig) -> tuple[list[ConfigProblem], list[str]]:
    """The platform's rules on the stack's values (``judge_platform``, the ones
    ``TrainingPlatformArgs`` is judged by, then the trainer image's), each problem at the
    config key that holds its field."""
    stack, gcp_project, general = config.stack, config.gcp_project, config.general
    storage, registry, workbench = config.storage, config.registry, config.workbench
    found = judge_platform(
        PlatformValues(
            environment=general.environment,
            project=gcp_project,
            region=general.region,
            bucket_name=storage.bucket_name,
            derived_bucket_name=(
                derived_bucket_name(gcp_project, stack)
                if gcp_project and GCP_PROJECT_ID.match(gcp_project)
                else None
            ),
            repository_name=registry.repository_name,
            kms_key_name=general.kms_key_name,
            image_keep_count=registry.image_keep_count,
            staging_retention_days=storage.staging_retention_days,
            soft_delete_retention_days=storage.soft_delete_retention_days,
            # The section's fields are the Workbench values' (settings._key).
            workbench=WorkbenchValues(**workbench.model_dump()),
            strict=general.strict_hardware_checks,
            acknowledged=general.acknowledged_hardware_checks,
        )
    )
    found += image_name_problems(config.image.image_name)
    if config.image.trainer_image is not None:
        found += image_reference_problems(
            config.image.trainer_image, "trainer_image", by_digest=True
        )
    problems = [_phrased(p, stack, general.region) for p in found if not p.warning]
    warnings = [f"{_config_key(p.field)}: {p.problem}" for p in found if p.warning]
    return problems, warnings


def _phrased(problem: Problem, stack: str, region: str) -> ConfigProblem:
    """A platform rule's problem, at the config key that holds its field."""
    key = _config_key(problem.field)
    if problem.field == "project":
        example = "<your-project-id>"
    elif problem.field == "region":
        example = closest(region, sorted(catalog().regions), cutoff=0.8) or "<region>"
    else:
        info = known_config_keys()[key.removeprefix(f"{PROJECT_NAME}:")]
        example = str(_meta(info).get("example", "<value>"))
    return ConfigProblem(key, problem.problem, problem.valid, _fix_set(key, example, stack))


def _fix_set(key: str, example: str, stack: str) -> str:
    return f"pulumi config set {key} {_shell_quote(example)} --stack {stack}"


def _shell_quote(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_./:@<>-]+", value) else f"'{value}'"


def _jobs_key(stack: str, path: str) -> tuple[str, str]:
    key = f"{PROJECT_NAME}:{path}"
    return key, (
        f"edit {path} under {PROJECT_NAME}:jobs in stacks/Pulumi.{stack}.yaml "
        "(pulumi config set would replace the whole job list)"
    )


def _facts(stack: str, general: GeneralSettings) -> PlatformFacts:
    """What the stack's platform (``stack_definition``) will be, as the rules see it."""
    cloud = general.environment.is_cloud
    return PlatformFacts(
        environment=general.environment.value,
        region=general.region,
        strict_hardware_checks=general.strict_hardware_checks,
        acknowledged_hardware_checks=tuple(general.acknowledged_hardware_checks),
        labels=platform_labels(general.environment.value, stack, {}),
        kms_key_name=general.kms_key_name,
        network=None,
        tensorboard=LATER if cloud and general.tensorboard_enabled else None,
        training_service_account=LATER if cloud else None,
        image=LATER,
    )


def _jobs(
    stack: str, raw: object, general: GeneralSettings, region_refused: bool
) -> tuple[tuple[JobDeclaration, ...], list[ConfigProblem], list[str]]:
    """Each job read on its own, so one job's mistake hides no other's; then every job's
    body judged by the job rules (GPUs in the stack's region on cloud stacks, unless the
    region itself was refused: that is said once, at its key)."""
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
    warnings: list[str] = []
    placed, found = job_problems(tuple(jobs), _facts(stack, general))
    for path, finding in found:
        if finding.path == "region" and (
            region_refused or finding.check.startswith("unknown-region:")
        ):
            continue  # the stack's region itself: said once, at the region key
        # job_problems numbers the valid jobs; name them by their place in the list.
        head, _, rest = path.partition("]")
        position = indexes[int(head.removeprefix("jobs["))]
        if finding.path == "region":
            # The job runs in the stack's region: that is the key to change.
            key, text = f"{PROJECT_NAME}:region", f"jobs[{position}]: {finding.message}"
            fix = _fix_set(key, "<region>", stack)
        else:
            key, fix = _jobs_key(stack, f"jobs[{position}]{rest}")
            text = f"{finding.message} (Vertex field {finding.path})"
        if finding.severity == "warning":
            warnings.append(f"{key}: {text}")
        else:
            problems.append(ConfigProblem(key, text, "see the problem", fix))
    return placed, problems, warnings


# --------------------------------------------------------------------------- loaders


def load_stack_config(stack_file: Path) -> StackConfig:
    """Validate a stack file directly, without the Pulumi engine (same rules as a program)."""
    name = _STACK_FILE.match(stack_file.name)
    if name is None:
        raise ValueError(
            f"{stack_file}: not a stack file name; valid: Pulumi.<stack>.yaml, e.g. "
            "stacks/Pulumi.local.yaml"
        )
    document = yaml.safe_load(stack_file.read_text(encoding="utf-8")) or {}
    if not isinstance(document, dict):
        raise ValueError(f"{stack_file}: expected a mapping with a 'config' key")
    raw = document.get("config") or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{stack_file}: 'config' must be a mapping of key: value")
    return parse_stack_config(name["stack"], {str(k): v for k, v in raw.items()})


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
