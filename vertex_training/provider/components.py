"""The components the provider serves: each reads its args (plain dicts, in the schema
``schema`` derives from the Python Args) the way the stack config reader reads a stack's
YAML, then declares the same public resources a Python program would.

A job, model, endpoint or persistent resource takes its platform (and a model its job)
as the component itself: the SDKs send a resource reference, and this process, which
constructed that component before (the reference waits for it), hands back its own object
(``_References``), so the job runs on that ``vt.TrainingPlatform`` itself (its bucket,
image, labels and dependencies). A job's ``persistentResourceId`` is text (a
``PersistentResource``'s ``resourceId`` output, or any resource's id); where it is the id
of a ``PersistentResource`` this process constructed, the job is placed on that resource
itself and held to its pools, as in Python.

Problems with the args are one ``ArgsError``: every problem, each at the path the caller
wrote (``trial.chief.machineType``), what is valid, and the fix; the provider hands it
to the engine as the message alone (no traceback).
"""

# No ``from __future__ import annotations``: the provider reads these annotations as types.

import dataclasses
from typing import Any, NotRequired

import pulumi
from pulumi.errors import InputPropertyErrorDetails

from vertex_training._checks import InvalidArgumentsError
from vertex_training._pulumi_internals import resolved_now
from vertex_training.capacity.api import PersistentResourceArgs, on_capacity
from vertex_training.capacity.resource import PersistentResource as CapacityResource
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import (
    CustomJobArgs,
    HyperparameterTuningJobArgs,
    facts_of,
)
from vertex_training.jobs.declarations import JobDeclaration, job_problems, read_job
from vertex_training.jobs.records import JobState, TrialResult
from vertex_training.jobs.resources import CustomJob as CustomJobResource
from vertex_training.jobs.resources import HyperparameterTuningJob as TuningJobResource
from vertex_training.jobs.yaml_reader import config_problem, config_problems, from_config
from vertex_training.platform.platform import TrainingPlatform as Platform
from vertex_training.platform.platform import TrainingPlatformArgs
from vertex_training.provider.schema import args_type, output_type, yaml_spelling
from vertex_training.serving.api import EndpointArgs, ModelArgs
from vertex_training.serving.resources import Endpoint as EndpointResource
from vertex_training.serving.resources import Model as ModelResource

__all__ = [
    "COMPONENTS",
    "REFERENCES",
    "ArgsError",
    "CustomJob",
    "Endpoint",
    "HyperparameterTuningJob",
    "Model",
    "PersistentResource",
    "TrainingPlatform",
]

PACKAGE = "vertex-training"


class ArgsError(Exception):
    """A component's args are wrong: every problem, phrased as stack config's are."""

    def __init__(self, component: str, name: str, problems: list[Finding]) -> None:
        # Each problem as stack config phrases it: what is wrong, what is valid, the fix.
        self.errors: list[InputPropertyErrorDetails] = [
            {
                "property_path": p.caller,
                "reason": render(p, "property")
                + f". Fix: set {p.caller} in the args of {component} {name!r} in your program",
            }
            for p in problems
        ]
        lines = "\n".join(f"  - {e['property_path']}: {e['reason']}" for e in self.errors)
        super().__init__(f"invalid args for {component} {name!r}:\n{lines}")
        self.header = f"invalid args for {component} {name!r}"


def _refused(component: str, name: str, error: InvalidArgumentsError, args: type) -> ArgsError:
    """An ``InvalidArgumentsError`` of the Args (Python spelling) as an ``ArgsError``."""
    if not error.findings:  # a resource's own refusal, not its Args'
        return ArgsError(component, name, [config_problem("", str(error), "")])
    return ArgsError(component, name, config_problems(args, error.findings))


_OURS: dict[tuple[str, str], pulumi.ComponentResource] = {}
"""This process's components by (type, name)."""


class _References(pulumi.runtime.ResourceModule):
    """A reference to a component of this package (``platform``, ``job``) as the object
    this process constructed; the URN of any other (a component this process did not
    construct), which the component taking it refuses by name."""

    def version(self) -> None:
        return None

    def construct(self, name: str, typ: str, urn: str) -> Any:
        return _OURS.get((typ, name), urn)


def _referenced(component: str, name: str, key: str, value: Any, kinds: tuple[type, ...]) -> Any:
    """``value``, a reference to one of ``kinds`` constructed in this program, else the
    ``ArgsError`` naming ``key``."""
    if isinstance(value, kinds):
        return value
    wanted = " or ".join(kind.__name__ for kind in kinds)
    raise ArgsError(
        component,
        name,
        [
            config_problem(
                key,
                f"not a {wanted} of this program",
                f"a vertex-training {wanted} declared in this program ({key}: ${{{key}}} in "
                f"YAML, the object itself in TypeScript and Go)",
            )
        ],
    )


