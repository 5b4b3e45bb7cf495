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
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.model import JobKind
from vertex_training.jobs.rules.hardware import Finding
from vertex_training.jobs.rules.job import job_findings
from vertex_training.jobs.view import read_view

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

    def to_body(self) -> dict[str, Any]:
        """The ``StudySpec.ParameterSpec`` this declares, in REST JSON."""
        body: dict[str, Any] = {"parameterId": self.parameter_id}
        if self.type == "double":
            body["doubleValueSpec"] = {"minValue": self.min, "maxValue": self.max}
        elif self.type == "integer":
            body["integerValueSpec"] = {
                "minValue": str(int(self.min or 0)),
                "maxValue": str(int(self.max or 0)),
            }
        elif self.type == "discrete":
            body["discreteValueSpec"] = {"values": [float(v) for v in self.values]}
        else:
            body["categoricalValueSpec"] = {"values": [str(v) for v in self.values]}
        if self.type != "categorical":
            body["scaleType"] = _SCALES[self.scale]
        if self.conditional:
            body["conditionalParameterSpecs"] = [c.to_body(self.type) for c in self.conditional]
        return body


_SCALES = {
    ScaleName.LINEAR: "UNIT_LINEAR_SCALE",
    ScaleName.LOG: "UNIT_LOG_SCALE",
    ScaleName.REVERSE_LOG: "UNIT_REVERSE_LOG_SCALE",
}


class ConditionalDeclaration(_Model):
    """A child parameter, searched only when its parent takes one of ``parentValues``."""

    parent_values: tuple[float | str, ...]
    parameter: ParameterDeclaration

    def to_body(self, parent_type: str) -> dict[str, Any]:
        body: dict[str, Any] = {"parameterSpec": self.parameter.to_body()}
        if parent_type == "categorical":
            body["parentCategoricalValues"] = {"values": [str(v) for v in self.parent_values]}
        elif parent_type == "integer":
            body["parentIntValues"] = {"values": [str(_whole(v)) for v in self.parent_values]}
        else:
            body["parentDiscreteValues"] = {"values": [_number(v) for v in self.parent_values]}
        return body


def _whole(value: float | str) -> float | int | str:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _number(value: float | str) -> float | str:
    return float(value) if isinstance(value, int | float) else value


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

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "metrics": [{"metricId": self.metric, "goal": self.goal.upper()}],
            "parameters": [p.to_body() for p in self.parameters],
        }
        if self.algorithm != "bayesian":  # unset is the service's Bayesian search
            body["algorithm"] = f"{self.algorithm.upper()}_SEARCH"
        body["measurementSelectionType"] = f"{self.measurement_selection.upper()}_MEASUREMENT"
        stopping = {
            "median": "medianAutomatedStoppingSpec",
            "decay_curve": "decayCurveStoppingSpec",
            "convex": "convexAutomatedStoppingSpec",
        }.get(self.early_stopping)
        if stopping is not None:
            body[stopping] = (
                {"useElapsedDuration": True} if self.early_stopping_uses_elapsed_duration else {}
            )
        return body


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

    def _pool(self, pool: PoolDeclaration | None, image: str) -> dict[str, Any]:
        if pool is None:
            return {}  # a placeholder before a later pool
        env = {**self.env, **pool.env}
        machine: dict[str, Any] = {"machineType": pool.machine_type}
        if pool.accelerator_type is not None:
            machine["acceleratorType"] = pool.accelerator_type
            machine["acceleratorCount"] = pool.accelerator_count
        container: dict[str, Any] = {
            "imageUri": pool.image or image,
            "args": list(pool.args if pool.args is not None else self.trainer_args()),
        }
        if pool.command:
            container["command"] = list(pool.command)
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in sorted(env.items())]
        body: dict[str, Any] = {
            "machineSpec": machine,
            "replicaCount": str(pool.replica_count),
            "containerSpec": container,
        }
        disk = {
            k: v
            for k, v in (
                ("bootDiskType", pool.boot_disk_type),
                ("bootDiskSizeGb", pool.boot_disk_size_gb),
            )
            if v is not None
        }
        if disk:
            body["diskSpec"] = disk
        return body

    def to_body(
        self,
        *,
        image: str,
        bucket_url: str,
        service_account: str | None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The Vertex REST body this declaration means in an environment with these
        handles, with ``extraFields`` merged in."""
        pools = [
            self._pool(p, image)
            for p in (self.chief, self.workers, self.parameter_servers, self.evaluator)
        ]
        while pools and not pools[-1]:
            pools.pop()
        spec: dict[str, Any] = {
            "workerPoolSpecs": pools,
            "baseOutputDirectory": {
                "outputUriPrefix": self.output_dir or f"{bucket_url.rstrip('/')}/jobs/{self.name}"
            },
        }
        scheduling: dict[str, Any] = {}
        if self.timeout_seconds is not None:
            scheduling["timeout"] = _duration(self.timeout_seconds)
        if self.restart_job_on_worker_restart:
            scheduling["restartJobOnWorkerRestart"] = True
        if self.scheduling_strategy != "standard":
            scheduling["strategy"] = self.scheduling_strategy.upper()
        if self.max_wait_seconds is not None:
            scheduling["maxWaitDuration"] = _duration(self.max_wait_seconds)
        if scheduling:
            spec["scheduling"] = scheduling
        for key, value in (
            ("serviceAccount", self.service_account or service_account),
            ("network", self.network),
            ("persistentResourceId", self.persistent_resource_id),
            ("tensorboard", self.tensorboard),
        ):
            if value:
                spec[key] = value
        if self.enable_web_access:
            spec["enableWebAccess"] = True
        body: dict[str, Any] = {
            "displayName": self.display_name or self.name,
            "labels": {**(labels or {}), **self.labels},
        }
        if self.kms_key_name:
            body["encryptionSpec"] = {"kmsKeyName": self.kms_key_name}
        if self.kind == "custom":
            body["jobSpec"] = spec
        else:
            # _kind_fields made sure these are set; 0 counts are the rules' to refuse.
            assert self.study is not None
            body.update(
                studySpec=self.study.to_body(),
                maxTrialCount=self.max_trial_count,
                parallelTrialCount=self.parallel_trial_count,
                trialJobSpec=spec,
            )
            if self.max_failed_trial_count:
                body["maxFailedTrialCount"] = self.max_failed_trial_count
        return merge_fields(body, self.extra_fields)

    def findings(self, *, region: str | None, remote: bool, strict: bool) -> list[Finding]:
        """Validate with stand-ins for what the environment will provide; paths are the
        body's API paths (``config_path`` maps them to this declaration's keys)."""
        body = self.to_body(
            image=PLACEHOLDER_IMAGE,
            bucket_url=PLACEHOLDER_BUCKET if remote else "/placeholder/bucket",
            service_account=PLACEHOLDER_SERVICE_ACCOUNT if remote else None,
            labels={"stack": "placeholder"},
        )
        view, unreadable = read_view(self.job_kind, body)
        if unreadable or view is None:
            return unreadable
        return job_findings(view, region=region, remote=remote, strict=strict)


def _duration(seconds: float) -> str:
    """A protobuf Duration's JSON: ``3600s``, ``1.5s`` (fractions kept, never rounded)."""
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def merge_fields(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` merged into ``body``: mappings merge key by key, anything else replaces."""
    out = dict(body)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = merge_fields(dict(current), value)
        else:
            out[key] = value
    return out


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
    return head or None


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
            key = config_path(finding.path)
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
