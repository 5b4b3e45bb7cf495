"""Specs <-> the Vertex REST (camelCase JSON) form of CustomJob and HyperparameterTuningJob.

The Pulumi program and the provider carry every job spec in this form, so it is written
here in plain Python: importing ``google.cloud.aiplatform_v1`` loads every Vertex service
(~0.6 s), a price the program must not pay just to build a dict. The output is exactly
what ``json_format.MessageToDict`` makes of the ``aiplatform_v1`` message (camelCase
names, int64 as strings, durations as ``"Ns"``, enum names, proto3 defaults omitted);
``vertex_training.jobs.convert`` builds and reads messages through these dicts, and the property
tests hold the two forms equal for every valid spec.

``spec_from_json`` reads what ``json_format.ParseDict`` accepts (camelCase or proto field
names, ``null`` as absent, numbers as JSON numbers or strings, enum names or numbers) and
refuses a field the Vertex message does not have, naming it (``SpecJsonError``). Known
Vertex fields that a spec cannot express (``name``, ``state``, ``trials``...) are passed
over unread, as ``convert.from_proto`` always did.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

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
    StudySpec,
    TuningJobSpec,
    WorkerPoolSpec,
)


class SpecJsonError(ValueError):
    """A JSON body that is not a Vertex job: an unknown field or a value of the wrong type.

    The REST counterpart of ``json_format.ParseError``; the message names the field path.
    """


class ConversionError(ValueError):
    """A Vertex job this project cannot express as a spec."""


# ------------------------------------------------------------------ the Vertex schema
# Field names (json names, in field-number order) of every ``google.cloud.aiplatform.v1``
# message this module reads, keyed by the name under that package. A test holds this
# table equal to the pinned aiplatform descriptors, so a field added upstream shows up.

KNOWN_FIELDS: dict[str, tuple[str, ...]] = {
    "CustomJob": (
        "name",
        "displayName",
        "jobSpec",
        "state",
        "createTime",
        "startTime",
        "endTime",
        "updateTime",
        "error",
        "labels",
        "encryptionSpec",
        "webAccessUris",
        "satisfiesPzs",
        "satisfiesPzi",
    ),
    "HyperparameterTuningJob": (
        "name",
        "displayName",
        "studySpec",
        "maxTrialCount",
        "parallelTrialCount",
        "maxFailedTrialCount",
        "trialJobSpec",
        "trials",
        "state",
        "createTime",
        "startTime",
        "endTime",
        "updateTime",
        "error",
        "labels",
        "encryptionSpec",
        "satisfiesPzs",
        "satisfiesPzi",
    ),
    "CustomJobSpec": (
        "workerPoolSpecs",
        "scheduling",
        "serviceAccount",
        "network",
        "baseOutputDirectory",
        "tensorboard",
        "enableWebAccess",
        "reservedIpRanges",
        "persistentResourceId",
        "enableDashboardAccess",
        "experiment",
        "experimentRun",
        "protectedArtifactLocationId",
        "models",
        "pscInterfaceConfig",
    ),
    "WorkerPoolSpec": (
        "machineSpec",
        "replicaCount",
        "nfsMounts",
        "diskSpec",
        "containerSpec",
        "pythonPackageSpec",
        "lustreMounts",
    ),
    "MachineSpec": (
        "machineType",
        "acceleratorType",
        "acceleratorCount",
        "tpuTopology",
        "reservationAffinity",
        "gpuPartitionSize",
    ),
    "ContainerSpec": ("imageUri", "command", "args", "env"),
    "EnvVar": ("name", "value"),
    "PythonPackageSpec": ("executorImageUri", "packageUris", "pythonModule", "args", "env"),
    "DiskSpec": ("bootDiskType", "bootDiskSizeGb"),
    "GcsDestination": ("outputUriPrefix",),
    "EncryptionSpec": ("kmsKeyName",),
    "Scheduling": (
        "timeout",
        "restartJobOnWorkerRestart",
        "strategy",
        "disableRetries",
        "maxWaitDuration",
    ),
    "StudySpec": (
        "metrics",
        "parameters",
        "algorithm",
        "decayCurveStoppingSpec",
        "medianAutomatedStoppingSpec",
        "observationNoise",
        "measurementSelectionType",
        "convexAutomatedStoppingSpec",
        "studyStoppingConfig",
    ),
    "StudySpec.MetricSpec": ("metricId", "goal", "safetyConfig"),
    "StudySpec.ParameterSpec": (
        "parameterId",
        "doubleValueSpec",
        "integerValueSpec",
        "categoricalValueSpec",
        "discreteValueSpec",
        "scaleType",
        "conditionalParameterSpecs",
    ),
    "StudySpec.ParameterSpec.DoubleValueSpec": ("minValue", "maxValue", "defaultValue"),
    "StudySpec.ParameterSpec.IntegerValueSpec": ("minValue", "maxValue", "defaultValue"),
    "StudySpec.ParameterSpec.CategoricalValueSpec": ("values", "defaultValue"),
    "StudySpec.ParameterSpec.DiscreteValueSpec": ("values", "defaultValue"),
    "StudySpec.ParameterSpec.ConditionalParameterSpec": (
        "parameterSpec",
        "parentDiscreteValues",
        "parentIntValues",
        "parentCategoricalValues",
    ),
    "StudySpec.ParameterSpec.ConditionalParameterSpec.DiscreteValueCondition": ("values",),
    "StudySpec.ParameterSpec.ConditionalParameterSpec.IntValueCondition": ("values",),
    "StudySpec.ParameterSpec.ConditionalParameterSpec.CategoricalValueCondition": ("values",),
    "StudySpec.DecayCurveAutomatedStoppingSpec": ("useElapsedDuration",),
    "StudySpec.MedianAutomatedStoppingSpec": ("useElapsedDuration",),
    "StudySpec.ConvexAutomatedStoppingSpec": (
        "maxStepCount",
        "minStepCount",
        "minMeasurementCount",
        "learningRateParameterName",
        "useElapsedDuration",
        "updateAllStoppedTrials",
    ),
}

ONEOFS: dict[str, tuple[str, ...]] = {
    "WorkerPoolSpec": ("containerSpec", "pythonPackageSpec"),
    "StudySpec": (
        "decayCurveStoppingSpec",
        "medianAutomatedStoppingSpec",
        "convexAutomatedStoppingSpec",
    ),
    "StudySpec.ParameterSpec": (
        "doubleValueSpec",
        "integerValueSpec",
        "categoricalValueSpec",
        "discreteValueSpec",
    ),
    "StudySpec.ParameterSpec.ConditionalParameterSpec": (
        "parentDiscreteValues",
        "parentIntValues",
        "parentCategoricalValues",
    ),
}
"""The oneof groups among the fields read: at most one member may be given."""

# Enum names by number, as in the pinned aiplatform_v1 (a test holds them equal).
ENUMS: dict[str, dict[str, int]] = {
    "AcceleratorType": {
        "ACCELERATOR_TYPE_UNSPECIFIED": 0,
        "NVIDIA_TESLA_K80": 1,
        "NVIDIA_TESLA_P100": 2,
        "NVIDIA_TESLA_V100": 3,
        "NVIDIA_TESLA_P4": 4,
        "NVIDIA_TESLA_T4": 5,
        "TPU_V2": 6,
        "TPU_V3": 7,
        "NVIDIA_TESLA_A100": 8,
        "NVIDIA_A100_80GB": 9,
        "TPU_V4_POD": 10,
        "NVIDIA_L4": 11,
        "TPU_V5_LITEPOD": 12,
        "NVIDIA_H100_80GB": 13,
        "NVIDIA_H100_MEGA_80GB": 14,
        "NVIDIA_H200_141GB": 15,
        "NVIDIA_B200": 16,
        "NVIDIA_GB200": 17,
        "NVIDIA_RTX_PRO_6000": 18,
    },
    "Scheduling.Strategy": {
        "STRATEGY_UNSPECIFIED": 0,
        "ON_DEMAND": 1,
        "LOW_COST": 2,
        "STANDARD": 3,
        "SPOT": 4,
        "FLEX_START": 6,
    },
    "StudySpec.Algorithm": {"ALGORITHM_UNSPECIFIED": 0, "GRID_SEARCH": 2, "RANDOM_SEARCH": 3},
    "StudySpec.MeasurementSelectionType": {
        "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED": 0,
        "LAST_MEASUREMENT": 1,
        "BEST_MEASUREMENT": 2,
    },
    "StudySpec.MetricSpec.GoalType": {"GOAL_TYPE_UNSPECIFIED": 0, "MAXIMIZE": 1, "MINIMIZE": 2},
    "StudySpec.ParameterSpec.ScaleType": {
        "SCALE_TYPE_UNSPECIFIED": 0,
        "UNIT_LINEAR_SCALE": 1,
        "UNIT_LOG_SCALE": 2,
        "UNIT_REVERSE_LOG_SCALE": 3,
    },
}

_SCALE_TO_REST = {
    ScaleType.LINEAR: "UNIT_LINEAR_SCALE",
    ScaleType.LOG: "UNIT_LOG_SCALE",
    ScaleType.REVERSE_LOG: "UNIT_REVERSE_LOG_SCALE",
}
_SCALE_FROM_REST = {rest: scale for scale, rest in _SCALE_TO_REST.items()}
# The service's default (unspecified) algorithm is its Bayesian optimisation.
_ALGORITHM_TO_REST = {
    SearchAlgorithm.BAYESIAN: "ALGORITHM_UNSPECIFIED",
    SearchAlgorithm.GRID: "GRID_SEARCH",
    SearchAlgorithm.RANDOM: "RANDOM_SEARCH",
}
_ALGORITHM_FROM_REST = {rest: alg for alg, rest in _ALGORITHM_TO_REST.items()}
_SELECTION_TO_REST = {
    MeasurementSelection.BEST: "BEST_MEASUREMENT",
    MeasurementSelection.LAST: "LAST_MEASUREMENT",
}
GOAL_FROM_REST = {"MAXIMIZE": MetricGoal.MAXIMIZE, "MINIMIZE": MetricGoal.MINIMIZE}
"""Vertex ``GoalType`` names -> goals; an unspecified goal reads as MAXIMIZE."""
# ON_DEMAND / LOW_COST are the older names of STANDARD / SPOT.
_STRATEGY_FROM_REST = {
    "STRATEGY_UNSPECIFIED": SchedulingStrategy.STANDARD,
    "ON_DEMAND": SchedulingStrategy.STANDARD,
    "STANDARD": SchedulingStrategy.STANDARD,
    "LOW_COST": SchedulingStrategy.SPOT,
    "SPOT": SchedulingStrategy.SPOT,
    "FLEX_START": SchedulingStrategy.FLEX_START,
}
_EARLY_STOPPING = {
    EarlyStopping.MEDIAN: "medianAutomatedStoppingSpec",
    EarlyStopping.DECAY_CURVE: "decayCurveStoppingSpec",
    EarlyStopping.CONVEX: "convexAutomatedStoppingSpec",
}

_STOPPING_MESSAGES = {
    "medianAutomatedStoppingSpec": "StudySpec.MedianAutomatedStoppingSpec",
    "decayCurveStoppingSpec": "StudySpec.DecayCurveAutomatedStoppingSpec",
    "convexAutomatedStoppingSpec": "StudySpec.ConvexAutomatedStoppingSpec",
}

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_MAX_DURATION_SECONDS = 315_576_000_000  # google.protobuf.Duration's range: 10,000 years


def console_url(name: str) -> str:
    """The Cloud console page of a job resource name ``projects/P/locations/L/<kind>/ID``."""
    parts = name.split("/")
    if len(parts) != 6:
        return ""
    _, project, _, location, collection, job_id = parts
    page = "custom-jobs" if collection == JobKind.CUSTOM_JOB.value else "hyperparameter-tuning-jobs"
    return (
        f"https://console.cloud.google.com/vertex-ai/training/{page}/{job_id}"
        f"?project={project}&region={location}"
    )


# ------------------------------------------------------------------------- to JSON
# Each ``_put_*`` writes a proto3 field the way MessageToDict does: a field without
# presence is left out at its default (0, "", false, empty); int64 travels as a string.


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value:
        out[key] = value


def _put_int64(out: dict[str, Any], key: str, value: int) -> None:
    if value:
        out[key] = str(int(value))


def _double(value: float) -> float | str:
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _put_double(out: dict[str, Any], key: str, value: float) -> None:
    # -0.0 is not the default: its bits differ from 0.0, and protobuf keeps it.
    if value or math.copysign(1.0, value) < 0:
        out[key] = _double(value)


def _put_enum(out: dict[str, Any], key: str, enum: str, name: str) -> None:
    if ENUMS[enum][name]:
        out[key] = name


def _duration(seconds: int) -> str:
    return f"{int(seconds)}s"


def _pool_to_json(pool: WorkerPoolSpec | None, path: str) -> dict[str, Any]:
    if pool is None:
        # Vertex takes an empty message as the placeholder for an unused pool.
        return {}
    machine: dict[str, Any] = {}
    _put(machine, "machineType", pool.machine.machine_type)
    accelerator = pool.machine.accelerator_type
    if accelerator:
        if accelerator not in ENUMS["AcceleratorType"]:
            raise ValueError(
                f"{path}.machine.accelerator_type: {accelerator!r} is not a Vertex "
                f"AcceleratorType; valid: {sorted(ENUMS['AcceleratorType'])[1:]}"
            )
        _put_enum(machine, "acceleratorType", "AcceleratorType", accelerator)
        _put(machine, "acceleratorCount", int(pool.machine.accelerator_count))
    out: dict[str, Any] = {"machineSpec": machine}
    _put_int64(out, "replicaCount", pool.replica_count)
    disk: dict[str, Any] = {}
    _put(disk, "bootDiskType", pool.disk.boot_disk_type)
    _put(disk, "bootDiskSizeGb", int(pool.disk.boot_disk_size_gb))
    out["diskSpec"] = disk
    container: dict[str, Any] = {}
    _put(container, "imageUri", pool.container.image_uri)
    _put(container, "command", list(pool.container.command))
    _put(container, "args", list(pool.container.args))
    env = []
    for name, value in pool.container.env:
        var: dict[str, Any] = {}
        _put(var, "name", name)
        _put(var, "value", value)
        env.append(var)
    _put(container, "env", env)
    out["containerSpec"] = container
    return out


def custom_job_spec_to_json(spec: CustomJobSpec, path: str = "") -> dict[str, Any]:
    """The ``jobSpec`` of a CustomJob, or the ``trialJobSpec`` of a tuning job."""
    out: dict[str, Any] = {
        "workerPoolSpecs": [
            _pool_to_json(pool, f"{path}worker_pools[{index}]")
            for index, pool in enumerate(spec.worker_pools)
        ]
    }
    if not out["workerPoolSpecs"]:
        del out["workerPoolSpecs"]
    scheduling: dict[str, Any] = {}
    if spec.timeout_seconds is not None:
        scheduling["timeout"] = _duration(spec.timeout_seconds)
    _put(scheduling, "restartJobOnWorkerRestart", spec.restart_job_on_worker_restart)
    _put_enum(scheduling, "strategy", "Scheduling.Strategy", spec.scheduling_strategy.value)
    if spec.max_wait_seconds is not None:
        scheduling["maxWaitDuration"] = _duration(spec.max_wait_seconds)
    out["scheduling"] = scheduling
    _put(out, "serviceAccount", spec.service_account)
    _put(out, "network", spec.network)
    if spec.base_output_directory is not None:
        gcs: dict[str, Any] = {}
        _put(gcs, "outputUriPrefix", spec.base_output_directory)
        out["baseOutputDirectory"] = gcs
    _put(out, "tensorboard", spec.tensorboard)
    _put(out, "enableWebAccess", spec.enable_web_access)
    _put(out, "persistentResourceId", spec.persistent_resource_id)
    return out


def _parameter_to_json(param: ParameterSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "parameterId", param.parameter_id)
    values: dict[str, Any] = {}
    if isinstance(param, DoubleParameterSpec):
        _put_double(values, "minValue", param.min_value)
        _put_double(values, "maxValue", param.max_value)
        out["doubleValueSpec"] = values
    elif isinstance(param, IntegerParameterSpec):
        _put_int64(values, "minValue", param.min_value)
        _put_int64(values, "maxValue", param.max_value)
        out["integerValueSpec"] = values
    elif isinstance(param, DiscreteParameterSpec):
        _put(values, "values", [_double(v) for v in param.values])
        out["discreteValueSpec"] = values
    else:
        _put(values, "values", list(param.values))
        out["categoricalValueSpec"] = values
    if not isinstance(param, CategoricalParameterSpec):
        _put_enum(
            out, "scaleType", "StudySpec.ParameterSpec.ScaleType", _SCALE_TO_REST[param.scale]
        )
    conditions = []
    for child in param.conditional:
        condition: dict[str, Any] = {"parameterSpec": _parameter_to_json(child.parameter)}
        parents: dict[str, Any] = {}
        # The parent's type decides which condition field Vertex reads.
        if isinstance(param, CategoricalParameterSpec):
            _put(parents, "values", [str(v) for v in child.parent_values])
            condition["parentCategoricalValues"] = parents
        elif isinstance(param, IntegerParameterSpec):
            _put(parents, "values", [str(int(v)) for v in child.parent_values])
            condition["parentIntValues"] = parents
        else:
            _put(parents, "values", [_double(float(v)) for v in child.parent_values])
            condition["parentDiscreteValues"] = parents
        conditions.append(condition)
    _put(out, "conditionalParameterSpecs", conditions)
    return out


def study_spec_to_json(study: StudySpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    metrics = []
    for metric in study.metrics:
        entry: dict[str, Any] = {}
        _put(entry, "metricId", metric.metric_id)
        _put_enum(entry, "goal", "StudySpec.MetricSpec.GoalType", metric.goal.value)
        metrics.append(entry)
    _put(out, "metrics", metrics)
    _put(out, "parameters", [_parameter_to_json(p) for p in study.parameters])
    _put_enum(out, "algorithm", "StudySpec.Algorithm", _ALGORITHM_TO_REST[study.algorithm])
    stopping_key = _EARLY_STOPPING.get(study.early_stopping)
    stopping: dict[str, Any] = {}
    _put(stopping, "useElapsedDuration", study.early_stopping_uses_elapsed_duration)
    # In field-number order, as MessageToDict writes them: decay (4), median (5),
    # measurement selection (7), convex (9).
    if stopping_key in ("decayCurveStoppingSpec", "medianAutomatedStoppingSpec"):
        out[stopping_key] = stopping
    _put_enum(
        out,
        "measurementSelectionType",
        "StudySpec.MeasurementSelectionType",
        _SELECTION_TO_REST[study.measurement_selection],
    )
    if stopping_key == "convexAutomatedStoppingSpec":
        out[stopping_key] = stopping
    return out


def _put_labels_and_key(
    out: dict[str, Any], labels: tuple[tuple[str, str], ...], kms_key_name: str | None
) -> None:
    _put(out, "labels", dict(labels))
    if kms_key_name is not None:
        encryption: dict[str, Any] = {}
        _put(encryption, "kmsKeyName", kms_key_name)
        out["encryptionSpec"] = encryption


def custom_job_to_json(spec: CustomJobSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "displayName", spec.display_name)
    out["jobSpec"] = custom_job_spec_to_json(spec)
    _put_labels_and_key(out, spec.labels, spec.kms_key_name)
    return out


def tuning_job_to_json(spec: TuningJobSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "displayName", spec.display_name)
    out["studySpec"] = study_spec_to_json(spec.study)
    _put(out, "maxTrialCount", int(spec.max_trial_count))
    _put(out, "parallelTrialCount", int(spec.parallel_trial_count))
    _put(out, "maxFailedTrialCount", int(spec.max_failed_trial_count))
    out["trialJobSpec"] = custom_job_spec_to_json(spec.trial_job, "trial_job.")
    _put_labels_and_key(out, spec.labels, spec.kms_key_name)
    return out


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """The Vertex REST form of ``spec`` (camelCase, defaults omitted): what
    ``MessageToDict`` makes of the ``aiplatform_v1`` message, key for key."""
    if isinstance(spec, TuningJobSpec):
        return tuning_job_to_json(spec)
    return custom_job_to_json(spec)


# ----------------------------------------------------------------------- from JSON

_SNAKE = re.compile(r"([A-Z])")
T = TypeVar("T")


def _snake(json_name: str) -> str:
    return _SNAKE.sub(r"_\1", json_name).lower()


_ALIASES: dict[str, dict[str, str]] = {
    message: {**{name: name for name in names}, **{_snake(name): name for name in names}}
    for message, names in KNOWN_FIELDS.items()
}
"""Per message: every accepted key (json name or proto field name) -> its json name."""


def _message(data: Any, message: str, path: str) -> dict[str, Any]:
    """The fields of ``data`` as a ``message``, by json name; nulls read as absent."""
    if not isinstance(data, Mapping):
        raise SpecJsonError(
            f"{path or '<root>'}: expected a JSON object ({message}), got {type(data).__name__}"
        )
    aliases = _ALIASES[message]
    fields: dict[str, Any] = {}
    for key, value in data.items():
        name = aliases.get(key) if isinstance(key, str) else None
        if name is None:
            raise SpecJsonError(
                f"{_join(path, str(key))}: {message} has no field {key!r}; "
                f"its fields: {list(KNOWN_FIELDS[message])}"
            )
        if name in fields:
            raise SpecJsonError(f"{_join(path, name)}: given twice (as {name!r} and {key!r})")
        if value is not None:
            fields[name] = value
    given = [name for name in ONEOFS.get(message, ()) if name in fields]
    if len(given) > 1:
        raise SpecJsonError(f"{path or '<root>'}: {given} are alternatives; give only one")
    return fields


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _sub(fields: dict[str, Any], name: str, message: str, path: str) -> dict[str, Any]:
    """A message-typed field; an absent one reads as the empty message."""
    return _message(fields.get(name, {}), message, _join(path, name))


def _repeated(
    fields: dict[str, Any], name: str, path: str, item: Callable[[Any, str], T]
) -> tuple[T, ...]:
    values = fields.get(name, [])
    where = _join(path, name)
    if not isinstance(values, list):
        raise SpecJsonError(f"{where}: expected a JSON list, got {type(values).__name__}")
    out = []
    for index, value in enumerate(values):
        if value is None:
            raise SpecJsonError(f"{where}[{index}]: null is not allowed in a list")
        out.append(item(value, f"{where}[{index}]"))
    return tuple(out)


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise SpecJsonError(f"{path}: expected a string, got {value!r}")
    return value


def _integer(value: Any, path: str, bounds: tuple[int, int] = _INT64) -> int:
    # What ParseDict takes for an integer: a number or a numeric string (numbers come
    # back from the Pulumi engine as floats, 2 -> 2.0), never a bool or a fraction.
    number: int | None = None
    if isinstance(value, bool):
        pass
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and " " not in value:
        try:
            number = int(value)
        except ValueError:
            try:
                as_float = float(value)
            except ValueError:
                as_float = math.nan
            number = int(as_float) if as_float.is_integer() else None
    if number is None:
        raise SpecJsonError(f"{path}: expected an integer, got {value!r}")
    if not bounds[0] <= number <= bounds[1]:
        raise SpecJsonError(f"{path}: {number} is outside the range {bounds[0]}..{bounds[1]}")
    return number


def _int32(value: Any, path: str) -> int:
    return _integer(value, path, _INT32)


def _double_from(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecJsonError(f"{path}: expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecJsonError(f"{path}: write {value} as the string NaN / Infinity / -Infinity")
    if value == "nan":
        raise SpecJsonError(f'{path}: write "NaN", not "nan"')
    try:
        return float(value)
    except ValueError:
        raise SpecJsonError(f"{path}: expected a number, got {value!r}") from None


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecJsonError(f"{path}: expected true or false, got {value!r}")
    return value


def _enum(value: Any, enum: str, path: str) -> str:
    names = ENUMS[enum]
    if isinstance(value, str) and value in names:
        return value
    if not isinstance(value, bool):
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = None
        for name, known in names.items():
            if number == known:
                return name
    raise SpecJsonError(f"{path}: {value!r} is not a valid {enum}; valid: {list(names)}")


def _seconds(value: Any, path: str) -> int | None:
    """Whole seconds of a JSON ``Duration`` (``"3600s"``, ``"1.5s"``); zero reads as unset."""
    text = _string(value, path)
    match = re.fullmatch(r"(-?)(\d+)(?:\.(\d{1,9}))?s", text)
    if not match:
        raise SpecJsonError(f"{path}: expected a duration like '3600s', got {text!r}")
    seconds = int(match.group(2))
    if seconds > _MAX_DURATION_SECONDS:
        raise SpecJsonError(f"{path}: {text!r} is beyond the 10000-year Duration range")
    # A fraction of a second is dropped, as proto-plus's timedelta -> int always did.
    return (-seconds if match.group(1) else seconds) or None


def _get(
    fields: dict[str, Any], name: str, path: str, read: Callable[[Any, str], T], default: T
) -> T:
    return read(fields[name], _join(path, name)) if name in fields else default


def _labels(fields: dict[str, Any], path: str) -> tuple[tuple[str, str], ...]:
    labels = fields.get("labels", {})
    where = _join(path, "labels")
    if not isinstance(labels, Mapping):
        raise SpecJsonError(f"{where}: expected a JSON object of strings")
    return tuple(
        sorted(
            (_string(key, where), _string(value, f"{where}.{key}")) for key, value in labels.items()
        )
    )


def _kms_key(fields: dict[str, Any], path: str) -> str | None:
    encryption = _sub(fields, "encryptionSpec", "EncryptionSpec", path)
    where = _join(path, "encryptionSpec")
    return _get(encryption, "kmsKeyName", where, _string, "") or None


def _env_var(value: Any, path: str) -> tuple[str, str]:
    fields = _message(value, "EnvVar", path)
    return (_get(fields, "name", path, _string, ""), _get(fields, "value", path, _string, ""))


def _pool_from_json(value: Any, path: str) -> WorkerPoolSpec | None:
    fields = _message(value, "WorkerPoolSpec", path)
    machine = _sub(fields, "machineSpec", "MachineSpec", path)
    container = _sub(fields, "containerSpec", "ContainerSpec", path)
    machine_path = _join(path, "machineSpec")
    container_path = _join(path, "containerSpec")
    machine_type = _get(machine, "machineType", machine_path, _string, "")
    image_uri = _get(container, "imageUri", container_path, _string, "")
    if not machine_type and not image_uri:
        return None
    package = _sub(fields, "pythonPackageSpec", "PythonPackageSpec", path)
    if _get(package, "executorImageUri", _join(path, "pythonPackageSpec"), _string, ""):
        raise ConversionError(
            f"{path}: worker pool uses pythonPackageSpec; this project runs custom containers only"
        )
    accelerator_type = _get(
        machine,
        "acceleratorType",
        machine_path,
        lambda v, p: _enum(v, "AcceleratorType", p),
        "ACCELERATOR_TYPE_UNSPECIFIED",
    )
    count = _get(machine, "acceleratorCount", machine_path, _int32, 0)
    accelerator = accelerator_type if ENUMS["AcceleratorType"][accelerator_type] and count else None
    disk = _sub(fields, "diskSpec", "DiskSpec", path)
    disk_path = _join(path, "diskSpec")
    return WorkerPoolSpec(
        machine=MachineSpec(
            machine_type=machine_type,
            accelerator_type=accelerator,
            accelerator_count=count if accelerator else 0,
        ),
        container=ContainerSpec(
            image_uri=image_uri,
            command=_repeated(container, "command", container_path, _string),
            args=_repeated(container, "args", container_path, _string),
            env=_repeated(container, "env", container_path, _env_var),
        ),
        replica_count=_get(fields, "replicaCount", path, _integer, 0),
        disk=DiskSpec(
            boot_disk_type=_get(disk, "bootDiskType", disk_path, _string, "")
            or DiskSpec.boot_disk_type,
            boot_disk_size_gb=_get(disk, "bootDiskSizeGb", disk_path, _int32, 0)
            or DiskSpec.boot_disk_size_gb,
        ),
    )


def custom_job_spec_from_json(
    value: Any,
    path: str,
    *,
    display_name: str,
    labels: tuple[tuple[str, str], ...] = (),
    kms_key_name: str | None = None,
) -> CustomJobSpec:
    fields = _message(value, "CustomJobSpec", path)
    scheduling = _sub(fields, "scheduling", "Scheduling", path)
    where = _join(path, "scheduling")
    strategy = _get(
        scheduling, "strategy", where, lambda v, p: _enum(v, "Scheduling.Strategy", p), ""
    )
    output = _sub(fields, "baseOutputDirectory", "GcsDestination", path)
    return CustomJobSpec(
        display_name=display_name,
        worker_pools=_repeated(fields, "workerPoolSpecs", path, _pool_from_json),
        base_output_directory=_get(
            output, "outputUriPrefix", _join(path, "baseOutputDirectory"), _string, ""
        )
        or None,
        service_account=_get(fields, "serviceAccount", path, _string, "") or None,
        network=_get(fields, "network", path, _string, "") or None,
        labels=labels,
        timeout_seconds=_get(scheduling, "timeout", where, _seconds, None),
        restart_job_on_worker_restart=_get(
            scheduling, "restartJobOnWorkerRestart", where, _bool, False
        ),
        scheduling_strategy=_STRATEGY_FROM_REST.get(strategy, SchedulingStrategy.STANDARD),
        max_wait_seconds=_get(scheduling, "maxWaitDuration", where, _seconds, None),
        persistent_resource_id=_get(fields, "persistentResourceId", path, _string, "") or None,
        enable_web_access=_get(fields, "enableWebAccess", path, _bool, False),
        tensorboard=_get(fields, "tensorboard", path, _string, "") or None,
        kms_key_name=kms_key_name,
    )


_PARAMETER = "StudySpec.ParameterSpec"
_CONDITION = f"{_PARAMETER}.ConditionalParameterSpec"


def _condition_from_json(value: Any, path: str) -> ConditionalParameterSpec:
    fields = _message(value, _CONDITION, path)
    parents: tuple[float | int | str, ...] = ()
    for name, message, read in (
        ("parentCategoricalValues", "CategoricalValueCondition", _string),
        ("parentIntValues", "IntValueCondition", _integer),
        ("parentDiscreteValues", "DiscreteValueCondition", _double_from),
    ):
        if name in fields:
            condition = _sub(fields, name, f"{_CONDITION}.{message}", path)
            parents = _repeated(condition, "values", _join(path, name), read)
    return ConditionalParameterSpec(
        parameter=_parameter_from_json(
            fields.get("parameterSpec", {}), _join(path, "parameterSpec")
        ),
        parent_values=parents,
    )


def _parameter_from_json(value: Any, path: str) -> ParameterSpec:
    fields = _message(value, _PARAMETER, path)
    scale_name = _get(
        fields, "scaleType", path, lambda v, p: _enum(v, f"{_PARAMETER}.ScaleType", p), ""
    )
    scale = _SCALE_FROM_REST.get(scale_name, ScaleType.LINEAR)
    conditional = _repeated(fields, "conditionalParameterSpecs", path, _condition_from_json)
    pid = _get(fields, "parameterId", path, _string, "")
    if "doubleValueSpec" in fields:
        spec = _sub(fields, "doubleValueSpec", f"{_PARAMETER}.DoubleValueSpec", path)
        where = _join(path, "doubleValueSpec")
        return DoubleParameterSpec(
            pid,
            _get(spec, "minValue", where, _double_from, 0.0),
            _get(spec, "maxValue", where, _double_from, 0.0),
            scale,
            conditional,
        )
    if "integerValueSpec" in fields:
        spec = _sub(fields, "integerValueSpec", f"{_PARAMETER}.IntegerValueSpec", path)
        where = _join(path, "integerValueSpec")
        return IntegerParameterSpec(
            pid,
            _get(spec, "minValue", where, _integer, 0),
            _get(spec, "maxValue", where, _integer, 0),
            scale,
            conditional,
        )
    if "discreteValueSpec" in fields:
        spec = _sub(fields, "discreteValueSpec", f"{_PARAMETER}.DiscreteValueSpec", path)
        values = _repeated(spec, "values", _join(path, "discreteValueSpec"), _double_from)
        return DiscreteParameterSpec(pid, values, scale, conditional)
    if "categoricalValueSpec" in fields:
        spec = _sub(fields, "categoricalValueSpec", f"{_PARAMETER}.CategoricalValueSpec", path)
        categories = _repeated(spec, "values", _join(path, "categoricalValueSpec"), _string)
        return CategoricalParameterSpec(pid, categories, conditional)
    raise ConversionError(f"{path}: parameter {pid!r} has no value spec")


def _metric_from_json(value: Any, path: str) -> MetricSpec:
    fields = _message(value, "StudySpec.MetricSpec", path)
    goal = _get(fields, "goal", path, lambda v, p: _enum(v, "StudySpec.MetricSpec.GoalType", p), "")
    return MetricSpec(
        _get(fields, "metricId", path, _string, ""),
        GOAL_FROM_REST.get(goal, MetricGoal.MAXIMIZE),
    )


def study_spec_from_json(value: Any, path: str) -> StudySpec:
    fields = _message(value, "StudySpec", path)
    early, elapsed = EarlyStopping.NONE, False
    for kind, name in _EARLY_STOPPING.items():
        if name in fields:
            stopping = _sub(fields, name, _STOPPING_MESSAGES[name], path)
            early = kind
            elapsed = _get(stopping, "useElapsedDuration", _join(path, name), _bool, False)
    algorithm = _get(fields, "algorithm", path, lambda v, p: _enum(v, "StudySpec.Algorithm", p), "")
    selection = _get(
        fields,
        "measurementSelectionType",
        path,
        lambda v, p: _enum(v, "StudySpec.MeasurementSelectionType", p),
        "",
    )
    return StudySpec(
        metrics=_repeated(fields, "metrics", path, _metric_from_json),
        parameters=_repeated(fields, "parameters", path, _parameter_from_json),
        algorithm=_ALGORITHM_FROM_REST.get(algorithm, SearchAlgorithm.BAYESIAN),
        # Vertex reads an unspecified selection as LAST_MEASUREMENT.
        measurement_selection=MeasurementSelection.BEST
        if selection == "BEST_MEASUREMENT"
        else MeasurementSelection.LAST,
        early_stopping=early,
        early_stopping_uses_elapsed_duration=elapsed,
    )


def custom_job_from_json(data: Any) -> CustomJobSpec:
    fields = _message(data, "CustomJob", "")
    return custom_job_spec_from_json(
        fields.get("jobSpec", {}),
        "jobSpec",
        display_name=_get(fields, "displayName", "", _string, ""),
        labels=_labels(fields, ""),
        kms_key_name=_kms_key(fields, ""),
    )


def tuning_job_from_json(data: Any) -> TuningJobSpec:
    fields = _message(data, "HyperparameterTuningJob", "")
    display_name = _get(fields, "displayName", "", _string, "")
    return TuningJobSpec(
        display_name=display_name,
        # Trials carry no name, labels or key of their own: they take the tuning job's.
        trial_job=custom_job_spec_from_json(
            fields.get("trialJobSpec", {}), "trialJobSpec", display_name=display_name
        ),
        study=study_spec_from_json(fields.get("studySpec", {}), "studySpec"),
        max_trial_count=_get(fields, "maxTrialCount", "", _int32, 0),
        parallel_trial_count=_get(fields, "parallelTrialCount", "", _int32, 0),
        max_failed_trial_count=_get(fields, "maxFailedTrialCount", "", _int32, 0),
        labels=_labels(fields, ""),
        kms_key_name=_kms_key(fields, ""),
    )


def spec_from_json(kind: JobKind, data: Mapping[str, Any]) -> JobSpec:
    """Inverse of ``spec_to_json``. Raises ``SpecJsonError`` on a field the Vertex message
    does not have or a value of the wrong type, ``ConversionError`` on a job that a spec
    cannot express (a Python-package pool, a parameter without values)."""
    if kind is JobKind.HYPERPARAMETER_TUNING_JOB:
        return tuning_job_from_json(data)
    return custom_job_from_json(data)


__all__ = [
    "ENUMS",
    "GOAL_FROM_REST",
    "KNOWN_FIELDS",
    "ONEOFS",
    "ConversionError",
    "SpecJsonError",
    "console_url",
    "custom_job_from_json",
    "custom_job_spec_from_json",
    "custom_job_spec_to_json",
    "custom_job_to_json",
    "spec_from_json",
    "spec_to_json",
    "study_spec_from_json",
    "study_spec_to_json",
    "tuning_job_from_json",
    "tuning_job_to_json",
]
