"""Jobs declared in stack config (``vertex-training:jobs``), validated into specs.

A platform team adds a job by adding an entry to a stack file, without code::

    vertex-training:jobs:
      - name: cassava-mwms                 # resource name; also the display name
        workload: cassava                  # trainer: --workload cassava
        args: [--epochs, "5", --data, tfds]
        chief: &v100
          {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_V100, acceleratorCount: 1}
        workers: *v100                     # 1 more replica (replicaCount defaults to 1)
      - name: horses-humans-tuning
        kind: tuning
        workload: horses_or_humans
        chief: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_V100, acceleratorCount: 2}
        maxTrialCount: 6
        parallelTrialCount: 2
        study:
          metric: accuracy
          goal: maximize
          parameters:
            - {parameterId: learning_rate, type: double, min: 0.001, max: 1, scale: log}
            - {parameterId: momentum, type: double, min: 0, max: 1}
            - {parameterId: num_units, type: discrete, values: [64, 128, 512]}

Keys are camelCase like every other config key. What the environment provides is not
declared: the image (by digest), the output directory (``<bucket>/jobs/<name>``), the
training service account, the stack's labels and where the job runs (Vertex on cloud
stacks, this machine on the local stack). ``to_spec`` fills those in.

The project schema in ``Pulumi.yaml`` cannot type a list of objects (pulumi/pulumi#11321),
so these models are the schema: unknown keys are errors that name the key.
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from vertex_training.jobs import api
from vertex_training.jobs.api import DEFAULT_METRIC as HYPERTUNE_METRIC_TAG
from vertex_training.jobs.api import merge_fields
from vertex_training.jobs.finding import Finding
from vertex_training.jobs.model import JobKind
from vertex_training.jobs.placeholders import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_IMAGE,
    PLACEHOLDER_SERVICE_ACCOUNT,
)

WORKLOADS = ("cassava", "horses_or_humans")
"""What ``python -m trainer.task --workload ...`` runs (the two codelabs)."""

_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class PoolDeclaration(_Model):
    """One worker pool: a machine, its accelerators, how many replicas, and overrides."""

    machine_type: str = "n1-standard-4"
    accelerator_type: str | None = None
    accelerator_count: int = 0
    replica_count: int = 1
    boot_disk_type: str | None = None
    """None: the service's default disk for the machine (it differs per family)."""
    boot_disk_size_gb: int | None = None
    image: str | None = None
    """Default: the stack's trainer image, by digest."""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] | None = None
    """Default: the job's ``--workload`` and ``args``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the job's ``env``."""


class ScaleName(enum.StrEnum):
    LINEAR = "linear"
    LOG = "log"
    REVERSE_LOG = "reverse_log"


class ParameterDeclaration(_Model):
    """A hyperparameter; ``parameterId`` is the trainer flag (``--<id>=<value>``)."""

    parameter_id: str
    type: Literal["double", "integer", "discrete", "categorical"]
    min: float | None = None
    max: float | None = None
    scale: ScaleName = ScaleName.LINEAR
    values: tuple[float | str, ...] = ()
    conditional: tuple[ConditionalDeclaration, ...] = ()

    @model_validator(mode="after")
    def _fields_fit_type(self) -> ParameterDeclaration:
        ranged = self.type in ("double", "integer")
        if ranged and (self.min is None or self.max is None):
            raise ValueError(f"parameter {self.parameter_id!r}: type {self.type} needs min and max")
        if ranged and self.values:
            raise ValueError(
                f"parameter {self.parameter_id!r}: type {self.type} takes min/max, not values"
            )
        if not ranged and (self.min is not None or self.max is not None):
            raise ValueError(
                f"parameter {self.parameter_id!r}: type {self.type} takes values, not min/max"
            )
        if self.type == "integer" and not (
            float(self.min or 0).is_integer() and float(self.max or 0).is_integer()
        ):
            raise ValueError(
                f"parameter {self.parameter_id!r}: integer min and max must be whole numbers"
            )
        if self.type == "discrete" and any(isinstance(v, str) for v in self.values):
            raise ValueError(
                f"parameter {self.parameter_id!r}: discrete values are numbers; "
                "use type categorical for strings"
            )
        if self.type == "categorical" and self.scale is not ScaleName.LINEAR:
            raise ValueError(
                f"parameter {self.parameter_id!r}: categorical parameters have no scale"
            )
        return self

    def to_parameter(self) -> api.Parameter:
        """The typed parameter this declares."""
        conditional: dict[Any, list[api.Parameter]] = {}
        for child in self.conditional:
            for value in child.parent_values:
                conditional.setdefault(_parent_value(self.type, value), []).append(
                    child.parameter.to_parameter()
                )
        scale = cast(api.Scale, self.scale.value)
        if self.type == "double":
            return api.DoubleParameter(
                self.parameter_id, float(self.min or 0), float(self.max or 0), scale=scale
            )
        if self.type == "integer":
            return api.IntegerParameter(
                self.parameter_id,
                int(self.min or 0),
                int(self.max or 0),
                scale=scale,
                conditional=conditional,
            )
        if self.type == "discrete":
            return api.DiscreteParameter(
                self.parameter_id,
                [float(v) for v in self.values],
                scale=scale,
                conditional=conditional,
            )
        return api.CategoricalParameter(
            self.parameter_id, [str(v) for v in self.values], conditional=conditional
        )


