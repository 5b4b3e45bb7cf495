"""Pure conversion between the specs and ``google.cloud.aiplatform_v1`` messages.

``to_proto(spec)`` builds the message that ``JobServiceClient.create_*`` takes;
``from_proto(message)`` reads a job back into the spec it was made from (the property
tests hold the two to ``from_proto(to_proto(s)) == s`` for every valid spec).
``spec_to_json`` / ``spec_from_json`` carry a spec through Pulumi properties in the
Vertex REST (camelCase JSON) form, which is also what a reader of the state expects.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import duration_pb2, json_format, timestamp_pb2

from infra.jobs.spec import (
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
    JobRecord,
    JobSpec,
    JobState,
    MachineSpec,
    MeasurementSelection,
    MetricGoal,
    MetricSpec,
    ParameterSpec,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    StudySpec,
    TrialRecord,
    TuningJobSpec,
    WorkerPoolSpec,
    best_trial,
)

Scale = v1.StudySpec.ParameterSpec.ScaleType
_SCALE_TO_PROTO: dict[ScaleType, Any] = {
    ScaleType.LINEAR: Scale.UNIT_LINEAR_SCALE,
    ScaleType.LOG: Scale.UNIT_LOG_SCALE,
    ScaleType.REVERSE_LOG: Scale.UNIT_REVERSE_LOG_SCALE,
}
_SCALE_FROM_PROTO = {proto: scale for scale, proto in _SCALE_TO_PROTO.items()}

Algorithm = v1.StudySpec.Algorithm
# The service's default (unspecified) algorithm is its Bayesian optimisation.
_ALGORITHM_TO_PROTO = {
    SearchAlgorithm.BAYESIAN: Algorithm.ALGORITHM_UNSPECIFIED,
    SearchAlgorithm.GRID: Algorithm.GRID_SEARCH,
    SearchAlgorithm.RANDOM: Algorithm.RANDOM_SEARCH,
}
_ALGORITHM_FROM_PROTO = {proto: alg for alg, proto in _ALGORITHM_TO_PROTO.items()}

Selection = v1.StudySpec.MeasurementSelectionType
_SELECTION_TO_PROTO = {
    MeasurementSelection.BEST: Selection.BEST_MEASUREMENT,
    MeasurementSelection.LAST: Selection.LAST_MEASUREMENT,
}

Goal = v1.StudySpec.MetricSpec.GoalType
_GOAL_TO_PROTO = {MetricGoal.MAXIMIZE: Goal.MAXIMIZE, MetricGoal.MINIMIZE: Goal.MINIMIZE}
_GOAL_FROM_PROTO = {proto: goal for goal, proto in _GOAL_TO_PROTO.items()}

Strategy = v1.Scheduling.Strategy
_STRATEGY_TO_PROTO = {
    SchedulingStrategy.STANDARD: Strategy.STANDARD,
    SchedulingStrategy.SPOT: Strategy.SPOT,
    SchedulingStrategy.FLEX_START: Strategy.FLEX_START,
}
# ON_DEMAND / LOW_COST are the older names of STANDARD / SPOT.
_STRATEGY_FROM_PROTO = {
    Strategy.STRATEGY_UNSPECIFIED: SchedulingStrategy.STANDARD,
    Strategy.ON_DEMAND: SchedulingStrategy.STANDARD,
    Strategy.STANDARD: SchedulingStrategy.STANDARD,
    Strategy.LOW_COST: SchedulingStrategy.SPOT,
    Strategy.SPOT: SchedulingStrategy.SPOT,
    Strategy.FLEX_START: SchedulingStrategy.FLEX_START,
}


class ConversionError(ValueError):
    """A Vertex message this project cannot express as a spec."""


def _duration(seconds: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=seconds)


def _seconds(duration: Any) -> int | None:
    """proto-plus hands Durations back as ``timedelta``; unset is zero."""
    if duration is None:
        return None
    total = int(duration.total_seconds())
    return total or None


# ----------------------------------------------------------------------------- to proto


def _pool_to_proto(pool: WorkerPoolSpec | None) -> v1.WorkerPoolSpec:
    if pool is None:
        # Vertex takes an empty message as the placeholder for an unused pool.
        return v1.WorkerPoolSpec()
    machine = v1.MachineSpec(machine_type=pool.machine.machine_type)
    if pool.machine.accelerator_type:
        machine.accelerator_type = getattr(v1.AcceleratorType, pool.machine.accelerator_type)
        machine.accelerator_count = pool.machine.accelerator_count
    return v1.WorkerPoolSpec(
        machine_spec=machine,
        replica_count=pool.replica_count,
        container_spec=v1.ContainerSpec(
            image_uri=pool.container.image_uri,
            command=list(pool.container.command),
            args=list(pool.container.args),
            env=[v1.EnvVar(name=n, value=v) for n, v in pool.container.env],
        ),
        disk_spec=v1.DiskSpec(
            boot_disk_type=pool.disk.boot_disk_type,
            boot_disk_size_gb=pool.disk.boot_disk_size_gb,
        ),
    )


def custom_job_spec_to_proto(spec: CustomJobSpec) -> v1.CustomJobSpec:
    """The ``job_spec`` of a CustomJob, or the ``trial_job_spec`` of a tuning job."""
    message = v1.CustomJobSpec(
        worker_pool_specs=[_pool_to_proto(pool) for pool in spec.worker_pools],
        enable_web_access=spec.enable_web_access,
    )
    if spec.base_output_directory is not None:
        message.base_output_directory = v1.GcsDestination(
            output_uri_prefix=spec.base_output_directory
        )
    if spec.service_account is not None:
        message.service_account = spec.service_account
    if spec.network is not None:
        message.network = spec.network
    if spec.persistent_resource_id is not None:
        message.persistent_resource_id = spec.persistent_resource_id
    if spec.tensorboard is not None:
        message.tensorboard = spec.tensorboard
    scheduling = v1.Scheduling(
        restart_job_on_worker_restart=spec.restart_job_on_worker_restart,
        strategy=_STRATEGY_TO_PROTO[spec.scheduling_strategy],
    )
    if spec.timeout_seconds is not None:
        scheduling.timeout = _duration(spec.timeout_seconds)
    if spec.max_wait_seconds is not None:
        scheduling.max_wait_duration = _duration(spec.max_wait_seconds)
    message.scheduling = scheduling
    return message


def _encryption(key: str | None) -> v1.EncryptionSpec | None:
    return v1.EncryptionSpec(kms_key_name=key) if key is not None else None


def _parameter_to_proto(param: ParameterSpec) -> v1.StudySpec.ParameterSpec:
    PS = v1.StudySpec.ParameterSpec  # noqa: N806 -- the proto's own name, shortened
    message = PS(parameter_id=param.parameter_id)
    if isinstance(param, DoubleParameterSpec):
        message.double_value_spec = PS.DoubleValueSpec(
            min_value=param.min_value, max_value=param.max_value
        )
        message.scale_type = _SCALE_TO_PROTO[param.scale]
    elif isinstance(param, IntegerParameterSpec):
        message.integer_value_spec = PS.IntegerValueSpec(
            min_value=param.min_value, max_value=param.max_value
        )
        message.scale_type = _SCALE_TO_PROTO[param.scale]
    elif isinstance(param, DiscreteParameterSpec):
        message.discrete_value_spec = PS.DiscreteValueSpec(values=list(param.values))
        message.scale_type = _SCALE_TO_PROTO[param.scale]
    else:
        message.categorical_value_spec = PS.CategoricalValueSpec(values=list(param.values))
    for child in param.conditional:
        condition = PS.ConditionalParameterSpec(parameter_spec=_parameter_to_proto(child.parameter))
        # The parent's type decides which condition field Vertex reads.
        if isinstance(param, CategoricalParameterSpec):
            condition.parent_categorical_values = (
                PS.ConditionalParameterSpec.CategoricalValueCondition(
                    values=[str(v) for v in child.parent_values]
                )
            )
        elif isinstance(param, IntegerParameterSpec):
            condition.parent_int_values = PS.ConditionalParameterSpec.IntValueCondition(
                values=[int(v) for v in child.parent_values]
            )
        else:
            condition.parent_discrete_values = PS.ConditionalParameterSpec.DiscreteValueCondition(
                values=[float(v) for v in child.parent_values]
            )
        message.conditional_parameter_specs.append(condition)
    return message


def study_spec_to_proto(study: StudySpec) -> v1.StudySpec:
    message = v1.StudySpec(
        metrics=[
            v1.StudySpec.MetricSpec(metric_id=m.metric_id, goal=_GOAL_TO_PROTO[m.goal])
            for m in study.metrics
        ],
        parameters=[_parameter_to_proto(p) for p in study.parameters],
        algorithm=_ALGORITHM_TO_PROTO[study.algorithm],
        measurement_selection_type=_SELECTION_TO_PROTO[study.measurement_selection],
    )
    elapsed = study.early_stopping_uses_elapsed_duration
    if study.early_stopping is EarlyStopping.MEDIAN:
        message.median_automated_stopping_spec = v1.StudySpec.MedianAutomatedStoppingSpec(
            use_elapsed_duration=elapsed
        )
    elif study.early_stopping is EarlyStopping.DECAY_CURVE:
        message.decay_curve_stopping_spec = v1.StudySpec.DecayCurveAutomatedStoppingSpec(
            use_elapsed_duration=elapsed
        )
    elif study.early_stopping is EarlyStopping.CONVEX:
        message.convex_automated_stopping_spec = v1.StudySpec.ConvexAutomatedStoppingSpec(
            use_elapsed_duration=elapsed
        )
    return message


def custom_job_to_proto(spec: CustomJobSpec) -> v1.CustomJob:
    return v1.CustomJob(
        display_name=spec.display_name,
        job_spec=custom_job_spec_to_proto(spec),
        labels=dict(spec.labels),
        encryption_spec=_encryption(spec.kms_key_name),
    )


def tuning_job_to_proto(spec: TuningJobSpec) -> v1.HyperparameterTuningJob:
    return v1.HyperparameterTuningJob(
        display_name=spec.display_name,
        study_spec=study_spec_to_proto(spec.study),
        max_trial_count=spec.max_trial_count,
        parallel_trial_count=spec.parallel_trial_count,
        max_failed_trial_count=spec.max_failed_trial_count,
        trial_job_spec=custom_job_spec_to_proto(spec.trial_job),
        labels=dict(spec.labels),
        encryption_spec=_encryption(spec.kms_key_name),
    )


def to_proto(spec: JobSpec) -> v1.CustomJob | v1.HyperparameterTuningJob:
    if isinstance(spec, TuningJobSpec):
        return tuning_job_to_proto(spec)
    return custom_job_to_proto(spec)


# --------------------------------------------------------------------------- from proto


def _pool_from_proto(message: v1.WorkerPoolSpec) -> WorkerPoolSpec | None:
    if not message.machine_spec.machine_type and not message.container_spec.image_uri:
        return None
    if message.python_package_spec.executor_image_uri:
        raise ConversionError(
            "worker pool uses python_package_spec; this project runs custom containers only"
        )
    machine = message.machine_spec
    accelerator = None
    if machine.accelerator_type and machine.accelerator_count:
        accelerator = v1.AcceleratorType(machine.accelerator_type).name
    container = message.container_spec
    disk = message.disk_spec
    return WorkerPoolSpec(
        machine=MachineSpec(
            machine_type=machine.machine_type,
            accelerator_type=accelerator,
            accelerator_count=machine.accelerator_count if accelerator else 0,
        ),
        container=ContainerSpec(
            image_uri=container.image_uri,
            command=tuple(container.command),
            args=tuple(container.args),
            env=tuple((e.name, e.value) for e in container.env),
        ),
        replica_count=int(message.replica_count),
        disk=DiskSpec(
            boot_disk_type=disk.boot_disk_type or DiskSpec.boot_disk_type,
            boot_disk_size_gb=disk.boot_disk_size_gb or DiskSpec.boot_disk_size_gb,
        ),
    )


def custom_job_spec_from_proto(
    message: v1.CustomJobSpec,
    *,
    display_name: str,
    labels: tuple[tuple[str, str], ...] = (),
    kms_key_name: str | None = None,
) -> CustomJobSpec:
    scheduling = message.scheduling
    return CustomJobSpec(
        display_name=display_name,
        worker_pools=tuple(_pool_from_proto(p) for p in message.worker_pool_specs),
        base_output_directory=message.base_output_directory.output_uri_prefix or None,
        service_account=message.service_account or None,
        network=message.network or None,
        labels=labels,
        timeout_seconds=_seconds(scheduling.timeout),
        restart_job_on_worker_restart=scheduling.restart_job_on_worker_restart,
        scheduling_strategy=_STRATEGY_FROM_PROTO[scheduling.strategy],
        max_wait_seconds=_seconds(scheduling.max_wait_duration),
        persistent_resource_id=message.persistent_resource_id or None,
        enable_web_access=message.enable_web_access,
        tensorboard=message.tensorboard or None,
        kms_key_name=kms_key_name,
    )


def _parameter_from_proto(message: v1.StudySpec.ParameterSpec) -> ParameterSpec:
    scale = _SCALE_FROM_PROTO.get(message.scale_type, ScaleType.LINEAR)
    conditional = tuple(
        ConditionalParameterSpec(
            parameter=_parameter_from_proto(c.parameter_spec),
            parent_values=tuple(
                c.parent_categorical_values.values
                or c.parent_int_values.values
                or c.parent_discrete_values.values
            ),
        )
        for c in message.conditional_parameter_specs
    )
    kind = message._pb.WhichOneof("parameter_value_spec")
    pid = message.parameter_id
    if kind == "double_value_spec":
        d = message.double_value_spec
        return DoubleParameterSpec(pid, d.min_value, d.max_value, scale, conditional)
    if kind == "integer_value_spec":
        i = message.integer_value_spec
        return IntegerParameterSpec(pid, int(i.min_value), int(i.max_value), scale, conditional)
    if kind == "discrete_value_spec":
        return DiscreteParameterSpec(
            pid, tuple(message.discrete_value_spec.values), scale, conditional
        )
    if kind == "categorical_value_spec":
        return CategoricalParameterSpec(
            pid, tuple(message.categorical_value_spec.values), conditional
        )
    raise ConversionError(f"parameter {pid!r} has no value spec")


def study_spec_from_proto(message: v1.StudySpec) -> StudySpec:
    early = EarlyStopping.NONE
    elapsed = False
    stopping = message._pb.WhichOneof("automated_stopping_spec")
    if stopping == "median_automated_stopping_spec":
        early = EarlyStopping.MEDIAN
        elapsed = message.median_automated_stopping_spec.use_elapsed_duration
    elif stopping == "decay_curve_stopping_spec":
        early = EarlyStopping.DECAY_CURVE
        elapsed = message.decay_curve_stopping_spec.use_elapsed_duration
    elif stopping == "convex_automated_stopping_spec":
        early = EarlyStopping.CONVEX
        elapsed = message.convex_automated_stopping_spec.use_elapsed_duration
    # Vertex reads an unspecified selection as LAST_MEASUREMENT.
    selection = (
        MeasurementSelection.BEST
        if message.measurement_selection_type == Selection.BEST_MEASUREMENT
        else MeasurementSelection.LAST
    )
    return StudySpec(
        metrics=tuple(
            MetricSpec(m.metric_id, _GOAL_FROM_PROTO.get(m.goal, MetricGoal.MAXIMIZE))
            for m in message.metrics
        ),
        parameters=tuple(_parameter_from_proto(p) for p in message.parameters),
        algorithm=_ALGORITHM_FROM_PROTO[message.algorithm],
        measurement_selection=selection,
        early_stopping=early,
        early_stopping_uses_elapsed_duration=elapsed,
    )


def _labels(message: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(message.labels.items()))


def custom_job_from_proto(message: v1.CustomJob) -> CustomJobSpec:
    return custom_job_spec_from_proto(
        message.job_spec,
        display_name=message.display_name,
        labels=_labels(message),
        kms_key_name=message.encryption_spec.kms_key_name or None,
    )


def tuning_job_from_proto(message: v1.HyperparameterTuningJob) -> TuningJobSpec:
    return TuningJobSpec(
        display_name=message.display_name,
        # Trials carry no name, labels or key of their own: they take the tuning job's.
        trial_job=custom_job_spec_from_proto(
            message.trial_job_spec, display_name=message.display_name
        ),
        study=study_spec_from_proto(message.study_spec),
        max_trial_count=message.max_trial_count,
        parallel_trial_count=message.parallel_trial_count,
        max_failed_trial_count=message.max_failed_trial_count,
        labels=_labels(message),
        kms_key_name=message.encryption_spec.kms_key_name or None,
    )


def from_proto(message: v1.CustomJob | v1.HyperparameterTuningJob) -> JobSpec:
    if isinstance(message, v1.HyperparameterTuningJob):
        return tuning_job_from_proto(message)
    return custom_job_from_proto(message)


# ----------------------------------------------------------------------- JSON (props)


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """The Vertex REST form of ``spec`` (camelCase, defaults omitted)."""
    message = to_proto(spec)
    return dict(json_format.MessageToDict(type(message).pb(message)))


def spec_from_json(kind: JobKind, data: dict[str, Any]) -> JobSpec:
    """Inverse of ``spec_to_json``; raises ``json_format.ParseError`` on unknown fields."""
    if kind is JobKind.HYPERPARAMETER_TUNING_JOB:
        tuning = v1.HyperparameterTuningJob()
        json_format.ParseDict(data, v1.HyperparameterTuningJob.pb(tuning))
        return tuning_job_from_proto(tuning)
    custom = v1.CustomJob()
    json_format.ParseDict(data, v1.CustomJob.pb(custom))
    return custom_job_from_proto(custom)


# ------------------------------------------------------------------------- records


def _timestamp(value: Any) -> str | None:
    """RFC 3339 text of a proto-plus timestamp (a ``DatetimeWithNanoseconds``)."""
    if value is None:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    if stamp.seconds == 0 and stamp.nanos == 0:
        return None
    return stamp.ToJsonString()


def _trial_record(trial: v1.Trial) -> TrialRecord:
    params: list[tuple[str, float | int | str]] = []
    for p in trial.parameters:
        # struct Values carry numbers as floats; integers come back whole.
        value = p.value
        if isinstance(value, float) and value.is_integer():
            params.append((p.parameter_id, int(value)))
        else:
            params.append((p.parameter_id, value))
    metrics = trial.final_measurement.metrics
    return TrialRecord(
        trial_id=trial.id,
        state=v1.Trial.State(trial.state).name,
        parameters=tuple(params),
        final_metric=metrics[0].value if metrics else None,
    )


def _state(value: int) -> JobState:
    name = v1.JobState(value).name.removeprefix("JOB_STATE_")
    return JobState(name) if name in JobState.__members__ else JobState.PENDING


def record_from_proto(message: v1.CustomJob | v1.HyperparameterTuningJob) -> JobRecord:
    """What the backend protocol reports of a job, from a Vertex message."""
    error = message.error.message or None
    if isinstance(message, v1.HyperparameterTuningJob):
        trials = tuple(_trial_record(t) for t in message.trials)
        goals = message.study_spec.metrics
        goal = _GOAL_FROM_PROTO.get(goals[0].goal, MetricGoal.MAXIMIZE) if goals else None
        job_spec = message.trial_job_spec
        kind = JobKind.HYPERPARAMETER_TUNING_JOB
        web: dict[str, str] = {}
        best = best_trial(trials, goal) if goal else None
    else:
        trials, best = (), None
        job_spec = message.job_spec
        kind = JobKind.CUSTOM_JOB
        web = dict(message.web_access_uris)
    base = job_spec.base_output_directory.output_uri_prefix.rstrip("/")
    # Vertex sets AIP_MODEL_DIR to <base>/model, and to <base>/<trial id>/model in trials:
    # a tuning job's model is the best trial's.
    if not base:
        model_dir = None
    elif kind is JobKind.CUSTOM_JOB:
        model_dir = f"{base}/model"
    else:
        model_dir = f"{base}/{best.trial_id}/model" if best else None
    return JobRecord(
        name=message.name,
        kind=kind,
        display_name=message.display_name,
        state=_state(message.state),
        labels=_labels(message),
        create_time=_timestamp(message.create_time),
        start_time=_timestamp(message.start_time),
        end_time=_timestamp(message.end_time),
        error_message=error,
        model_dir=model_dir,
        trials=trials,
        best_trial=best,
        web_access_uris=web,
    )


__all__ = [
    "ConversionError",
    "custom_job_from_proto",
    "custom_job_spec_from_proto",
    "custom_job_spec_to_proto",
    "custom_job_to_proto",
    "from_proto",
    "record_from_proto",
    "spec_from_json",
    "spec_to_json",
    "study_spec_from_proto",
    "study_spec_to_proto",
    "to_proto",
    "tuning_job_from_proto",
    "tuning_job_to_proto",
]