class TrainingPlatform(pulumi.ComponentResource):
    """A Vertex AI training environment: on ``local``, jobs run on this machine and a
    directory stands in for the bucket; on ``dev``/``prod``, the APIs, bucket, registry,
    service accounts, images and Workbench in Google Cloud."""

    environment: pulumi.Output[str]
    project: pulumi.Output[str]
    region: pulumi.Output[str]
    bucket_url: pulumi.Output[str]
    """``gs://<bucket>``; on a local platform an absolute directory."""

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        platform_args = _read("TrainingPlatform", name, TrainingPlatformArgs, args, frozenset())
        super().__init__(f"{PACKAGE}:index:TrainingPlatform", name, None, opts)
        try:
            platform = Platform(name, platform_args, pulumi.ResourceOptions(parent=self))
        except InvalidArgumentsError as error:
            raise _refused("TrainingPlatform", name, error, TrainingPlatformArgs) from None
        self.environment = pulumi.Output.from_input(platform.environment)
        self.project = pulumi.Output.from_input(platform.project)
        self.region = pulumi.Output.from_input(platform.region)
        self.bucket_url = platform.bucket_url
        self.platform = platform
        _OURS[(f"{PACKAGE}:index:TrainingPlatform", name)] = self
        self.register_outputs({})


def _unrooted(problem: Finding) -> Finding:
    return dataclasses.replace(problem, caller=problem.caller.lstrip("."))


class _Job(pulumi.ComponentResource):
    _args: type
    _kind: str

    job_name: pulumi.Output[str]
    """``projects/P/locations/L/<kind>/ID`` (local: ``local/...``)."""
    state: pulumi.Output[JobState]
    """When the job was created or refreshed."""
    console_url: pulumi.Output[str]
    """Where to watch the job: the Cloud console page, or the local job directory."""
    model_dir: pulumi.Output[str]
    """``AIP_MODEL_DIR`` (``<base output directory>/model``)."""
    end_time: pulumi.Output[str]

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        kind = type(self).__name__
        fields = {k: v for k, v in args.items() if k != "platform"}
        item = {"name": name, **yaml_spelling(fields, args_type(self._args, _NO_PLATFORM))}
        declaration, problems = read_job(item, "")
        if declaration is None:
            raise ArgsError(kind, name, [_unrooted(p) for p in problems])
        declaration = _on_capacity(declaration)
        platform = _referenced(kind, name, "platform", args.get("platform"), (TrainingPlatform,))
        platform = platform.platform
        acknowledged = platform.acknowledged_hardware_checks
        placed, found = job_problems((declaration,), facts_of(platform))
        errors = [
            config_problem(path.removeprefix("jobs[0]").lstrip("."), render(f, "message"), f.valid)
            for path, f in found
            if f.severity == "error" and f.check not in acknowledged
        ]
        if errors:
            raise ArgsError(kind, name, errors)
        super().__init__(f"{PACKAGE}:index:{kind}", name, None, opts)
        for path, finding in found:
            if finding.severity == "warning" or finding.check in acknowledged:
                where = path.removeprefix("jobs[0]").lstrip(".")
                pulumi.log.warn(f"{where}: {render(finding, 'message')}", resource=self)
        resource = self._resource()
        try:
            job = resource(
                name,
                placed[0].args.on(platform),
                pulumi.ResourceOptions(parent=self, depends_on=[platform]),
            )
        except InvalidArgumentsError as error:
            raise _refused(kind, name, error, self._args) from None
        self.job = job
        _OURS[(f"{PACKAGE}:index:{kind}", name)] = self
        self.job_name = job.job_name
        self.state = job.state.apply(JobState)
        self.console_url = job.console_url.apply(lambda url: url or "")
        self.model_dir = job.model_dir.apply(lambda path: path or "")
        self.end_time = job.end_time.apply(lambda time: time or "")
        self._outputs(job)
        self.register_outputs({})

    def _resource(self) -> Any:
        raise NotImplementedError

    def _outputs(self, job: Any) -> None:
        """The kind's own outputs."""


_NO_PLATFORM = frozenset({"platform"})


