"""Jobs declared in stack config (``vertex-training:jobs``): the typed Args, in YAML.

A job entry is ``CustomJobArgs`` (or, with ``trial`` and ``study``,
``HyperparameterTuningJobArgs``) with the same nested shape and the same names in
camelCase, plus ``name``, the Pulumi resource name (docs/jobs.md; ``stacks/Pulumi.dev.yaml``
holds two). Values (``SPOT``, ``maximize``, ``log``) are spelt as in Python; where several
classes fit (a parameter, an early-stopping rule) ``type`` names the Python class. The
stack's platform is every job's, and gives the image, output directory, service account,
network and labels by default.

The project schema in ``Pulumi.yaml`` cannot type a list of objects (pulumi/pulumi#11321),
so the Args types are the schema (``yaml_reader.from_config``): unknown keys are errors that
name the key and what was meant, and a key only the other kind of job has says so and
how to write the entry as that kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vertex_training._checks import Judgement
from vertex_training.findings import Finding
from vertex_training.jobs import api
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.yaml_reader import (
    config_problem,
    from_config,
    required,
    yaml_keys,
    yaml_value,
)

_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
_NOT_IN_YAML = frozenset({"platform"})
"""The stack's platform is every declared job's."""


@dataclass(frozen=True, slots=True)
class JobDeclaration:
    """One job of a stack: its resource name and the Args it declares."""

    name: str
    args: api.JobArgs

    def __hash__(self) -> int:
        return hash(self.name)  # the Args hold mappings


def name_problems(name: Any, path: str, what: str, why: str = "") -> list[Finding]:
    """The problem of a stack entry's ``name`` (it names a resource), if it has one."""
    if isinstance(name, str) and _NAME.match(name):
        return []
    found = f"{name!r} is not a {what} name" if name is not None else "missing"
    valid = "1-63 lowercase letters, digits and '-', starting with a letter"
    return [config_problem(f"{path}.name", found, valid + why)]


def _other_kind(key: str, fields: Mapping[str, Any], custom: bool) -> tuple[str, str]:
    """(problem, valid) of ``key``, a key only the other kind of job has: an entry's kind is
    whether it has ``trial`` or ``study``, and the kinds' keys come from the Args types."""
    if not custom:  # what a custom job runs, a tuning job runs in each trial
        return "a tuning job sets it for each trial, under trial", f"trial: {{{key}: ...}}"
    moved = [k for k in fields if k in yaml_keys(api.TrialJob)]
    tuning = yaml_keys(api.HyperparameterTuningJobArgs, _NOT_IN_YAML)
    return (
        "applies only to a tuning job, and this entry is a custom job (it has no trial or study)",
        f"to tune, move {', '.join(moved) or 'the pools'} under trial: {{...}} and add "
        "study: {parameters: [...]} (a tuning job entry has "
        f"{', '.join(k for k, f in tuning.items() if required(f))}); else drop {key}",
    )


def read_job(item: Any, path: str) -> tuple[JobDeclaration | None, list[Finding]]:
    """One YAML job entry as a declaration, or every problem it has (YAML paths)."""
    if not isinstance(item, Mapping):
        return None, [config_problem(path, f"got {yaml_value(item)}", "a mapping (one job)")]
    name = item.get("name")
    out = name_problems(
        name, path, "job", " (it names the resource and the job's output directory)"
    )
    fields = {k: v for k, v in item.items() if k != "name"}
    custom = "trial" not in fields and "study" not in fields
    cls, other = (
        (api.CustomJobArgs, api.HyperparameterTuningJobArgs)
        if custom
        else (api.HyperparameterTuningJobArgs, api.CustomJobArgs)
    )
    stray = yaml_keys(other, _NOT_IN_YAML).keys() - yaml_keys(cls, _NOT_IN_YAML).keys()
    out += [
        config_problem(f"{path}.{k}", *_other_kind(k, fields, custom)) for k in fields if k in stray
    ]
    kept = {k: v for k, v in fields.items() if k not in stray}
    args = from_config(cls, kept, path, out, skip=_NOT_IN_YAML)
    if out or args is None:
        return None, out
    # Like ``stack``, the stack adds ``job: <name>``: the console filters a stack's runs by it.
    return JobDeclaration(str(name), replace(args, labels={"job": name, **args.labels})), out


def job_problems(
    jobs: tuple[JobDeclaration, ...], facts: api.PlatformFacts
) -> tuple[tuple[JobDeclaration, ...], list[tuple[str, Finding]]]:
    """The declared jobs on the stack's platform (``facts``), judged there once, and every
    finding of theirs, each with the config path it comes from
    (``jobs[1].chief.accelerator.count``), errors and warnings alike."""
    out: list[tuple[str, Finding]] = []
    seen: set[str] = set()
    placed: list[JobDeclaration] = []
    for index, job in enumerate(jobs):
        where = f"jobs[{index}]"
        if job.name in seen:
            repeats = Finding("name", f"{job.name!r} repeats; job names are unique", "error")
            out.append((f"{where}.name", repeats))
        seen.add(job.name)
        resolved = api.resolve(job.args, job.name, facts)
        # Put on a platform of the same facts, the job is not judged again (``resolve``).
        judged = Judgement((job.name, facts))
        placed.append(JobDeclaration(job.name, replace(job.args, platform=facts, judged=judged)))
        for finding in resolved.findings:
            key = caller_path(job.args, finding.path, "yaml")
            out.append((f"{where}.{key}" if key else where, finding))
    return tuple(placed), out


__all__ = [
    "JobDeclaration",
    "job_problems",
    "name_problems",
    "read_job",
]
