"""The components the provider serves: each reads its args (plain dicts, in the schema
``schema`` derives from the Python Args) the way the stack config reader reads a stack's
YAML, then declares the same public resources a Python program would.

A job names its platform by the platform component's URN (``platform.urn``): the
platform was constructed in this same provider process, before the job (the URN is an
input of the job, so the engine waits for it), and the job runs on that
``vt.TrainingPlatform`` object itself (its bucket, image, labels and dependencies).

Problems with the args are one ``ArgsError``: every problem, each at the path the caller
wrote (``trial.chief.machineType``), what is valid, and the fix; the provider hands it
to the engine as the message alone (no traceback).
"""

# No ``from __future__ import annotations``: the provider reads these annotations as types.

import asyncio
import dataclasses
from typing import Any

import pulumi
from pulumi.errors import InputPropertyErrorDetails

from vertex_training._checks import InvalidArgumentsError
from vertex_training.jobs.api import CustomJobArgs, HyperparameterTuningJobArgs, facts_of
from vertex_training.jobs.declarations import job_problems, read_job
from vertex_training.jobs.fields import (
    SEE_THE_PROBLEM,
    ConfigProblem,
    config_problems,
    from_config,
)
from vertex_training.jobs.records import TrialResult
from vertex_training.jobs.resources import CustomJob as CustomJobResource
from vertex_training.jobs.resources import HyperparameterTuningJob as TuningJobResource
from vertex_training.platform.platform import TrainingPlatform as Platform
from vertex_training.platform.platform import TrainingPlatformArgs
from vertex_training.provider.schema import args_type, output_type, yaml_spelling

__all__ = ["COMPONENTS", "ArgsError", "CustomJob", "HyperparameterTuningJob", "TrainingPlatform"]

PACKAGE = "vertex-training"


class ArgsError(Exception):
    """A component's args are wrong: every problem, phrased as stack config's are."""

    def __init__(self, component: str, name: str, problems: list[ConfigProblem]) -> None:
        # Each problem as stack config phrases it: what is wrong, what is valid, the fix.
        self.errors: list[InputPropertyErrorDetails] = [
            {
                "property_path": p.path,
                "reason": p.problem
                + (f". Valid: {p.valid}" if p.valid != SEE_THE_PROBLEM else "")
                + f". Fix: set {p.path} in the args of {component} {name!r} in your program",
            }
            for p in problems
        ]
        lines = "\n".join(f"  - {e['property_path']}: {e['reason']}" for e in self.errors)
        super().__init__(f"invalid args for {component} {name!r}:\n{lines}")
        self.header = f"invalid args for {component} {name!r}"


def _refused(component: str, name: str, error: InvalidArgumentsError, args: type) -> ArgsError:
    """An ``InvalidArgumentsError`` of the Args (Python spelling) as an ``ArgsError``."""
    if not error.findings:  # a resource's own refusal, not its Args'
        return ArgsError(component, name, [ConfigProblem("", str(error), SEE_THE_PROBLEM)])
    return ArgsError(component, name, config_problems(args, error.findings))


_PLATFORMS: dict[str, Platform] = {}
"""This process's platforms by their component's name (the last part of its URN)."""


def _resolved_now(value: Any) -> Any:
    """A value that is already known: plain, or an Output the provider resolved on receipt."""
    if isinstance(value, pulumi.Output):
        data = value._data
        if isinstance(data, asyncio.Future) and data.done() and data.result().is_known:
            return data.result().value
        return None
    return value


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
        problems: list[ConfigProblem] = []
        platform_args = from_config(
            TrainingPlatformArgs, yaml_spelling(args, _PLATFORM_ARGS), "", problems
        )
        if problems:
            raise ArgsError("TrainingPlatform", name, [_unrooted(p) for p in problems])
        super().__init__(f"{PACKAGE}:index:TrainingPlatform", name, None, opts)
        try:
            platform = Platform(name, platform_args, pulumi.ResourceOptions(parent=self))
        except InvalidArgumentsError as error:
            raise _refused("TrainingPlatform", name, error, TrainingPlatformArgs) from None
        self.environment = pulumi.Output.from_input(platform.environment)
        self.project = pulumi.Output.from_input(platform.project)
        self.region = pulumi.Output.from_input(platform.region)
        self.bucket_url = platform.bucket_url
        _PLATFORMS[name] = platform
        self.register_outputs({})


def _unrooted(problem: ConfigProblem) -> ConfigProblem:
    return dataclasses.replace(problem, path=problem.path.lstrip("."))


class _Job(pulumi.ComponentResource):
    _args: type
    _kind: str

    job_name: pulumi.Output[str]
    """``projects/P/locations/L/<kind>/ID`` (local: ``local/...``)."""
    state: pulumi.Output[str]
    """``SUCCEEDED``, ``FAILED``, ``RUNNING`` ... when the job was created or refreshed."""
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
        urn = _resolved_now(args.get("platform"))
        platform = _PLATFORMS.get(str(urn).rpartition("::")[2])
        if platform is None:
            raise ArgsError(
                kind,
                name,
                [
                    ConfigProblem(
                        "platform",
                        f"{urn!r} is not a TrainingPlatform of this program",
                        "the urn of a vertex-training TrainingPlatform (platform: "
                        "${platform.urn} in YAML, platform.urn in TypeScript and Go)",
                    )
                ],
            )
        acknowledged = platform.acknowledged_hardware_checks
        placed, found = job_problems((declaration,), facts_of(platform))
        errors = [
            ConfigProblem(path.removeprefix("jobs[0]").lstrip("."), f.message, SEE_THE_PROBLEM)
            for path, f in found
            if f.severity == "error" and f.check not in acknowledged
        ]
        if errors:
            raise ArgsError(kind, name, errors)
        super().__init__(f"{PACKAGE}:index:{kind}", name, None, opts)
        for path, finding in found:
            if finding.severity == "warning" or finding.check in acknowledged:
                where = path.removeprefix("jobs[0]").lstrip(".")
                pulumi.log.warn(f"{where}: {finding.message}", resource=self)
        resource = self._resource()
        try:
            job = resource(
                name,
                placed[0].args.on(platform),
                pulumi.ResourceOptions(parent=self, depends_on=[platform]),
            )
        except InvalidArgumentsError as error:
            raise _refused(kind, name, error, self._args) from None
        self.job_name = job.job_name
        self.state = job.state
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


def _job_args(cls: type) -> Any:
    """A job's args: the fields of its Args, and its platform by the platform's URN."""
    fields = args_type(cls, _NO_PLATFORM)
    platform: Any = pulumi.Input[str]  # type: ignore[misc]
    return type(cls.__name__, (fields,), {"__annotations__": {"platform": platform}})


_PLATFORM_ARGS = args_type(TrainingPlatformArgs)
_with_args(TrainingPlatform, _PLATFORM_ARGS)
_with_args(CustomJob, _job_args(CustomJobArgs))
_with_args(HyperparameterTuningJob, _job_args(HyperparameterTuningJobArgs))
HyperparameterTuningJob.__annotations__["best_trial"] = output_type(TrialResult)
HyperparameterTuningJob.__annotations__["trials"] = output_type(list[TrialResult])

COMPONENTS: list[type[pulumi.ComponentResource]] = [
    TrainingPlatform,
    CustomJob,
    HyperparameterTuningJob,
]