def _on_capacity(job: JobDeclaration) -> JobDeclaration:
    """``job`` placed on the ``PersistentResource`` of this program whose id its
    ``persistentResourceId`` is (so its pools are held to the resource's), else as it is."""

    def ours(named: Any) -> Any:
        resource_id = resolved_now(named)
        resource = _CAPACITY.get(resource_id) if isinstance(resource_id, str) else None
        return None if resource is None else resource.resource

    return JobDeclaration(job.name, on_capacity(job.args, ours))


class CustomJob(_Job):
    """A Vertex AI CustomJob on a TrainingPlatform: one run of a chief and, optionally,
    workers, parameter servers and an evaluator; ``pulumi up`` waits for it to end."""

    _args = CustomJobArgs

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        # Its own __init__: the provider reads each kind's args from its annotation.
        super().__init__(name, args, opts)

    def _resource(self) -> Any:
        return CustomJobResource


class HyperparameterTuningJob(_Job):
    """A Vertex AI HyperparameterTuningJob on a TrainingPlatform: trials of ``trial``
    chosen by ``study``; ``pulumi up`` waits for the study to end."""

    _args = HyperparameterTuningJobArgs

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        # Its own __init__: the provider reads each kind's args from its annotation.
        super().__init__(name, args, opts)

    best_trial: pulumi.Output[Any]
    """The best trial by the study's first metric and its goal."""
    trials: pulumi.Output[Any]

    def _resource(self) -> Any:
        return TuningJobResource

    def _outputs(self, job: Any) -> None:
        self.best_trial = job.best_trial
        self.trials = job.trials


def _with_args(component: type, args: Any) -> None:
    """The schema's args of ``component``: the provider reads ``__init__``'s annotation."""
    vars(component)["__init__"].__annotations__["args"] = args


def _with_references(cls: type, skip: frozenset[str], **references: str) -> Any:
    """The args of ``cls`` without ``skip``, and each of ``references`` a component of this
    package (``Name?``: optional). The pinned SDK's analyzer types a resource only as
    another package's (it reads the class's ``pulumi-plugin.json``): each is a string
    here, which ``host.finished_schema`` makes a reference to the components it names."""
    fields = args_type(cls, skip)
    text: Any = pulumi.Input[str]  # type: ignore[misc]
    annotations = {
        key: NotRequired[text] if kinds.endswith("?") else text for key, kinds in references.items()
    }
    REFERENCES[cls.__name__.removesuffix("Args")] = {
        key: kinds.rstrip("?") for key, kinds in references.items()
    }
    return type(cls.__name__, (fields,), {"__annotations__": annotations})


REFERENCES: dict[str, dict[str, str]] = {}
"""Each component's properties that are components of this package: property -> the
components it may be (``|`` between several)."""


_SERVING_NOT_IN_ARGS = frozenset({"platform", "project", "region", "job"})
"""A model or endpoint is placed by its platform; a model's job is a reference."""


class Model(pulumi.ComponentResource):
    """A model in Vertex AI Model Registry, uploaded from a job's model directory (a
    tuning job's: its best trial's); when the job trains again, a new version."""

    name: pulumi.Output[str]
    """`projects/P/locations/L/models/ID` (no version)."""
    version_id: pulumi.Output[str]
    version_name: pulumi.Output[str]
    """`<name>@<version id>`: what a deployment serves."""
    aliases: pulumi.Output[list[str]]
    artifact_uri: pulumi.Output[str]

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        job = args.get("job")
        if job is not None:
            job = _referenced("Model", name, "job", job, (CustomJob, HyperparameterTuningJob)).job
        model = _serving(self, name, args, opts, cls=ModelArgs, resource=ModelResource, job=job)
        self.name = model.name
        self.version_id = model.version_id
        self.version_name = model.version_name
        self.aliases = model.aliases
        self.artifact_uri = model.artifact_uri
        self.register_outputs({})


def _serving(
    component: pulumi.ComponentResource,
    name: str,
    args: Any,
    opts: pulumi.ResourceOptions | None,
    *,
    cls: type,
    resource: Any,
    **references: Any,
) -> Any:
    """``component`` (a model or an endpoint) registered, and the serving ``resource`` it
    declares from its args on its platform (with ``references`` resolved already)."""
    kind = type(component).__name__
    platform = _referenced(kind, name, "platform", args.get("platform"), (TrainingPlatform,))
    fields = {k: v for k, v in args.items() if k not in _SERVING_NOT_IN_ARGS}
    read = _read(kind, name, cls, fields, _SERVING_NOT_IN_ARGS)
    pulumi.ComponentResource.__init__(component, f"{PACKAGE}:index:{kind}", name, None, opts)
    try:
        return resource(
            name,
            dataclasses.replace(read, platform=platform.platform, **references),
            pulumi.ResourceOptions(parent=component),
        )
    except InvalidArgumentsError as error:
        raise _refused(kind, name, error, cls) from None


