"""The one reader of stack configuration: it reads and phrases, the rules live elsewhere.

Turns a stack's settings into a frozen ``StackConfig`` (``stack.settings``: one model per
section, a field's alias is its config key) before any resource is registered. The same
reading runs whether the values come from the Pulumi engine (``load_pulumi_config``, inside a
program) or straight from a stack file (``load_stack_config``, for tools that run without
the engine: ``make estimate``, the policy pack's config, ``make tensorboard``).

The values are judged by the rules every route shares: ``platform.rules.judge_platform`` (the
one ``TrainingPlatformArgs`` is judged by) and ``jobs.declarations.job_problems`` (the job
rules). Every problem is a ``Finding`` (the one problem type), placed here at the config key
that holds the value (its ``caller``, ``vertex-training:jobs[0].chief.machineType``): the
same words as the Python Args' error, at the YAML's key path. ``ConfigError`` renders them
all, each with the command that fixes it, so that one run shows the whole list.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from vertex_training._checks import shown
from vertex_training._pulumi_internals import engine_config, secret_config_keys
from vertex_training._spelling import closest, did_you_mean
from vertex_training.capacity.api import PersistentResourceArgs
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import LATER, PlatformFacts
from vertex_training.jobs.declarations import JobDeclaration, job_problems, read_job
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.platform.names import derived_bucket_name, platform_labels
from vertex_training.platform.rules import (
    GCP_PROJECT_ID,
    EnvironmentKind,
    InvalidValueError,
    PlatformValues,
    WorkbenchValues,
    image_name_problems,
    image_reference_problems,
    judge_platform,
)
from vertex_training.stack.capacity import (
    CAPACITY_KEY,
    CapacityDeclarations,
    placed_on,
    read_capacity,
)
from vertex_training.stack.secure import ConfigPath, is_secure, secure_paths
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
    "EnvironmentKind",
    "StackConfig",
    "fix",
    "known_config_keys",
    "load_pulumi_config",
    "load_stack_config",
    "parse_stack_config",
]

GCP_PROJECT_KEY = "gcp:project"

_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^.]+)\.ya?ml$")


STRUCTURED_KEYS = ("jobs", *SERVING_KEYS, CAPACITY_KEY)
"""Keys whose value is a list of entries: edited in the file, not set by ``pulumi config``."""


class ConfigError(ValueError):
    """The stack config is invalid; raised before any resource is registered. ``findings``
    are its problems, each at its config key (``caller``), in the order found."""

    def __init__(self, stack: str, findings: list[Finding], region: str = "") -> None:
        self.stack = stack
        self.findings = tuple(findings)
        lines = "\n".join(f"  - {_rendered(f)}\n    Fix: {fix(f, stack, region)}" for f in findings)
        super().__init__(f"invalid config for stack '{stack}':\n{lines}")


def fix(finding: Finding, stack: str, region: str = "") -> str:
    """The command (or the edit) that fixes ``finding``, from its config key (``region``:
    the stack's, whose closest catalog region a region's fix suggests)."""
    key = finding.caller
    prefix = f"{PROJECT_NAME}:"
    ours = key.startswith(prefix)
    short = _short(key) if ours else key.partition(":")[2]
    name = re.split(r"[.\[]", short, maxsplit=1)[0]
    known = known_config_keys()
    if ours and name in STRUCTURED_KEYS:
        text = (
            f"edit {short} in stacks/Pulumi.{stack}.yaml (pulumi config set would replace the "
            "whole list)"
        )
    elif key == GCP_PROJECT_KEY:
        text = _fix_set(key, "<your-project-id>", stack)
    elif ours and name == "region":
        text = _fix_set(
            key, closest(region, sorted(catalog().regions), cutoff=0.8) or "<region>", stack
        )
    elif ours and name in known:
        text = _fix_set(key, str(_meta(known[name]).get("example", "<value>")), stack)
    else:  # an unknown key, or a namespace that misspells ours
        keys = [*known, *STRUCTURED_KEYS]
        meant = name if name in keys else closest(name, keys)
        text = f"pulumi config rm {key} --stack {stack}"
        if meant is not None:
            text += f" && pulumi config set {prefix}{meant} <value> --stack {stack}"
    if ":" in finding.check and finding.severity == "error":
        text += (
            f"; where the hardware catalog is out of date, add {finding.check} to "
            f"{prefix}acknowledgedHardwareChecks (it then only warns)"
        )
    return text


def _short(key: str) -> str:
    """A config key without the project's namespace (``jobs[0].chief``; the legacy
    ``project:config:key`` spelling too)."""
    return key.removeprefix(f"{PROJECT_NAME}:").removeprefix("config:")


def _at(finding: Finding, key: str) -> Finding:
    """``finding`` at the config ``key`` (its short form: the namespace is added)."""
    name = re.split(r"[.\[]", key, maxsplit=1)[0]
    return finding.at(key if ":" in name else f"{PROJECT_NAME}:{key}")


def _rendered(finding: Finding) -> str:
    """``finding`` at its stack key: an entry's (a job's, a model's) names its Vertex
    field; a plain key's is about the key itself."""
    entry = bool(finding.path) and _short(finding.caller).startswith(STRUCTURED_KEYS)
    return render(finding, "stack", vertex=entry)


