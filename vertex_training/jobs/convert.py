"""Specs <-> ``google.cloud.aiplatform_v1`` messages, through their REST form.

One conversion to maintain: ``vertex_training.jobs.rest`` writes and reads the Vertex REST
(camelCase JSON) form in plain Python; here ``to_proto(spec)`` parses that dict into the
message ``JobServiceClient.create_*`` takes (``json_format.ParseDict``) and
``from_proto(message)`` reads a job back through ``MessageToDict`` (the property tests
hold ``from_proto(to_proto(s)) == s`` for every valid spec). Only the vertex backend
imports this module: ``aiplatform_v1`` costs ~0.6 s to import, which the Pulumi program
does not pay. ``record_from_proto`` reads what the backend reports of a job.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import json_format, timestamp_pb2

from vertex_training.jobs.rest import (
    GOAL_FROM_REST,
    ConversionError,
    SpecJsonError,
    custom_job_from_json,
    custom_job_to_json,
    spec_from_json,
    spec_to_json,
    tuning_job_from_json,
    tuning_job_to_json,
)
from vertex_training.jobs.spec import (
    CustomJobSpec,
    JobKind,
    JobRecord,
    JobSpec,
    JobState,
    MetricGoal,
    TrialRecord,
    TuningJobSpec,
    best_trial,
)

M = TypeVar("M", v1.CustomJob, v1.HyperparameterTuningJob)


def _parse(data: dict[str, Any], message: M) -> M:
    # ParseDict fills the raw protobuf underneath the proto-plus wrapper in place.
    json_format.ParseDict(data, type(message).pb(message))
    return message


def _as_dict(message: Any) -> dict[str, Any]:
    return dict(json_format.MessageToDict(type(message).pb(message)))


def custom_job_to_proto(spec: CustomJobSpec) -> v1.CustomJob:
    return _parse(custom_job_to_json(spec), v1.CustomJob())


def tuning_job_to_proto(spec: TuningJobSpec) -> v1.HyperparameterTuningJob:
    return _parse(tuning_job_to_json(spec), v1.HyperparameterTuningJob())


def to_proto(spec: JobSpec) -> v1.CustomJob | v1.HyperparameterTuningJob:
    if isinstance(spec, TuningJobSpec):
        return tuning_job_to_proto(spec)
    return custom_job_to_proto(spec)


def from_proto(message: v1.CustomJob | v1.HyperparameterTuningJob) -> JobSpec:
    if isinstance(message, v1.HyperparameterTuningJob):
        return tuning_job_from_json(_as_dict(message))
    return custom_job_from_json(_as_dict(message))


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


def _labels(message: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(message.labels.items()))


def _state(value: int) -> JobState:
    name = v1.JobState(value).name.removeprefix("JOB_STATE_")
    return JobState(name) if name in JobState.__members__ else JobState.PENDING


def record_from_proto(message: v1.CustomJob | v1.HyperparameterTuningJob) -> JobRecord:
    """What the backend protocol reports of a job, from a Vertex message."""
    error = message.error.message or None
    if isinstance(message, v1.HyperparameterTuningJob):
        trials = tuple(_trial_record(t) for t in message.trials)
        goals = message.study_spec.metrics
        # proto-plus hands back a known enum value as its member, an unknown one as an int.
        goal_name = getattr(goals[0].goal, "name", "") if goals else ""
        goal = GOAL_FROM_REST.get(goal_name, MetricGoal.MAXIMIZE) if goals else None
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
    "SpecJsonError",
    "custom_job_to_proto",
    "from_proto",
    "record_from_proto",
    "spec_from_json",
    "spec_to_json",
    "to_proto",
    "tuning_job_to_proto",
]