def _parent_value(parent_type: str, value: float | str) -> Any:
    if parent_type == "categorical":
        return str(value)
    if parent_type == "integer":
        return int(float(value))
    return float(value)


class ConditionalDeclaration(_Model):
    """A child parameter, searched only when its parent takes one of ``parentValues``."""

    parent_values: tuple[float | str, ...]
    parameter: ParameterDeclaration


class StudyDeclaration(_Model):
    metric: str = HYPERTUNE_METRIC_TAG
    """The ``hyperparameter_metric_tag`` the trainer reports (cloudml-hypertune)."""
    goal: Literal["maximize", "minimize"] = "maximize"
    parameters: tuple[ParameterDeclaration, ...]
    algorithm: Literal["bayesian", "grid", "random"] = "bayesian"
    """``bayesian`` is the service default (the codelab's ``search_algorithm=None``)."""
    measurement_selection: Literal["best", "last"] = "best"
    early_stopping: Literal["none", "median", "decay_curve", "convex"] = "none"
    early_stopping_uses_elapsed_duration: bool = False

    def to_study(self) -> api.Study:
        stopping: api.EarlyStopping | None = None
        elapsed = self.early_stopping_uses_elapsed_duration
        if self.early_stopping == "median":
            stopping = api.MedianStopping(use_elapsed_duration=elapsed)
        elif self.early_stopping == "decay_curve":
            stopping = api.DecayCurveStopping(use_elapsed_duration=elapsed)
        elif self.early_stopping == "convex":
            stopping = api.ConvexStopping(use_elapsed_duration=elapsed)
        return api.Study(
            parameters=[p.to_parameter() for p in self.parameters],
            metrics=[api.Metric(self.metric, self.goal)],
            algorithm=self.algorithm,
            measurement_selection=self.measurement_selection,
            early_stopping=stopping,
        )


