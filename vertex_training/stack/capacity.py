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

from vertex_training._checks import InvalidArgumentsError, unchecked_copy
from vertex_training.capacity.api import PersistentResourceArgs, on_capacity
from vertex_training.capacity.resource import PersistentResource
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import JobArgs, PlatformFacts
from vertex_training.jobs.body import camel
from vertex_training.jobs.declarations import JobDeclaration
from vertex_training.jobs.yaml_reader import config_problem, from_config
from vertex_training.stack.settings import entries

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
        that resource (their fit was judged with the job)."""
        resources = {
            # Judged on the stack's facts where it was read: not again.
            name: PersistentResource(name, unchecked_copy(args, platform=platform))
            for name, args in self.resources.items()
        }

        def resource(named: Any) -> Any:
            return resources[named.name] if isinstance(named, StackCapacity) else None

        return resources, {name: on_capacity(args, resource) for name, args in jobs.items()}


def _resource_problems(error: InvalidArgumentsError, path: str) -> list[Finding]:
    """A resource's refusal, finding by finding, at the YAML key that set each."""
    out = []
    for finding in error.findings:
        keys = [camel(k) for k in finding.caller.split(".") if k] if finding.caller else []
        where = ".".join([path, *keys])
        out.append(config_problem(where, render(finding, "message"), finding.valid))
    return out or [config_problem(path, str(error), "")]


@dataclass(frozen=True)
class StackCapacity:
    """A stack job's place on a persistent resource of the same stack file (``JobCapacity``),
    while the stack is read: the job's one judging pass holds its pools to the resource's
    (``fit_findings``); ``declare`` puts the resource itself in its place."""

    name: str
    """The resource's stack-file name."""
    args: PersistentResourceArgs

    @property
    def resource_id(self) -> str:
        return self.args.resource_id or self.name

    def fit_findings(
        self, job_pools: Sequence[Any], path: str, parallel_trials: int = 1
    ) -> list[Any]:
        return self.args.fit_findings(self.resource_id, job_pools, path, parallel_trials)

    def resource_options(self) -> Any:
        return None


def placed_on(
    job: JobDeclaration, resources: Mapping[str, PersistentResourceArgs]
) -> JobDeclaration:
    """``job`` placed on the resource its ``persistentResourceId`` names by its stack-file
    name (unchanged where it names none of them: any other id is Vertex's to know)."""

    def declared(named: Any) -> StackCapacity | None:
        if not isinstance(named, str) or named not in resources:
            return None
        return StackCapacity(named, resources[named])

    return JobDeclaration(job.name, on_capacity(job.args, declared))


def read_capacity(
    raw: object, facts: PlatformFacts
) -> tuple[dict[str, PersistentResourceArgs], list[Finding]]:
    """The stack's persistent resources judged on ``facts``, by their stack-file name, and
    their problems at YAML paths."""
    out: list[Finding] = []
    resources: dict[str, PersistentResourceArgs] = {}
    for path, item, found in entries(raw, CAPACITY_KEY, "persistent resource", out):
        fields = {k: v for k, v in item.items() if k != "name"}
        args = from_config(PersistentResourceArgs, fields, path, found, frozenset({"platform"}))
        if args is not None and not found:
            try:
                resources[str(item["name"])] = dataclasses.replace(args, platform=facts)
            except InvalidArgumentsError as error:
                found.extend(_resource_problems(error, path))
        out += found
    return resources, out


__all__ = [
    "CAPACITY_KEY",
    "CapacityDeclarations",
    "StackCapacity",
    "placed_on",
    "read_capacity",
]
