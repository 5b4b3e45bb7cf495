"""An independent oracle for ``vertex_training.jobs.rest``: specs built into ``aiplatform_v1``
messages field by field, the way ``convert.to_proto`` did before it went through the REST
dict. ``MessageToDict`` of these messages is what ``rest.spec_to_json`` must equal."""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import duration_pb2

from vertex_training.jobs.spec import (
    CategoricalParameterSpec,
    CustomJobSpec,
    DiscreteParameterSpec,
    DoubleParameterSpec,
    EarlyStopping,
    IntegerParameterSpec,
    JobSpec,
    MeasurementSelection,
    MetricGoal,
    ParameterSpec,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    StudySpec,
    TuningJobSpec,
    WorkerPoolSpec,
)

Scale = v1.StudySpec.ParameterSpec.ScaleType
_SCALE_TO_PROTO: dict[ScaleType, Any] = {
    ScaleType.LINEAR: Scale.UNIT_LINEAR_SCALE,
    ScaleType.LOG: Scale.UNIT_LOG_SCALE,
    ScaleType.REVERSE_LOG: Scale.UNIT_REVERSE_LOG_SCALE,
}

Algorithm = v1.StudySpec.Algorithm
# The service's default (unspecified) algorithm is its Bayesian optimisation.
_ALGORITHM_TO_PROTO = {
    SearchAlgorithm.BAYESIAN: Algorithm.ALGORITHM_UNSPECIFIED,
    SearchAlgorithm.GRID: Algorithm.GRID_SEARCH,
    SearchAlgorithm.RANDOM: Algorithm.RANDOM_SEARCH,
}

Selection = v1.StudySpec.MeasurementSelectionType
_SELECTION_TO_PROTO = {
    MeasurementSelection.BEST: Selection.BEST_MEASUREMENT,
    MeasurementSelection.LAST: Selection.LAST_MEASUREMENT,
}

Goal = v1.StudySpec.MetricSpec.GoalType
_GOAL_TO_PROTO = {MetricGoal.MAXIMIZE: Goal.MAXIMIZE, MetricGoal.MINIMIZE: Goal.MINIMIZE}

Strategy = v1.Scheduling.Strategy
_STRATEGY_TO_PROTO = {
    SchedulingStrategy.STANDARD: Strategy.STANDARD,
    SchedulingStrategy.SPOT: Strategy.SPOT,
    SchedulingStrategy.FLEX_START: Strategy.FLEX_START,
}


def _duration(seconds: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=seconds)


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