class JobDeclaration(_Model):
    """One job in stack config: a CustomJob, or a tuning job over trials of one."""

    name: str
    """Pulumi resource name and (unless ``displayName``) the Vertex display name."""
    kind: Literal["custom", "tuning"] = "custom"
    display_name: str | None = None
    workload: Literal["cassava", "horses_or_humans"] | None = None
    """Prepends ``--workload <workload>`` to ``args``; None for a container with its own
    arguments."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    chief: PoolDeclaration = Field(default_factory=PoolDeclaration)
    """Worker pool 0: exactly one replica."""
    workers: PoolDeclaration | None = None
    parameter_servers: PoolDeclaration | None = None
    evaluator: PoolDeclaration | None = None
    output_dir: str | None = None
    """Default ``<bucket>/jobs/<name>`` (AIP_MODEL_DIR is its ``model/``)."""
    service_account: str | None = None
    """Default: the stack's training service account."""
    network: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float | None = None
    restart_job_on_worker_restart: bool = False
    scheduling_strategy: Literal["standard", "spot", "flex_start"] = "standard"
    max_wait_seconds: float | None = None
    persistent_resource_id: str | None = None
    enable_web_access: bool = False
    tensorboard: str | None = None
    kms_key_name: str | None = None
    extra_fields: dict[str, Any] = Field(default_factory=dict)
    """Any other Vertex field, merged into the job's REST body (the API's camelCase names,
    e.g. ``{jobSpec: {enableDashboardAccess: true}}``); checked by the real protos."""
    # Tuning jobs only.
    study: StudyDeclaration | None = None
    max_trial_count: int | None = None
    parallel_trial_count: int | None = None
    max_failed_trial_count: int = 0
    expected_duration_seconds: Annotated[float, Field(gt=0)] | None = None
    """How long one run (a study: one trial) is expected to take: cost estimates use it,
    else the timeout (an upper bound)."""
    # How `pulumi up` waits (changing these never starts a new run).
    wait: bool = True
    """Wait for the job to end, like the codelab's ``run()``."""
    wait_timeout_seconds: Annotated[float, Field(gt=0)] = 24 * 3600
    poll_interval_seconds: Annotated[float, Field(gt=0)] = 30

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"name {value!r} invalid: 1-63 lowercase letters, digits and '-', starting "
                "with a letter (it names the resource and the job's output directory)"
            )
        return value

    @model_validator(mode="after")
    def _kind_fields(self) -> JobDeclaration:
        tuning_fields = {
            "study": self.study,
            "maxTrialCount": self.max_trial_count,
            "parallelTrialCount": self.parallel_trial_count,
        }
        if self.kind == "tuning":
            missing = [k for k, v in tuning_fields.items() if v is None]
            if missing:
                raise ValueError(f"job {self.name!r}: a tuning job needs {', '.join(missing)}")
        else:
            extra = [k for k, v in tuning_fields.items() if v is not None]
            if extra:
                raise ValueError(
                    f"job {self.name!r}: {', '.join(extra)} only apply to kind: tuning"
                )
        return self

    @property
    def job_kind(self) -> JobKind:
        return JobKind.HYPERPARAMETER_TUNING_JOB if self.kind == "tuning" else JobKind.CUSTOM_JOB

    def trainer_args(self) -> tuple[str, ...]:
        return (("--workload", self.workload) if self.workload else ()) + self.args

    def _pool(self, pool: PoolDeclaration | None) -> api.WorkerPool | None:
        if pool is None:
            return None
        # A count without a type stays in the body, for the rules to refuse by its key.
        loose_count = (
            {"machineSpec": {"acceleratorCount": pool.accelerator_count}}
            if pool.accelerator_type is None and pool.accelerator_count
            else {}
        )
        return api.WorkerPool(
            machine_type=pool.machine_type,
            accelerator=(
                api.Accelerator(pool.accelerator_type, pool.accelerator_count)
                if pool.accelerator_type is not None
                else None
            ),
            replica_count=pool.replica_count,
            image=pool.image,
            command=list(pool.command) if pool.command else None,
            args=list(pool.args if pool.args is not None else self.trainer_args()),
            env=dict(sorted({**self.env, **pool.env}.items())),
            boot_disk_type=pool.boot_disk_type,
            boot_disk_size_gb=pool.boot_disk_size_gb,
            extra_fields=loose_count,
        )

    def to_args(self) -> api.CustomJobArgs | api.HyperparameterTuningJobArgs:
        """The public Args this declaration means (without a platform: ``.on(platform)``)."""
        chief = self._pool(self.chief)
        assert chief is not None
        run: dict[str, Any] = {
            "chief": chief,
            "workers": self._pool(self.workers),
            "parameter_servers": self._pool(self.parameter_servers),
            "evaluator": self._pool(self.evaluator),
            "service_account": self.service_account,
            "network": self.network,
            "base_output_directory": self.output_dir,
            "tensorboard": self.tensorboard,
            "enable_web_access": self.enable_web_access,
            "persistent_resource_id": self.persistent_resource_id,
        }
        scheduling = api.Scheduling(
            strategy=(
                None if self.scheduling_strategy == "standard" else self.scheduling_strategy.upper()  # type: ignore[arg-type]
            ),
            timeout_seconds=self.timeout_seconds,
            max_wait_seconds=self.max_wait_seconds,
            restart_job_on_worker_restart=self.restart_job_on_worker_restart,
        )
        if scheduling != api.Scheduling():
            run["scheduling"] = scheduling
        job: dict[str, Any] = {
            "display_name": self.display_name or self.name,
            "labels": {"job": self.name, **self.labels},
            "kms_key_name": self.kms_key_name,
            "extra_fields": self.extra_fields,
            "wait": self.wait,
            "wait_timeout_seconds": self.wait_timeout_seconds,
            "poll_interval_seconds": self.poll_interval_seconds,
            "expected_duration_seconds": self.expected_duration_seconds,
        }
        if self.kind == "custom":
            return api.CustomJobArgs(**run, **job)
        # _kind_fields made sure these are set; 0 counts are the rules' to refuse.
        assert self.study is not None
        assert self.max_trial_count is not None and self.parallel_trial_count is not None
        return api.HyperparameterTuningJobArgs(
            trial=api.TrialJob(**run),
            study=self.study.to_study(),
            max_trial_count=self.max_trial_count,
            parallel_trial_count=self.parallel_trial_count,
            max_failed_trial_count=self.max_failed_trial_count,
            **job,
        )

    def to_body(
        self,
        *,
        image: str,
        bucket_url: str | None,
        service_account: str | None,
        labels: dict[str, str] | None = None,
        region: str = "us-central1",
        local: bool = False,
    ) -> dict[str, Any]:
        """The Vertex REST body in an environment with these handles (what the public
        API builds from ``to_args``)."""
        return api.job_body(
            self.to_args(),
            self._context(
                image=image,
                bucket_url=bucket_url,
                service_account=service_account,
                labels=labels or {},
                region=region,
                local=local,
            ),
        )

    def _context(
        self,
        *,
        image: str,
        bucket_url: str | None,
        service_account: str | None,
        labels: dict[str, str],
        region: str,
        local: bool,
        strict: bool = False,
    ) -> api.JobContext:
        """The environment's handles as a job context (the project never shows in a body)."""
        return api.JobContext(
            kind=self.job_kind,
            name=self.name,
            region=region,
            project="placeholder",
            local=local,
            default_image=image,
            bucket_url=bucket_url,
            service_account=service_account,
            labels=labels,
            strict=strict,
        )

    def findings(self, *, region: str | None, remote: bool, strict: bool) -> list[Finding]:
        """Validate with stand-ins for what the environment will provide; paths are the
        body's API paths (``config_path`` maps them to this declaration's keys)."""
        context = self._context(
            image=PLACEHOLDER_IMAGE,
            bucket_url=PLACEHOLDER_BUCKET if remote else "/placeholder/bucket",
            service_account=PLACEHOLDER_SERVICE_ACCOUNT if remote else None,
            labels={"stack": "placeholder"},
            region=region or "us-central1",
            local=not remote,
            strict=strict,
        )
        return api.body_findings(context, api.job_body(self.to_args(), context))