# --------------------------------------------------------------------------- reading


def parse_stack_config(
    stack: str, raw: Mapping[str, object], secrets: Collection[ConfigPath] = ()
) -> StackConfig:
    """Validate ``raw`` (full ``namespace:key`` -> value) into a ``StackConfig``; the values
    at ``secrets`` (``stack.secure``) are secret Outputs from here on.

    Collects every problem before failing, so one run shows the whole list.
    """
    problems = _our_keys(raw)
    ours = {_short(k): _decode(v) for k, v in raw.items() if _is_ours(k)}
    problems += _mark_secrets(ours, secrets)
    sections: dict[str, Any] = {}
    for section_name, model in SECTIONS.items():
        if model is not JobsSettings:
            sections[section_name] = _section(model, ours, problems)
    gcp_project = raw.get(GCP_PROJECT_KEY)
    # What the rules judge: the sections as read (jobs and serving are read next).
    project = None if gcp_project is None else str(gcp_project) or None
    draft = StackConfig.model_construct(stack=stack, gcp_project=project, **sections)
    general = draft.general
    found = _platform_findings(draft, ours)
    # A refused value's default stood in: what the rules say of that key is not news.
    refused = {p.caller for p in problems}
    problems += [f for f in found if f.caller not in refused]
    region_refused = any(f.caller == f"{PROJECT_NAME}:region" for f in problems)
    resources, unfit = read_capacity(ours.get(CAPACITY_KEY), _facts(stack, general))
    problems += [_at(p, p.caller) for p in unfit]
    jobs, job_findings = _jobs(stack, ours.get("jobs"), general, region_refused, resources)
    problems += job_findings
    serving, unreadable = read_serving(
        ours,
        [job.name for job in jobs],
        region=general.region if general.environment.is_cloud and not region_refused else None,
        environment=general.environment.value,
    )
    problems += [_at(p, p.caller) for p in unreadable]
    errors = [f for f in problems if f.severity == "error"]
    if errors:
        raise ConfigError(stack, errors, general.region)
    return draft.model_copy(
        update={
            "jobs": JobsSettings.model_construct(jobs=jobs),
            "serving": serving,
            "capacity": CapacityDeclarations(resources),
            "warnings": tuple(f for f in problems if f.severity == "warning"),
        }
    )


def _is_ours(full_key: str) -> bool:
    """A key of this project that it reads (the legacy ``project:config:key`` too)."""
    short = _short(full_key)
    return full_key.startswith(f"{PROJECT_NAME}:") and (
        short in known_config_keys() or short in STRUCTURED_KEYS
    )


def _our_keys(raw: Mapping[str, object]) -> list[Finding]:
    """An unknown key of ours, or a misspelt namespace, is a problem (a typo would be
    silently ignored); other namespaces belong to their providers."""
    known = known_config_keys()
    problems: list[Finding] = []
    for full_key in raw:
        if not full_key.startswith(f"{PROJECT_NAME}:"):
            problems += _misspelt_namespace(full_key)
        elif not _is_ours(full_key):
            hint = did_you_mean(_short(full_key), list(known))
            message = f"unknown config key{hint}; a typo here would be silently ignored"
            problems.append(
                Finding(full_key, message, valid="one of " + ", ".join(sorted(known))).at(full_key)
            )
    return problems


def _section(model: type[Section], ours: Mapping[str, object], problems: list[Finding]) -> Section:
    """``model`` from its keys in ``ours``; a value pydantic refuses is a problem, and the
    section is then read without it (its default stands in), so that the rules still judge
    the section's other values in this run."""
    aliases = {info.alias or name for name, info in model.model_fields.items()}
    given = {k: v for k, v in ours.items() if k in aliases}
    try:
        return model.model_validate(given)
    except ValidationError as error:
        problems.extend(_problems_from(error, model))
        refused = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
        return model.model_validate({k: v for k, v in given.items() if k not in refused})


