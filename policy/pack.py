"""The CrossGuard policies: each wraps one check of ``policy/rules.py`` with its
enforcement level and config schema.

Relax a policy per stack with a policy config file (``policy/config/<stack>.json``):
``{"required-labels": {"enforcementLevel": "disabled"}}`` or change its config, e.g.
``{"gpus-per-job": {"maxGpus": {"dev": 8}}}``. Every policy also takes ``environment``
to override the environment a resource is judged in. ``make preview|up POLICY=1`` passes
that file with the stack's ``budget`` added (``python -m vertex_training.stack
policy-config``): the pack itself reads no file of the project it judges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy import rules
from policy.engine_values import plain, unknown_at
from policy.rules import Resource
from vertex_training.cost.budget import REFUSING_ENVIRONMENTS
from vertex_training.jobs.placeholders import with_placeholders

POLICY_PACK_NAME = "vertex-training"

_ENVIRONMENT = {
    "environment": {
        "type": "string",
        "enum": ["local", "dev", "prod"],
        "description": "Judge resources as this environment (default: their environment label).",
    }
}
_ENVIRONMENTS = {
    "type": "array",
    "items": {"type": "string", "enum": ["local", "dev", "prod"]},
    "description": "Environments the policy applies in.",
}
_PER_ENVIRONMENT_INT = {
    "type": "object",
    "additionalProperties": {"type": "integer", "minimum": 0},
}
_PER_ENVIRONMENT_NAMES = {
    "type": "object",
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}


def _per_environment_names(defaults: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """A rules module default (tuples by environment) as the config's JSON lists."""
    return {environment: list(names) for environment, names in defaults.items()}


