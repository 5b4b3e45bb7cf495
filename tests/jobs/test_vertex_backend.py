"""The vertex backend and the real ``JobServiceClient`` against the local Vertex, with
faults injected around it (tests.fakes.faults)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import google.auth
import grpc
import pytest
from google.api import field_behavior_pb2
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import JobServiceClient
from google.cloud.aiplatform_v1 import types as v1
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import (
    JobServiceGrpcTransport,
)
from google.protobuf import duration_pb2, json_format, message_factory, timestamp_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bodies import cassava, horses_or_humans, standin
from tests.fakes.faults import FaultyVertex, ended
from tests.fakes.settings import PARENT, vertex_settings
from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training._dynamic import BackendKind, BackendSettings
from vertex_training.jobs.backends.base import JobNotFoundError, JobRefusedError
from vertex_training.jobs.backends.vertex import (
    EMULATOR_HOST_ENV,
    VertexBackend,
    console_url,
    label_filter,
    record_from_proto,
    service_client,
)
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind, JobState

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def quick(*args: str) -> dict[str, Any]:
    """The cassava job, its replicas the stand-in trainer with ``args``."""
    return standin(cassava(accelerator=None), *args)


@pytest.fixture
def backend(vertex: FaultyVertex) -> VertexBackend:
    return VertexBackend(vertex_settings(retry_timeout_seconds=5))


def client(vertex: FaultyVertex) -> JobServiceClient:
    channel = grpc.insecure_channel(vertex.address)
    return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))


# ------------------------------------------------------------- the faults, via the client


@pytest.mark.slow
def test_faults_are_injectable(vertex: FaultyVertex) -> None:
    jobs = client(vertex)
    vertex.inject("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED)
    with pytest.raises(api_exceptions.ResourceExhausted, match="injected"):
        list(jobs.list_custom_jobs(request={"parent": PARENT}, retry=None))
    assert list(jobs.list_custom_jobs(request={"parent": PARENT}, retry=None)) == []
    assert vertex.calls["ListCustomJobs"] == 2
    # After the effect: the job is made, the answer lost.
    vertex.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    with pytest.raises(api_exceptions.ServiceUnavailable):
        jobs.create_custom_job(parent=PARENT, custom_job=parse_body(CUSTOM, quick()), retry=None)
    (made,) = vertex.job_names()
    # A slow operation: answered before it is done, the client polls it to its end.
    ended(vertex.vertex.runner, made)
    vertex.inject("DeleteCustomJob", unfinished=True)
    operation = jobs.delete_custom_job(name=made)
    assert not operation.operation.done
    operation.result(timeout=10)
    assert vertex.job_names() == [] and vertex.calls["GetOperation"] >= 1


@pytest.mark.slow
def test_the_local_vertex_refuses_what_vertex_refuses(vertex: FaultyVertex) -> None:
    jobs = client(vertex)
    custom = jobs.create_custom_job(
        parent=PARENT, custom_job=parse_body(CUSTOM, quick("--sleep", "60"))
    )
    with pytest.raises(api_exceptions.FailedPrecondition, match="cancel it"):
        jobs.delete_custom_job(name=custom.name)
    with pytest.raises(api_exceptions.PermissionDenied):
        jobs.create_custom_job(
            parent="projects/other/locations/us-central1", custom_job=parse_body(CUSTOM, quick())
        )
    with pytest.raises(api_exceptions.InvalidArgument, match="filter"):
        list(jobs.list_custom_jobs(request={"parent": PARENT, "filter": "state=RUNNING"}))


# ------------------------------------------------------------------------ the backend


@pytest.mark.slow
def test_submit_get_find_cancel_delete(vertex: FaultyVertex, backend: VertexBackend) -> None:
    record = backend.submit(CUSTOM, quick("--sleep", "60"))
    assert record.kind is JobKind.CUSTOM_JOB and not record.state.is_terminal
    assert record.display_name == "multiworker-cassava"
    assert backend.get(record.name).name == record.name
    found = backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"})
    assert found is not None and found.name == record.name
    assert backend.find(JobKind.CUSTOM_JOB, {"codelab": "other"}) is None
    assert backend.find(JobKind.HYPERPARAMETER_TUNING_JOB, {"codelab": "cassava"}) is None

    backend.cancel(record.name)
    assert backend.wait(record.name, timeout=30).state is JobState.CANCELLED
    backend.cancel(record.name)  # already finished (FAILED_PRECONDITION): fine
    backend.delete(record.name)
    backend.delete(record.name)  # already gone: fine
    backend.cancel(record.name)
    with pytest.raises(JobNotFoundError):
        backend.get(record.name)
    assert vertex.calls["CancelCustomJob"] == 3


def test_find_returns_the_newest(vertex: FaultyVertex, backend: VertexBackend) -> None:
    first = backend.submit(CUSTOM, quick())
    second = backend.submit(CUSTOM, quick())
    found = backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"})
    assert found is not None and found.name == second.name != first.name


@pytest.mark.slow
def test_tuning_job_record(vertex: FaultyVertex, backend: VertexBackend) -> None:
    body = standin(horses_or_humans(max_trials=4), "--steps", "2")
    body["studySpec"]["parameters"][0]["parameterId"] = "x"  # the stand-in's landscape
    record = backend.submit(TUNING, body)
    assert record.kind is JobKind.HYPERPARAMETER_TUNING_JOB
    record = backend.wait(record.name, timeout=60, poll_seconds=0.05)
    assert record.state is JobState.SUCCEEDED
    assert len(record.trials) == 4 and record.best_trial is not None
    scores = [t.final_metrics[HYPERTUNE_METRIC_TAG] for t in record.trials]
    assert len(set(scores)) == 4
    assert record.best_trial.final_metrics[HYPERTUNE_METRIC_TAG] == max(scores)
    assert record.model_dir == (
        f"gs://p-bucket/jobs/horses-humans/{record.best_trial.trial_id}/model"
    )


def test_submit_refuses_a_body_the_protos_refuse(
    vertex: FaultyVertex, backend: VertexBackend
) -> None:
    body = cassava()
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorTyp"] = "NVIDIA_TESLA_T4"
    with pytest.raises(JobRefusedError, match="did you mean 'acceleratorType'"):
        backend.submit(CUSTOM, body)
    assert vertex.calls["CreateCustomJob"] == 0


def test_reads_retry_transient_errors(vertex: FaultyVertex, backend: VertexBackend) -> None:
    record = backend.submit(CUSTOM, quick("--sleep", "60"))
    vertex.inject("GetCustomJob", grpc.StatusCode.UNAVAILABLE)
    vertex.inject("GetCustomJob", grpc.StatusCode.DEADLINE_EXCEEDED)
    vertex.inject("GetCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert backend.get(record.name).name == record.name
    assert vertex.calls["GetCustomJob"] == 4
    vertex.inject("ListCustomJobs", grpc.StatusCode.UNAVAILABLE, times=2)
    assert backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"}) is not None
    assert vertex.calls["ListCustomJobs"] == 3
    vertex.inject("CancelCustomJob", grpc.StatusCode.UNAVAILABLE)
    backend.cancel(record.name)
    assert vertex.calls["CancelCustomJob"] == 2


def test_other_errors_are_not_retried(vertex: FaultyVertex, backend: VertexBackend) -> None:
    record = backend.submit(CUSTOM, quick())
    vertex.inject("GetCustomJob", grpc.StatusCode.PERMISSION_DENIED)
    with pytest.raises(api_exceptions.PermissionDenied):
        backend.get(record.name)
    assert vertex.calls["GetCustomJob"] == 1


def test_create_is_never_retried(vertex: FaultyVertex, backend: VertexBackend) -> None:
    vertex.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(api_exceptions.ServiceUnavailable):
        backend.submit(CUSTOM, quick())
    assert vertex.calls["CreateCustomJob"] == 1 and vertex.job_names() == []


def test_delete_refused_while_running_surfaces(
    vertex: FaultyVertex, backend: VertexBackend
) -> None:
    record = backend.submit(CUSTOM, quick("--sleep", "60"))
    with pytest.raises(api_exceptions.FailedPrecondition):
        backend.delete(record.name)


@pytest.mark.slow
def test_failed_job_reports_its_error(vertex: FaultyVertex, backend: VertexBackend) -> None:
    record = backend.submit(CUSTOM, quick("--exit-code", "1"))
    record = backend.wait(record.name, timeout=30, poll_seconds=0.05)
    assert record.state is JobState.FAILED
    # Vertex's words; the local Vertex adds where the log is and its tail. The chief and its
    # worker both exit 1: whichever the supervisor sees first is named.
    assert re.match(
        r"The replica workerpool[01]-0 exited with a non-zero status of 1\. "
        r"Termination reason: Error\.",
        record.error_message or "",
    )
    assert "failing on purpose: boom" in record.error_message


def test_the_provider_builds_a_vertex_backend() -> None:
    from vertex_training.jobs.records import JobKind
    from vertex_training.jobs.resources import JobProvider

    settings = BackendSettings(BackendKind.VERTEX, project="p", location="europe-west4")
    built = JobProvider(JobKind.CUSTOM_JOB).backend({"backend": settings.to_props()})
    assert isinstance(built, VertexBackend)
    assert built.parent == "projects/p/locations/europe-west4"
    assert BackendSettings.from_props(settings.to_props()) == settings
    with pytest.raises(ValueError, match="needs project and location"):
        BackendSettings(BackendKind.VERTEX, project="p")
    with pytest.raises(ValueError, match="needs local_root"):
        BackendSettings(BackendKind.LOCAL, project="p", location="us-central1")
    with pytest.raises(ValueError, match="unknown keys"):
        BackendSettings.from_props({"kind": "vertex", "project": "p", "location": "l", "x": 1})


def test_regional_endpoint_without_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_HOST_ENV, raising=False)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p"))
    settings = BackendSettings(BackendKind.VERTEX, project="p", location="asia-southeast1")
    built = service_client(JobServiceClient, settings)
    assert built.api_endpoint == "asia-southeast1-aiplatform.googleapis.com"


def test_emulator_endpoint(vertex: FaultyVertex) -> None:
    settings = BackendSettings(BackendKind.VERTEX, project="p", location="us-central1")
    built = service_client(JobServiceClient, settings)
    assert built.api_endpoint == vertex.address


def test_helpers() -> None:
    assert label_filter({"b": "2", "a": "1"}) == 'labels.a="1" AND labels.b="2"'
    assert console_url("projects/p/locations/us-central1/customJobs/123") == (
        "https://console.cloud.google.com/vertex-ai/training/custom-jobs/123"
        "?project=p&region=us-central1"
    )
    tuning = console_url("projects/p/locations/us-central1/hyperparameterTuningJobs/9")
    assert tuning is not None and "hyperparameter-tuning-jobs/9" in tuning


# ------------------------------------------------- records from the service's messages


def _trial(
    trial_id: str,
    state: str,
    *,
    accuracy: float | None = None,
    latency: float | None = None,
    units: float = 64.0,
    **extra: object,
) -> v1.Trial:
    trial = v1.Trial(
        id=trial_id,
        state=getattr(v1.Trial.State, state),
        parameters=[
            v1.Trial.Parameter(parameter_id="units", value=units),
            v1.Trial.Parameter(parameter_id="optimizer", value="adam"),
        ],
        start_time=dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC),
        end_time=dt.datetime(2026, 1, 1, 11, 30, tzinfo=dt.UTC),
        **extra,
    )
    if accuracy is not None and latency is not None:
        # The service lists metrics in no particular order: latency first here.
        trial.final_measurement = v1.Measurement(
            step_count=10,
            metrics=[
                v1.Measurement.Metric(metric_id="latency", value=latency),
                v1.Measurement.Metric(metric_id="accuracy", value=accuracy),
            ],
        )
    return trial


def test_best_trial_follows_the_study_objective_not_the_first_listed_metric() -> None:
    job = parse_body(TUNING, horses_or_humans())
    assert isinstance(job, v1.HyperparameterTuningJob)
    job.name = f"{PARENT}/hyperparameterTuningJobs/7"
    job.state = v1.JobState.JOB_STATE_SUCCEEDED  # type: ignore[assignment]
    job.study_spec.metrics = [
        v1.StudySpec.MetricSpec(metric_id="accuracy", goal="MAXIMIZE"),
        v1.StudySpec.MetricSpec(metric_id="latency", goal="MINIMIZE"),
    ]
    job.trials = [
        _trial("1", "SUCCEEDED", accuracy=0.70, latency=5.0),  # best latency
        _trial("2", "SUCCEEDED", accuracy=0.95, latency=40.0, units=128.0),  # best accuracy
        _trial("3", "SUCCEEDED", accuracy=0.80, latency=1000.0),  # worst latency
        _trial("4", "INFEASIBLE", infeasible_reason="OOM at batch 64"),
    ]
    record = record_from_proto(job)
    assert record.best_trial is not None and record.best_trial.trial_id == "2"
    assert record.model_dir == "gs://p-bucket/jobs/horses-humans/2/model"
    assert record.console_url is not None and "hyperparameter-tuning-jobs/7" in record.console_url
    first, best, _, infeasible = record.trials
    assert first.final_metrics == {"latency": 5.0, "accuracy": 0.70}
    # Whole-number doubles stay doubles: the trainer gets --units=64.0 as the service sends.
    assert best.parameters == {"units": 128.0, "optimizer": "adam"}
    assert isinstance(first.parameters["units"], float)
    assert (first.start_time, first.end_time) == ("2026-01-01T10:00:00Z", "2026-01-01T11:30:00Z")
    assert infeasible.state == "INFEASIBLE"
    assert infeasible.infeasible_reason == "OOM at batch 64"
    assert infeasible.final_metrics == {}


def test_a_minimized_objective_picks_the_lowest() -> None:
    job = parse_body(TUNING, horses_or_humans())
    assert isinstance(job, v1.HyperparameterTuningJob)
    job.name = f"{PARENT}/hyperparameterTuningJobs/8"
    job.study_spec.metrics = [v1.StudySpec.MetricSpec(metric_id="latency", goal="MINIMIZE")]
    job.trials = [
        _trial("1", "SUCCEEDED", accuracy=0.70, latency=5.0),
        _trial("2", "SUCCEEDED", accuracy=0.95, latency=40.0),
    ]
    record = record_from_proto(job)
    assert record.best_trial is not None and record.best_trial.trial_id == "1"


# ----------------------------------- fidelity: any settable field reaches the service


def _behaviours(field: FieldDescriptor) -> list[int]:
    return list(field.GetOptions().Extensions[field_behavior_pb2.field_behavior])


_SKIPPED_TYPES = {
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.Any",
    "google.protobuf.FieldMask",
}
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_MAX_DEPTH = 7
_SERVICE_SET = {
    # Set by the service, whatever the descriptor's annotations say.
    "name",
    "state",
    "create_time",
    "update_time",
    "start_time",
    "end_time",
    "trials",
    "error",
    "web_access_uris",
}


def _settable(descriptor: Descriptor, depth: int) -> list[FieldDescriptor]:
    return [
        f
        for f in descriptor.fields
        if field_behavior_pb2.OUTPUT_ONLY not in _behaviours(f)
        and not (depth == 0 and f.name in _SERVICE_SET)
        and not (
            f.type == FieldDescriptor.TYPE_MESSAGE
            and (
                f.message_type.full_name in _SKIPPED_TYPES
                or (depth >= _MAX_DEPTH and not f.message_type.GetOptions().map_entry)
            )
        )
    ]


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return st.integers(low, high)
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == FieldDescriptor.TYPE_FLOAT:
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=8)
    if kind == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values])
    return st.text(max_size=8)


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.type != FieldDescriptor.TYPE_MESSAGE:
        return _scalar(field)
    name = field.message_type.full_name
    if name == "google.protobuf.Duration":
        return st.builds(
            lambda s, n: duration_pb2.Duration(seconds=s, nanos=n),
            st.integers(0, 315_576_000_000),
            st.integers(0, 999_999_999),
        )
    if name == "google.protobuf.Timestamp":
        return st.builds(
            lambda s, n: timestamp_pb2.Timestamp(seconds=s, nanos=n),
            st.integers(0, 253_402_300_799),
            st.integers(0, 999_999_999),
        )
    return _message(field.message_type, depth + 1)


def _message(descriptor: Descriptor, depth: int) -> st.SearchStrategy[Any]:
    """A message of ``descriptor`` with any subset of its settable fields set (at most
    one per oneof), output-only fields left to the service."""
    cls = message_factory.GetMessageClass(descriptor)
    fields = _settable(descriptor, depth)

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        message = cls()
        taken: set[str] = set()
        for field in fields:
            oneof = (
                field.real_containing_oneof
                if hasattr(field, "real_containing_oneof")
                else (field.containing_oneof)
            )
            if oneof is not None and oneof.name in taken:
                continue
            if not draw(st.booleans()):
                continue
            if oneof is not None:
                taken.add(oneof.name)
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                key_field = field.message_type.fields_by_name["key"]
                value_field = field.message_type.fields_by_name["value"]
                entries = draw(
                    st.dictionaries(_scalar(key_field), _value(value_field, depth), max_size=2)
                )
                target = getattr(message, field.name)
                for k, v in entries.items():
                    if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                        target[k].CopyFrom(v)
                    else:
                        target[k] = v
            elif field.label == FieldDescriptor.LABEL_REPEATED:
                items = draw(st.lists(_value(field, depth), min_size=1, max_size=2))
                target = getattr(message, field.name)
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    for item in items:
                        target.add().CopyFrom(item)
                else:
                    target.extend(items)
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                getattr(message, field.name).CopyFrom(draw(_value(field, depth)))
            else:
                setattr(message, field.name, draw(_value(field, depth)))
        return message

    return build()


@pytest.mark.parametrize("kind", [CUSTOM, TUNING])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_settable_field_reaches_the_service_unchanged(
    vertex: FaultyVertex, backend: VertexBackend, kind: JobKind, data: st.DataObject
) -> None:
    """What the service receives, refused before it runs (a drawn body runs nowhere)."""
    cls = v1.CustomJob if kind is CUSTOM else v1.HyperparameterTuningJob
    generated = data.draw(_message(cls.pb().DESCRIPTOR, 0))
    body = json_format.MessageToDict(generated)
    create = "CreateCustomJob" if kind is CUSTOM else "CreateHyperparameterTuningJob"
    vertex.inject(create, grpc.StatusCode.INVALID_ARGUMENT)
    with pytest.raises(api_exceptions.InvalidArgument, match="injected"):
        backend.submit(kind, body)
    request = vertex.requests[create][-1]
    received = request.custom_job if kind is CUSTOM else request.hyperparameter_tuning_job
    assert json_format.MessageToDict(type(received).pb(received)) == body
