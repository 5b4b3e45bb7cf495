"""A stack's persistent resources: ``persistentResources`` in its YAML ->
``PersistentResourceArgs`` (camelCase keys of the same Args), and its jobs placed on them
by their stack-file name.

```yaml
vertex-training:persistentResources:
  - name: warm-t4
    labels: {team: vision}
    pools:
      - machineType: n1-standard-8
        accelerator: {type: NVIDIA_TESLA_T4, count: 1}
        autoscaling: {minReplicaCount: 1, maxReplicaCount: 2}
vertex-training:jobs:
  - name: train
    persistentResourceId: warm-t4    # a resource of this stack (or any resource's id)
    chief: {machineType: n1-standard-8, accelerator: {type: NVIDIA_TESLA_T4, count: 1}}
```

Each resource is judged on the stack's platform, and each job naming one is held to its
pools (``PersistentResourceArgs.fit_findings``), here, so that every problem is named at
its YAML key before anything is registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_training._checks import InvalidArgumentsError
from vertex_training.capacity.api import PersistentResourceArgs
from vertex_training.capacity.resource import PersistentResource
from vertex_training.findings import Finding
from vertex_training.jobs.api import CustomJobArgs, JobArgs, PlatformFacts, job_body
from vertex_training.jobs.declarations import JobDeclaration, name_problems
from vertex_training.jobs.fields import (
    ConfigProblem,
    caller_path,
    camel,
    from_config,
    judge_body,
    yaml_value,
)
from vertex_training.jobs.view import VIEWS

CAPACITY_KEY = "persistentResources"
"""The stack key this module reads."""


@dataclass(frozen=True)
class CapacityDeclarations:
    """The stack's persistent resources, by their stack-file name (on the stack's facts)."""

    resources: Mapping[str, PersistentResourceArgs] = dataclasses.field(default_factory=dict)

    def declare(
        self, platform: Any, jobs: Mapping[str, JobArgs]
    ) -> tuple[dict[str, PersistentResource], dict[str, JobArgs]]:
        """The stack's ``PersistentResource`` components on ``platform``, and ``jobs`` with
        a ``persistentResourceId`` naming one of them (by its stack-file name) placed on
        that resource (their fit was judged by ``read_capacity``)."""
        resources = {
            name: PersistentResource(name, dataclasses.replace(args, platform=platform))
            for name, args in self.resources.items()
        }
        return resources, {name: _placed(args, resources) for name, args in jobs.items()}


def _placed(args: JobArgs, resources: Mapping[str, Any]) -> JobArgs:
    run = args if isinstance(args, CustomJobArgs) else args.trial
    named = run.persistent_resource_id
    if not isinstance(named, str) or named not in resources:
        return args
    placed = _with(run, persistent_resource_id=resources[named])
    return placed if isinstance(args, CustomJobArgs) else _with(args, trial=placed)


def _with(obj: Any, **changes: Any) -> Any:
    """``obj`` with ``changes``, not judged again (the reader judged the placement)."""
    copy = object.__new__(type(obj))
    copy.__dict__.update(obj.__dict__)
    for key, value in changes.items():
        object.__setattr__(copy, key, value)
    return copy


def _resource_problems(error: InvalidArgumentsError, path: str) -> list[ConfigProblem]:
    """A resource's refusal, finding by finding, at the YAML key that set each."""
    out = []
    for finding in error.findings:
        keys = [camel(k) for k in finding.caller.split(".") if k] if finding.caller else []
        where = ".".join([path, *keys])
        out.append(ConfigProblem(where, finding.message, finding.valid or "see the problem"))
    return out or [ConfigProblem(path, str(error), "see the problem")]


def read_capacity(
    raw: object, facts: PlatformFacts, jobs: Sequence[JobDeclaration], job_paths: Sequence[str]
) -> tuple[CapacityDeclarations, list[ConfigProblem], list[Finding]]:
    """The stack's persistent resources judged on ``facts``, and the fit of each job (at
    ``job_paths``) naming one; (declarations, problems at YAML paths, warnings)."""
    out: list[ConfigProblem] = []
    warnings: list[Finding] = []
    resources: dict[str, PersistentResourceArgs] = {}
    if raw is None or raw == "":
        raw = []
    if not isinstance(raw, list | tuple):
        out.append(ConfigProblem(CAPACITY_KEY, f"got {yaml_value(raw)}", "a YAML list of mappings"))
        raw = []
    for index, item in enumerate(raw):
        path = f"{CAPACITY_KEY}[{index}]"
        if not isinstance(item, Mapping):
            out.append(ConfigProblem(path, f"got {yaml_value(item)}", "a mapping"))
            continue
        name = item.get("name")
        found = name_problems(name, path, "persistent resource")
        if not found and name in resources:
            found.append(ConfigProblem(f"{path}.name", f"{name!r} repeats", "unique names"))
        fields = {k: v for k, v in item.items() if k != "name"}
        args = from_config(PersistentResourceArgs, fields, path, found, frozenset({"platform"}))
        if args is not None and not found:
            try:
                resources[str(name)] = dataclasses.replace(args, platform=facts)
            except InvalidArgumentsError as error:
                found += _resource_problems(error, path)
        out += found
    for job, path in zip(jobs, job_paths, strict=True):
        run = job.args if isinstance(job.args, CustomJobArgs) else job.args.trial
        named = run.persistent_resource_id
        if not isinstance(named, str) or named not in resources:
            continue
        resource = resources[named]
        resource_id = resource.resource_id or named

        def fit(
            view: Any, _: str, resource: PersistentResourceArgs = resource, rid: str = resource_id
        ) -> list[Any]:
            parallel = max(getattr(view, "parallel_trial_count", 1), 1)
            pools = view.trial_job.worker_pool_specs
            at = f"{view.trial_job_path}.workerPoolSpecs"
            return resource.fit_findings(rid, pools, at, parallel)

        body = job_body(job.args, job.name, facts)
        for finding in judge_body(body, VIEWS[job.args.KIND], fit):
            key = caller_path(job.args, finding.path, "yaml")
            where = f"{path}.{key}" if key else path
            if finding.severity == "warning":
                warnings.append(finding.at(where))
            else:
                out.append(
                    ConfigProblem(where, finding.message, finding.valid or "see the problem")
                )
    return CapacityDeclarations(resources), out, warnings


__all__ = ["CAPACITY_KEY", "CapacityDeclarations", "read_capacity"]
