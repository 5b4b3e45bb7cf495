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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.spec import (
    CategoricalParameterSpec,
    ConditionalParameterSpec,
    ContainerSpec,
    CustomJobSpec,
    DiscreteParameterSpec,
    DiskSpec,
    DoubleParameterSpec,
    EarlyStopping,
    IntegerParameterSpec,
    JobKind,
    JobSpec,
    MachineSpec,
    MeasurementSelection,
    MetricGoal,
    MetricSpec,
    ParameterSpec,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    SpecIssue,
    StudySpec,
    TuningJobSpec,
    WorkerPoolSpec,
    spec_issues,
)

WORKLOADS = ("cassava", "horses_or_humans")
"""What ``python -m trainer.task --workload ...`` runs (the two codelabs)."""

PLACEHOLDER_IMAGE = "placeholder/trainer@sha256:" + "0" * 64
PLACEHOLDER_BUCKET = "gs://placeholder-bucket"
PLACEHOLDER_SERVICE_ACCOUNT = "training@placeholder.iam.gserviceaccount.com"
"""Stand-ins for what the environment provides, to validate a declaration before any
resource exists (the real values are Outputs)."""

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
    boot_disk_type: str = "pd-ssd"
    boot_disk_size_gb: int = 100
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

    def to_spec(self) -> ParameterSpec:
        scale = ScaleType[self.scale.name]
        children = tuple(c.to_spec() for c in self.conditional)
        if self.type == "double":
            assert self.min is not None and self.max is not None
            return DoubleParameterSpec(self.parameter_id, self.min, self.max, scale, children)
        if self.type == "integer":
            assert self.min is not None and self.max is not None
            return IntegerParameterSpec(
                self.parameter_id, int(self.min), int(self.max), scale, children
            )
        if self.type == "discrete":
            return DiscreteParameterSpec(
                self.parameter_id, tuple(float(v) for v in self.values), scale, children
            )
        return CategoricalParameterSpec(
            self.parameter_id, tuple(str(v) for v in self.values), children
        )


class ConditionalDeclaration(_Model):
    """A child parameter, searched only when its parent takes one of ``parentValues``."""

    parent_values: tuple[float | str, ...]
    parameter: ParameterDeclaration

    def to_spec(self) -> ConditionalParameterSpec:
        return ConditionalParameterSpec(self.parameter.to_spec(), self.parent_values)


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

    def to_spec(self) -> StudySpec:
        return StudySpec(
            metrics=(MetricSpec(self.metric, MetricGoal[self.goal.upper()]),),
            parameters=tuple(p.to_spec() for p in self.parameters),
            algorithm=SearchAlgorithm[self.algorithm.upper()],
            measurement_selection=MeasurementSelection[self.measurement_selection.upper()],
            early_stopping=EarlyStopping[self.early_stopping.upper()],
            early_stopping_uses_elapsed_duration=self.early_stopping_uses_elapsed_duration,
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
    timeout_seconds: int | None = None
    restart_job_on_worker_restart: bool = False
    scheduling_strategy: Literal["standard", "spot", "flex_start"] = "standard"
    max_wait_seconds: int | None = None
    persistent_resource_id: str | None = None
    enable_web_access: bool = False
    tensorboard: str | None = None
    kms_key_name: str | None = None
    # Tuning jobs only.
    study: StudyDeclaration | None = None
    max_trial_count: int | None = None
    parallel_trial_count: int | None = None
    max_failed_trial_count: int = 0
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

    def _pool(self, pool: PoolDeclaration | None, image: str) -> WorkerPoolSpec | None:
        if pool is None:
            return None
        env = {**self.env, **pool.env}
        return WorkerPoolSpec(
            machine=MachineSpec(pool.machine_type, pool.accelerator_type, pool.accelerator_count),
            container=ContainerSpec(
                image_uri=pool.image or image,
                command=pool.command,
                args=pool.args if pool.args is not None else self.trainer_args(),
                env=tuple(sorted(env.items())),
            ),
            replica_count=pool.replica_count,
            disk=DiskSpec(pool.boot_disk_type, pool.boot_disk_size_gb),
        )

    def to_spec(
        self,
        *,
        image: str,
        bucket_url: str,
        service_account: str | None,
        labels: dict[str, str] | None = None,
    ) -> JobSpec:
        """The spec this declaration means in an environment with these handles."""
        pools = [
            self._pool(p, image)
            for p in (self.chief, self.workers, self.parameter_servers, self.evaluator)
        ]
        while pools and pools[-1] is None:
            pools.pop()
        display_name = self.display_name or self.name
        all_labels = {**(labels or {}), **self.labels}
        custom = CustomJobSpec(
            display_name=display_name,
            worker_pools=tuple(pools),
            base_output_directory=self.output_dir or f"{bucket_url.rstrip('/')}/jobs/{self.name}",
            service_account=self.service_account or service_account,
            network=self.network,
            labels=tuple(all_labels.items()) if self.kind == "custom" else (),
            timeout_seconds=self.timeout_seconds,
            restart_job_on_worker_restart=self.restart_job_on_worker_restart,
            scheduling_strategy=SchedulingStrategy[self.scheduling_strategy.upper()],
            max_wait_seconds=self.max_wait_seconds,
            persistent_resource_id=self.persistent_resource_id,
            enable_web_access=self.enable_web_access,
            tensorboard=self.tensorboard,
            kms_key_name=self.kms_key_name if self.kind == "custom" else None,
        )
        if self.kind == "custom":
            return custom
        assert self.study and self.max_trial_count and self.parallel_trial_count
        return TuningJobSpec(
            display_name=display_name,
            trial_job=custom,
            study=self.study.to_spec(),
            max_trial_count=self.max_trial_count,
            parallel_trial_count=self.parallel_trial_count,
            max_failed_trial_count=self.max_failed_trial_count,
            labels=tuple(all_labels.items()),
            kms_key_name=self.kms_key_name,
        )

    def issues(self, *, region: str | None, remote: bool) -> list[SpecIssue]:
        """Validate with stand-ins for what the environment will provide."""
        spec = self.to_spec(
            image=PLACEHOLDER_IMAGE,
            bucket_url=PLACEHOLDER_BUCKET if remote else "/placeholder/bucket",
            service_account=PLACEHOLDER_SERVICE_ACCOUNT if remote else None,
            labels={"stack": "placeholder"},
        )
        return spec_issues(spec, region=region, remote=remote)


def job_problems(
    jobs: tuple[JobDeclaration, ...], *, region: str | None, remote: bool
) -> list[str]:
    """Every problem of the declared jobs, each naming the job and the spec field."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, job in enumerate(jobs):
        where = f"jobs[{index}] ({job.name})"
        if job.name in seen:
            problems.append(f"{where}: name repeats; job names are unique in a stack")
        seen.add(job.name)
        problems.extend(f"{where}: {issue}" for issue in job.issues(region=region, remote=remote))
    return problems


def parse_jobs(raw: Any) -> tuple[JobDeclaration, ...]:
    """Validate the raw ``jobs`` config value (a list of mappings)."""
    if raw is None or raw == "":
        return ()
    if not isinstance(raw, list | tuple):
        raise ValueError(f"jobs must be a list of job mappings, got {type(raw).__name__}")
    return tuple(JobDeclaration.model_validate(item) for item in raw)


ParameterDeclaration.model_rebuild()

__all__ = [
    "PLACEHOLDER_IMAGE",
    "WORKLOADS",
    "ConditionalDeclaration",
    "JobDeclaration",
    "ParameterDeclaration",
    "PoolDeclaration",
    "StudyDeclaration",
    "job_problems",
    "parse_jobs",
]
