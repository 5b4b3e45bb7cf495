"""A stack's served models: ``models`` and ``endpoints`` in its YAML -> ``ModelArgs`` and
``EndpointArgs``, read with the jobs' generic reader (camelCase keys of the same Args).

```yaml
vertex-training:models:
  - name: horses-humans
    job: horses-humans-tuning        # a job of this stack: its (best trial's) model
    versionAliases: [production]
vertex-training:endpoints:
  - name: horses-humans
    deployments:
      primary: {model: horses-humans, machineType: n1-standard-2}
    traffic: {primary: 100}          # optional with one deployment
```

A deployment's ``model`` names a model of the stack (or is a version's resource name).
Besides what only the YAML can get wrong (shapes, names, references), the serving rules
judge each entry here, once, with the stack's region, so that every problem is named at
its YAML key (``endpoints[0].deployments.primary.machineType``) with the jobs' problems,
before anything is registered; the Args keep what was found (their ``judged``), so the
resources do not judge them again and log the warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from vertex_training._checks import Judgement, unchecked_copy
from vertex_training.findings import Finding, render
from vertex_training.jobs.yaml_reader import config_problem, from_config
from vertex_training.serving.api import EndpointArgs, ModelArgs, judged, located
from vertex_training.serving.resources import Endpoint, Model
from vertex_training.stack.settings import entries

SERVING_KEYS = ("models", "endpoints")
"""The stack keys this module reads."""

_NOT_IN_YAML = frozenset({"platform", "project", "region"})
"""The stack's platform places every model and endpoint."""


@dataclass(frozen=True)
class ModelDeclaration:
    name: str
    job: str | None
    """The stack job whose model it is (None: ``artifactUri`` is given)."""
    args: ModelArgs


@dataclass(frozen=True)
class EndpointDeclaration:
    name: str
    args: EndpointArgs


@dataclass(frozen=True)
class ServingDeclarations:
    models: tuple[ModelDeclaration, ...] = ()
    endpoints: tuple[EndpointDeclaration, ...] = ()

    def declare(
        self, platform: Any, jobs: Mapping[str, Any]
    ) -> tuple[dict[str, Model], dict[str, Endpoint]]:
        """The stack's ``Model`` and ``Endpoint`` resources on ``platform``: a model's job,
        and a deployment's model of the stack, are the resource of that name."""
        models: dict[str, Model] = {}
        for m in self.models:
            job = jobs[m.job] if m.job is not None else None
            # The same facts as judged on: the Args keep their findings (not judged again).
            models[m.name] = Model(m.name, unchecked_copy(m.args, platform=platform, job=job))
        endpoints: dict[str, Endpoint] = {}
        for e in self.endpoints:
            deployments = {
                key: replace(d, model=models.get(d.model, d.model))
                if isinstance(d.model, str)
                else d
                for key, d in e.args.deployments.items()
            }
            args = unchecked_copy(e.args, platform=platform, deployments=deployments)
            endpoints[e.name] = Endpoint(e.name, args)
        return models, endpoints


_Args = TypeVar("_Args", ModelArgs, EndpointArgs)


def _judge(
    path: str, args: _Args, environment: str, region: str | None
) -> tuple[_Args, list[Finding]]:
    """``args`` holding what the serving rules found of them, and the errors, each at its
    YAML key under ``path``."""
    found = judged(args, environment, region)
    kept = unchecked_copy(args, judged=Judgement((environment, region), tuple(found)))
    errors = [
        Finding(f.path, render(f, "message"), valid=f.valid, caller=f"{path}.{f.caller}")
        for f in located(found, "yaml")
        if f.severity == "error"
    ]
    return kept, errors


def read_serving(
    ours: Mapping[str, object],
    job_names: Sequence[str],
    *,
    region: str | None = None,
    environment: str = "local",
) -> tuple[ServingDeclarations, list[Finding]]:
    """The stack's models and endpoints, or every problem they have (YAML paths).
    ``region``: where a cloud stack serves (None: local, or a region refused elsewhere:
    only the shape of the hardware is judged)."""
    out: list[Finding] = []
    models: list[ModelDeclaration] = []
    for path, item, found in entries(ours.get("models"), "models", "model", out):
        out += found
        if found:
            continue
        job = item.get("job")
        if job is not None and job not in job_names:
            out.append(
                config_problem(
                    f"{path}.job",
                    f"{job!r} is not a job of this stack",
                    ", ".join(job_names) or "no job is declared (vertex-training:jobs)",
                )
            )
        fields = {k: v for k, v in item.items() if k not in ("name", "job")}
        args = from_config(ModelArgs, fields, path, out, skip=_NOT_IN_YAML | {"job"})
        if args is None:
            continue
        args, errors = _judge(path, args, environment, region)
        out += errors
        models.append(ModelDeclaration(str(item["name"]), job, args))
    model_names = [m.name for m in models]
    endpoints: list[EndpointDeclaration] = []
    for path, item, found in entries(ours.get("endpoints"), "endpoints", "endpoint", out):
        out += found
        if found:
            continue
        fields = {k: v for k, v in item.items() if k != "name"}
        args = from_config(EndpointArgs, fields, path, out, skip=_NOT_IN_YAML)
        if args is None:
            continue
        for key, deployment in args.deployments.items():
            model = deployment.model
            if isinstance(model, str) and "/" not in model and model not in model_names:
                out.append(
                    config_problem(
                        f"{path}.deployments.{key}.model",
                        f"{model!r} is not a model of this stack",
                        ", ".join(model_names)
                        or "a model under vertex-training:models, or "
                        "a model version's name projects/P/locations/L/models/ID@V",
                    )
                )
        args, errors = _judge(path, args, environment, region)
        out += errors
        endpoints.append(EndpointDeclaration(str(item["name"]), args))
    return ServingDeclarations(tuple(models), tuple(endpoints)), out


__all__ = [
    "SERVING_KEYS",
    "EndpointDeclaration",
    "ModelDeclaration",
    "ServingDeclarations",
    "read_serving",
]