_POOL_KEYS = ("chief", "workers", "parameterServers", "evaluator")
_POOL_FIELD = re.compile(r"workerPoolSpecs\[(\d)\](?:\.(\w+)(?:\.(\w+))?)?")
_POOL_KEY_OF = {
    "machineSpec.machineType": "machineType",
    "machineSpec.acceleratorType": "acceleratorType",
    "machineSpec.acceleratorCount": "acceleratorCount",
    "replicaCount": "replicaCount",
    "containerSpec.imageUri": "image",
    "containerSpec.env": "env",
    "containerSpec.command": "command",
    "containerSpec.args": "args",
    "diskSpec.bootDiskType": "bootDiskType",
    "diskSpec.bootDiskSizeGb": "bootDiskSizeGb",
}
_JOB_SPEC_KEY_OF = {
    "scheduling.timeout": "timeoutSeconds",
    "scheduling.maxWaitDuration": "maxWaitSeconds",
    "scheduling.strategy": "schedulingStrategy",
    "baseOutputDirectory.outputUriPrefix": "outputDir",
    "baseOutputDirectory": "outputDir",
}


def config_path(api_path: str) -> str | None:
    """The declaration key an API path comes from (``jobSpec.workerPoolSpecs[0]
    .machineSpec.acceleratorCount`` -> ``chief.acceleratorCount``); None if none does."""
    head, _, rest = api_path.partition(".")
    if head in ("jobSpec", "trialJobSpec"):
        pool = _POOL_FIELD.match(rest)
        if pool is not None:
            index, first, second = pool.groups()
            inner = ".".join(part for part in (first, second) if part)
            key = _POOL_KEY_OF.get(inner)
            return f"{_POOL_KEYS[int(index)]}.{key}" if key else _POOL_KEYS[int(index)]
        return _JOB_SPEC_KEY_OF.get(rest, rest.split(".")[0] or None)
    if head == "studySpec":
        if rest.startswith("metrics"):
            return "study.goal" if rest.endswith(".goal") else "study.metric"
        return f"study.{rest}".rstrip(".")
    if head == "encryptionSpec":
        return "kmsKeyName"
    return api_path or None


def job_problems(
    jobs: tuple[JobDeclaration, ...], *, region: str | None, remote: bool, strict: bool = False
) -> list[tuple[str, Finding]]:
    """Every finding of the declared jobs, each with the config path it comes from
    (``jobs[1].chief.acceleratorCount``), errors and warnings alike."""
    out: list[tuple[str, Finding]] = []
    seen: set[str] = set()
    for index, job in enumerate(jobs):
        where = f"jobs[{index}]"
        if job.name in seen:
            out.append(
                (
                    f"{where}.name",
                    Finding("name", f"{job.name!r} repeats; job names are unique", "error"),
                )
            )
        seen.add(job.name)
        for finding in job.findings(region=region, remote=remote, strict=strict):
            extra = api.extra_keys(job.extra_fields, finding.path)
            key = "extraFields." + ".".join(extra) if extra else config_path(finding.path)
            out.append((f"{where}.{key}" if key else where, finding))
    return out


ParameterDeclaration.model_rebuild()

__all__ = [
    "PLACEHOLDER_IMAGE",
    "WORKLOADS",
    "ConditionalDeclaration",
    "JobDeclaration",
    "ParameterDeclaration",
    "PoolDeclaration",
    "StudyDeclaration",
    "config_path",
    "job_problems",
    "merge_fields",
]