def _mark_secrets(ours: dict[str, Any], secrets: Collection[ConfigPath]) -> list[Finding]:
    """Each value of ``ours`` at a path of ``secrets`` as a secret Output (in place): what
    is built from it stays secret to the state. A setting of the platform (a name, a
    region) cannot be a secret, nor a whole list of entries (which value is the secret?)."""
    problems: list[Finding] = []
    for key, *inner in secrets:
        short = _short(str(key))
        if not _is_ours(str(key)):
            continue  # another namespace's: its provider reads it
        if short not in STRUCTURED_KEYS or not inner:
            where = f"{PROJECT_NAME}:{short}"
            message = (
                "is set as a secret, but this value lands in plain text in the resources "
                "that use it"
                if short not in STRUCTURED_KEYS
                else "is a secret as a whole; only single values inside it can be"
            )
            valid = (
                f"set it without --secret; or set one value with pulumi config set --secret "
                f"--path '{where}[0].<field>' (a job's env, a model's description)"
            )
            problems.append(Finding("", message, valid=valid).at(where))
            continue
        holder: Any = ours
        keys: list[str | int] = [short, *inner]
        for step in keys[:-1]:
            holder = holder[step] if _holds(holder, step) else None
        if _holds(holder, keys[-1]):
            holder[keys[-1]] = pulumi.Output.secret(holder[keys[-1]])
    return problems


def _holds(holder: Any, step: str | int) -> bool:
    if isinstance(holder, list):
        return isinstance(step, int) and 0 <= step < len(holder)
    return isinstance(holder, dict) and step in holder


def _decode(value: object) -> object:
    # The CLI hands structured values to the program as JSON text.
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _misspelt_namespace(full_key: str) -> list[Finding]:
    """A problem when ``full_key``'s namespace is a misspelling of the project's name
    (``vertex-trainng:jobs``, ``vertex_training:region``); none for any other namespace."""
    namespace, colon, short = full_key.partition(":")
    # A close spelling only: "vertex:" or "gcp:" may well be someone else's namespace.
    if not colon or difflib.SequenceMatcher(None, namespace.lower(), PROJECT_NAME).ratio() < 0.85:
        return []
    meant = f"{PROJECT_NAME}:{short}"
    message = (
        f"unknown namespace '{namespace}' (did you mean '{meant}'?); a misspelt namespace "
        "would be silently ignored"
    )
    valid = (
        f"{PROJECT_NAME}:<key> for this project's keys (the name in Pulumi.yaml); other "
        "namespaces (gcp:, pulumi:, ...) are their providers'"
    )
    return [Finding(full_key, message, valid=valid).at(full_key)]


def _problems_from(error: ValidationError, model: type[Section]) -> list[Finding]:
    by_alias = {info.alias or name: info for name, info in model.model_fields.items()}
    problems: list[Finding] = []
    for item in error.errors():
        alias = str(item["loc"][0]) if item["loc"] else "?"
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, InvalidValueError):
            problem, valid = cause.problem, cause.valid
        else:
            problem = f"{item['msg']} (got {shown(item.get('input'), 40)})"
            valid = str(_meta(by_alias.get(alias)).get("valid", "see Pulumi.yaml"))
        # Structured values (lists): say where inside the value.
        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"][1:])
        problems.append(_at(Finding(alias + inner, problem, valid=valid), alias + inner))
    return problems


# --------------------------------------------------------------------------- the rules


TRAINER = "images['trainer']"
"""The platform's image the stack's ``trainerImage`` or ``imageName`` is."""


def _config_key(field: str) -> str:
    """The config key that holds a platform rule's field (``TrainingPlatformArgs``'
    spelling): the section field of that name, the Workbench's in its section (its
    ``accelerator.type``/``count`` as ``gpu_type``/``gpu_count``)."""
    if field == "project":
        return GCP_PROJECT_KEY
    if field.startswith(TRAINER):  # an image reference, or the name of an image built
        field = field.replace(f"{TRAINER}.", "").replace(TRAINER, "trainer_image")
    section, _, name = field.replace("accelerator.", "gpu_").rpartition(".")
    models = [SECTIONS[section]] if section else SECTIONS.values()
    info = next(m.model_fields[name] for m in models if name in m.model_fields)
    return f"{PROJECT_NAME}:{info.alias}"


def _meta(info: FieldInfo | None) -> dict[str, Any]:
    """A config key's ``valid`` and ``example`` (``settings._key``)."""
    extra = info.json_schema_extra if info is not None else None
    return extra if isinstance(extra, dict) else {}