def _config(args: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    config = {k: v for k, v in dict(args.get_config() or {}).items() if k != "enforcementLevel"}
    merged = {**defaults, **config}
    for key, value in defaults.items():
        # Per-environment maps merge key by key, so {"dev": 8} keeps prod's default.
        if isinstance(value, Mapping) and isinstance(config.get(key), Mapping):
            merged[key] = {**value, **config[key]}
    return merged


def _resource(args: ResourceValidationArgs) -> Resource:
    return Resource(args.resource_type, args.props, args.urn, args.name)


def _resources(args: StackValidationArgs) -> list[Resource]:
    return [Resource(r.resource_type, r.props, r.urn, r.name) for r in args.resources]


def _report(report: ReportViolation, messages: Sequence[str], urn: str | None = None) -> None:
    for message in messages:
        if urn is None:
            report(message)
        else:
            report(message, urn)


def _resource_policy(
    name: str,
    *,
    description: str,
    level: EnforcementLevel,
    check: Callable[[Resource, Mapping[str, Any]], list[str]],
    defaults: Mapping[str, Any],
    properties: Mapping[str, Any],
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        _report(report, check(_resource(args), _config(args, defaults)))

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(properties={**_ENVIRONMENT, **properties}),
    )


def _environment_policy(
    name: str,
    *,
    description: str,
    default_environments: Sequence[str],
    check: Callable[[Resource], list[str]],
) -> ResourceValidationPolicy:
    """A mandatory rule that holds in ``default_environments``, or in the environments its
    config names."""

    def scoped(resource: Resource, config: Mapping[str, Any]) -> list[str]:
        return check(resource) if rules.applies(resource, config, default_environments) else []

    return _resource_policy(
        name,
        description=description,
        level=EnforcementLevel.MANDATORY,
        check=scoped,
        defaults={},
        properties={"environments": _ENVIRONMENTS},
    )


def _stack_environment(resources: Sequence[Resource], config: Mapping[str, Any]) -> str | None:
    for resource in resources:
        environment = rules.environment_of(resource, config)
        if environment is not None:
            return environment
    return None


_PRICELESS_KEYS = frozenset(
    {"imageUri", "serviceAccount", "outputUriPrefix", "args", "command", "env", "labels"}
)
"""Inputs that may be unknown in a preview (they come from other resources: the image
digest, the service account, the bucket) without changing what a job costs."""


def _known(resource: Resource) -> Resource:
    """``resource`` with each unknown input that cannot change a price stood in for, as
    the program's own preview estimate does; an unknown that can (a machine type, a
    replica count) raises ``UnknownValueError``: the engine reports that the policy could
    not run in this preview."""
    props, paths = with_placeholders(plain(resource.props))
    for path in paths:
        if path.rsplit(".", 1)[-1].split("[", 1)[0] not in _PRICELESS_KEYS:
            raise unknown_at(path)
    return Resource(resource.type, props, resource.urn, resource.name)


def budget_violations(resources: Sequence[Resource], config: Mapping[str, Any]) -> list[str]:
    """The budget check of a whole stack, on what the engine hands over; in a preview,
    values not known yet that cannot change a price (the image digest) do not stop it."""
    hours = float(config.get("workbenchHours", rules.DEFAULT_WORKBENCH_HOURS))
    budget, problems = rules.budget_of(config)
    if problems or budget is None:
        return problems
    # In URN order: the first value not known yet is the same one in every run.
    known = [_known(r) for r in sorted(resources, key=lambda r: r.urn)]
    return rules.estimate_errors(known) + rules.stack_budget(
        rules.estimate_from_resources(known, hours), budget
    )


def _budget_policy(
    name: str, level: EnforcementLevel, environments: Sequence[str]
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        resources = _resources(args)
        config = _config(args, {"environments": list(environments)})
        if _stack_environment(resources, config) in set(config["environments"]):
            _report(report, budget_violations(resources, config))

    where = "prod" if level is EnforcementLevel.MANDATORY else "every environment but prod"
    return StackValidationPolicy(
        name=name,
        description=(
            f"The stack's estimated cost stays within its budget ({level.value} in {where})."
        ),
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(
            properties={
                **_ENVIRONMENT,
                "environments": _ENVIRONMENTS,
                "budget": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "USD (make preview|up POLICY=1: the stack's budget key).",
                },
                "workbenchHours": {"type": "number", "minimum": 0, "default": 1},
            }
        ),
    )


_PER_ENVIRONMENT_NUMBER = {
    "type": "object",
    "additionalProperties": {"type": "number", "minimum": 0},
}


def _limit(
    name: str,
    *,
    description: str,
    check: Callable[[Any, str | None, Mapping[str, Any]], list[str]],
    key: str,
    default: Mapping[str, Any],
    schema: Mapping[str, Any],
    whole_stack: bool = False,
) -> ResourceValidationPolicy | StackValidationPolicy:
    """A mandatory rule with a limit per environment (config ``key``), over each resource
    or over the ``whole_stack``'s resources."""
    defaults = {key: dict(default)}
    if not whole_stack:
        return _resource_policy(
            name,
            description=description,
            level=EnforcementLevel.MANDATORY,
            check=lambda r, c: check(r, rules.environment_of(r, c), c[key]),
            defaults=defaults,
            properties={key: schema},
        )

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        resources = _resources(args)
        config = _config(args, defaults)
        _report(report, check(resources, _stack_environment(resources, config), config[key]))

    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={**_ENVIRONMENT, key: schema}),
    )


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    mandatory, advisory = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY
    return [
        _resource_policy(
            "required-labels",
            description="Buckets, notebooks and jobs carry the required labels "
            "(team, cost-center).",
            level=advisory,
            check=lambda r, c: rules.required_labels(r, c["keys"]),
            defaults={"keys": list(rules.DEFAULT_REQUIRED_LABELS)},
            properties={"keys": {"type": "array", "items": {"type": "string"}}},
        ),
        _limit(
            "gpus-per-job",
            description="A job holds at most maxGpus[environment] accelerators at once.",
            check=rules.job_gpu_limit,
            key="maxGpus",
            default=rules.DEFAULT_MAX_GPUS_PER_JOB,
            schema=_PER_ENVIRONMENT_INT,
        ),
        _limit(
            "gpus-per-stack",
            whole_stack=True,
            description="The stack's jobs together hold at most maxGpus[environment] accelerators.",
            check=rules.stack_gpu_limit,
            key="maxGpus",
            default=rules.DEFAULT_MAX_GPUS_PER_STACK,
            schema=_PER_ENVIRONMENT_INT,
        ),
        _limit(
            "capacity-per-hour",
            whole_stack=True,
            description="The stack's persistent resources together cost at most "
            "maxUsdPerHour[environment] per hour, always on (at their minimum replicas).",
            check=lambda resources, environment, limit: rules.stack_capacity_limit(
                [_known(r) for r in resources if r.type == rules.PERSISTENT_RESOURCE_TYPE],
                environment,
                limit,
            ),
            key="maxUsdPerHour",
            default=rules.DEFAULT_MAX_CAPACITY_USD_PER_HOUR,
            schema=_PER_ENVIRONMENT_NUMBER,
        ),
        _resource_policy(
            "capacity-team-label",
            description="A persistent resource carries labels identifying its team (keys).",
            level=mandatory,
            check=lambda r, c: rules.capacity_team_label(r, c["keys"]),
            defaults={"keys": list(rules.DEFAULT_CAPACITY_TEAM_LABELS)},
            properties={"keys": {"type": "array", "items": {"type": "string"}}},
        ),
        _limit(
            "allowed-accelerators",
            description="Jobs, endpoints and notebooks use only the accelerator types allowed "
            "in their environment.",
            check=rules.allowed_accelerators,
            key="allowed",
            default=_per_environment_names(rules.DEFAULT_ALLOWED_ACCELERATORS),
            schema=_PER_ENVIRONMENT_NAMES,
        ),
        _limit(
            "endpoint-machines",
            description="Endpoints deploy models only on the machine types allowed in their "
            "environment (fnmatch patterns).",
            check=rules.endpoint_machines,
            key="allowed",
            default=_per_environment_names(rules.DEFAULT_ALLOWED_PREDICTION_MACHINES),
            schema=_PER_ENVIRONMENT_NAMES,
        ),
        _limit(
            "endpoint-replicas",
            description="A deployed model scales to at most maxReplicas[environment] replicas.",
            check=rules.endpoint_replicas,
            key="maxReplicas",
            default=rules.DEFAULT_MAX_REPLICAS,
            schema=_PER_ENVIRONMENT_INT,
        ),
        _resource_policy(
            "job-timeout",
            description="Every job (every trial of a study) has a scheduling.timeout.",
            level=mandatory,
            check=lambda r, c: rules.job_timeout(r),
            defaults={},
            properties={},
        ),
        _resource_policy(
            "no-secret-in-body",
            description="No secret in a job's, a model's or an endpoint's body (a job's env): "
            "Vertex shows it in plain text to anyone who may read the resource; the trainer "
            "reads it from Secret Manager instead (advisory: set it mandatory to refuse).",
            level=advisory,
            check=lambda r, c: rules.no_secret_in_body(r),
            defaults={},
            properties={},
        ),
        _environment_policy(
            "image-by-digest",
            description="Jobs run container images by digest, never by a tag that can move.",
            default_environments=("dev", "prod"),
            check=rules.image_by_digest,
        ),
        _environment_policy(
            "no-default-service-account",
            description="No job or notebook runs as the default compute service account.",
            default_environments=("dev", "prod"),
            check=rules.no_default_service_account,
        ),
        _environment_policy(
            "notebook-no-public-ip",
            description="Notebooks in prod have no public IP.",
            default_environments=("prod",),
            check=rules.notebook_no_public_ip,
        ),
        _resource_policy(
            "bucket-access",
            description="Buckets have uniform bucket-level access and enforced public access "
            "prevention.",
            level=mandatory,
            check=lambda r, c: rules.bucket_access(r),
            defaults={},
            properties={},
        ),
        _environment_policy(
            "cmek",
            description="Buckets and jobs use a customer-managed key where the stack asks for "
            "it (config environments; none by default).",
            default_environments=(),
            check=rules.cmek,
        ),
        # One verdict, one rule for its action: refused where REFUSING_ENVIRONMENTS says.
        _budget_policy("budget", advisory, ("local", "dev")),
        _budget_policy("budget-prod", mandatory, tuple(sorted(REFUSING_ENVIRONMENTS))),
    ]


__all__ = ["POLICY_PACK_NAME", "budget_violations", "policies"]