class Endpoint(pulumi.ComponentResource):
    """A Vertex AI endpoint with its deployed models and their traffic split (locally, a
    prediction server on 127.0.0.1)."""

    name: pulumi.Output[str]
    """`projects/P/locations/L/endpoints/ID`."""
    predict_url: pulumi.Output[str]
    """Where to POST `{"instances": [...]}`."""
    deployed_model_ids: pulumi.Output[dict[str, str]]
    """`DeployedModel.id` by deployment name."""

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        endpoint = _serving(self, name, args, opts, cls=EndpointArgs, resource=EndpointResource)
        self.name = endpoint.name
        self.predict_url = endpoint.predict_url
        self.deployed_model_ids = endpoint.deployed_model_ids
        self.register_outputs({})


class PersistentResource(pulumi.ComponentResource):
    """A Vertex AI PersistentResource on a TrainingPlatform: pools kept provisioned (and
    billed every hour it exists) for the jobs placed on it (on ``local``, a warm pool of
    worker processes). A job is placed on it by its `resourceId` output."""

    resource_id: pulumi.Output[str]
    """What a job's `persistentResourceId` takes."""
    name: pulumi.Output[str]
    """`projects/P/locations/R/persistentResources/ID`."""

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
        kind = "PersistentResource"
        platform = _referenced(kind, name, "platform", args.get("platform"), (TrainingPlatform,))
        fields = {k: v for k, v in args.items() if k != "platform"}
        resource_args = _read(kind, name, PersistentResourceArgs, fields, _NO_PLATFORM)
        try:
            placed = dataclasses.replace(resource_args, platform=platform.platform)
            resource_id = placed.id_for(name)
        except InvalidArgumentsError as error:
            raise _refused(kind, name, error, PersistentResourceArgs) from None
        super().__init__(f"{PACKAGE}:index:{kind}", name, None, opts)
        self.resource = CapacityResource(name, placed, pulumi.ResourceOptions(parent=self))
        self.resource_id = pulumi.Output.from_input(resource_id)
        self.name = self.resource.name
        _OURS[(f"{PACKAGE}:index:{kind}", name)] = self
        _CAPACITY[resource_id] = self
        self.register_outputs({})


_CAPACITY: dict[str, PersistentResource] = {}
"""This process's persistent resources by their id: where a job's ``persistentResourceId``
is one of them, the job is held to its pools."""


def _read(component: str, name: str, cls: type, fields: Any, skip: frozenset[str]) -> Any:
    """``cls`` (without the fields ``skip``) from the component's ``fields`` (the stack
    reader's route), or the ``ArgsError`` naming every problem."""
    problems: list[Finding] = []
    read = from_config(cls, yaml_spelling(fields, args_type(cls, skip)), "", problems, skip=skip)
    if problems or read is None:
        raise ArgsError(component, name, [_unrooted(p) for p in problems])
    return read


_with_args(TrainingPlatform, args_type(TrainingPlatformArgs))
_JOB_REFS = {"platform": "TrainingPlatform"}
_with_args(CustomJob, _with_references(CustomJobArgs, _NO_PLATFORM, **_JOB_REFS))
_with_args(
    HyperparameterTuningJob,
    _with_references(HyperparameterTuningJobArgs, _NO_PLATFORM, **_JOB_REFS),
)
_with_args(
    Model,
    _with_references(
        ModelArgs, _SERVING_NOT_IN_ARGS, job="CustomJob|HyperparameterTuningJob?", **_JOB_REFS
    ),
)
_with_args(Endpoint, _with_references(EndpointArgs, _SERVING_NOT_IN_ARGS, **_JOB_REFS))
_with_args(PersistentResource, _with_references(PersistentResourceArgs, _NO_PLATFORM, **_JOB_REFS))
HyperparameterTuningJob.__annotations__["best_trial"] = output_type(TrialResult)
HyperparameterTuningJob.__annotations__["trials"] = output_type(list[TrialResult])
pulumi.runtime.register_resource_module(PACKAGE, "index", _References())

COMPONENTS: list[type[pulumi.ComponentResource]] = [
    TrainingPlatform,
    CustomJob,
    HyperparameterTuningJob,
    Model,
    Endpoint,
    PersistentResource,
]