def _platform_findings(config: StackConfig, ours: Mapping[str, object]) -> list[Finding]:
    """The platform's rules on the stack's values (``judge_platform``, the ones
    ``TrainingPlatformArgs`` is judged by, then the trainer image's), each finding at the
    config key that holds its field; on a local stack, each Workbench key set is said to be
    ignored (a local stack has no instance)."""
    stack, gcp_project, general = config.stack, config.gcp_project, config.general
    storage, registry, workbench = config.storage, config.registry, config.workbench
    cloud = general.environment.is_cloud
    values = WorkbenchValues(**workbench.model_dump())
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
            # The section's fields are the Workbench values' (settings._key); a local stack
            # has no instance (said below, per key).
            workbench=replace(values, enabled=values.enabled and cloud),
            strict=general.strict_hardware_checks,
            acknowledged=general.acknowledged_hardware_checks,
        )
    )
    # The trainer image is the platform's images['trainer'] (stack.definition).
    if config.image.trainer_image is not None:
        found += image_reference_problems(config.image.trainer_image, TRAINER, by_digest=True)
    else:
        found += image_name_problems(config.image.image_name, f"{TRAINER}.image_name")
    out = [_at(f, _config_key(f.path)) for f in found]
    if not cloud:
        # A key set to what it would be anyway changes nothing (workbenchEnabled: false
        # says what is so); any other is ignored here.
        ignored = [
            alias
            for name, info in type(workbench).model_fields.items()
            if (alias := info.alias or name) in ours
            and name != "enabled"
            and getattr(workbench, name) != info.default
        ]
        message = "a local stack has no Workbench instance: this key is ignored"
        out += [
            _at(Finding(k, message, "warning", valid="set it on a dev or prod stack"), k)
            for k in ignored
        ]
    return out


def _fix_set(key: str, example: str, stack: str) -> str:
    return f"pulumi config set {key} {_shell_quote(example)} --stack {stack}"


def _shell_quote(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_./:@<>-]+", value) else f"'{value}'"


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
    stack: str,
    raw: object,
    general: GeneralSettings,
    region_refused: bool,
    resources: Mapping[str, PersistentResourceArgs],
) -> tuple[tuple[JobDeclaration, ...], list[Finding]]:
    """Each job read on its own, so one job's mistake hides no other's; then every job's
    body judged by the job rules (GPUs in the stack's region on cloud stacks, unless the
    region itself was refused: that is said once, at its key), on the stack's persistent
    ``resources`` it names (their fit judged in the same pass)."""
    if raw is None or raw == "":
        return (), []
    if not isinstance(raw, list | tuple):
        return (), [
            _at(Finding("jobs", "must be a list of job mappings", valid="a YAML list"), "jobs")
        ]
    jobs: list[JobDeclaration] = []
    problems: list[Finding] = []
    indexes: list[int] = []
    for index, item in enumerate(raw):
        job, unreadable = read_job(item, f"jobs[{index}]")
        problems += [_at(p, p.caller) for p in unreadable]
        if job is not None:
            jobs.append(placed_on(job, resources))
            indexes.append(index)
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
            message = f"jobs[{position}]: {finding.message}"
            problems.append(_at(replace(finding, message=message), "region"))
        else:
            problems.append(_at(finding, f"jobs[{position}]{rest}"))
    return placed, problems


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
    # Without the engine a secret cannot be decrypted: what reads the file here (an
    # estimate, the policy's config) reads no secret value.
    plain = {str(k): _stand_in(v) for k, v in raw.items()}
    return parse_stack_config(name["stack"], plain)


SECRET_STAND_IN = "[secret]"
"""A stack file's encrypted value where the engine does not decrypt it."""


def _stand_in(value: Any) -> Any:
    if is_secure(value):
        return SECRET_STAND_IN
    if isinstance(value, Mapping):
        return {k: _stand_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stand_in(v) for v in value]
    return value


def _secret_paths(stack: str, raw: Mapping[str, object]) -> list[ConfigPath]:
    """The paths of the secret values the engine handed over: where the stack file says
    inside each secret key (``secure:`` at any depth), else the key's whole value."""
    from vertex_training._project import project_root
    from vertex_training.stack.engine import StackCommandError, stack_file

    keys = secret_config_keys(raw)
    if not keys:
        return []
    try:
        document = yaml.safe_load(stack_file(stack, project_root()).read_text(encoding="utf-8"))
    except StackCommandError:
        document = None
    marked = [p for p in secure_paths((document or {}).get("config") or {}) if p[0] in keys]
    return marked + [(k,) for k in sorted(keys) if all(p[0] != k for p in marked)]


def load_pulumi_config() -> StackConfig:
    """Validate the config the engine handed to this program (or the one tests set); its
    secret values stay secret Outputs."""
    raw = engine_config()
    project = pulumi.get_project()
    if project != PROJECT_NAME:
        raise pulumi.RunError(
            f"this program belongs to Pulumi project '{PROJECT_NAME}', not '{project}'; "
            "run it from the directory holding its Pulumi.yaml"
        )
    stack = pulumi.get_stack()
    try:
        config = parse_stack_config(stack, raw, _secret_paths(stack, raw))
    except ConfigError as error:
        # RunError: the CLI shows the message alone, without a Python traceback.
        raise pulumi.RunError(str(error)) from None
    for warning in config.warnings:
        pulumi.log.warn(_rendered(warning))
    return config
