"""The vertex backend and the real ``JobServiceClient`` against the fake JobService."""

from __future__ import annotations

import google.auth
import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import JobServiceClient
from google.cloud.aiplatform_v1 import types as v1
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import (
    JobServiceGrpcTransport,
)

from tests.fakes.vertex_job_service import FakeJobService
from tests.jobs import samples
from vertex_training.jobs.backends import BackendKind, BackendSettings, backend_for
from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.backends.vertex import (
    EMULATOR_HOST_ENV,
    VertexBackend,
    console_url,
    job_service_client,
    label_filter,
)
from vertex_training.jobs.convert import to_proto
from vertex_training.jobs.spec import JobKind, JobState

PARENT = "projects/test-project/locations/us-central1"


@pytest.fixture(autouse=True)
def clean(clean_fake: FakeJobService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMULATOR_HOST_ENV, clean_fake.address)


@pytest.fixture
def backend() -> VertexBackend:
    return VertexBackend(
        "test-project", "us-central1", retry_initial_seconds=0.01, retry_timeout_seconds=5
    )


def client(fake: FakeJobService) -> JobServiceClient:
    channel = grpc.insecure_channel(fake.address)
    return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))


# ----------------------------------------------------------- the fake, via the client


def test_fake_speaks_the_real_client_for_both_kinds(fake: FakeJobService) -> None:
    jobs = client(fake)
    custom = jobs.create_custom_job(parent=PARENT, custom_job=to_proto(samples.cassava()))
    assert custom.name.startswith(f"{PARENT}/customJobs/")
    assert custom.state == v1.JobState.JOB_STATE_QUEUED
    tuning = jobs.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=to_proto(samples.horses_or_humans())
    )
    states = [jobs.get_hyperparameter_tuning_job(name=tuning.name).state for _ in range(4)]
    assert [v1.JobState(s).name for s in states] == [
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_SUCCEEDED",
    ]
    done = jobs.get_hyperparameter_tuning_job(name=tuning.name)
    assert len(done.trials) == 6 and done.trials[0].final_measurement.metrics[0].value > 0

    listed = jobs.list_custom_jobs(request={"parent": PARENT, "filter": 'labels.codelab="cassava"'})
    assert [j.name for j in listed] == [custom.name]
    none = jobs.list_custom_jobs(request={"parent": PARENT, "filter": 'labels.codelab="x"'})
    assert list(none) == []

    jobs.cancel_custom_job(name=custom.name)
    assert jobs.get_custom_job(name=custom.name).state == v1.JobState.JOB_STATE_CANCELLED
    jobs.delete_custom_job(name=custom.name).result(timeout=5)
    with pytest.raises(api_exceptions.NotFound):
        jobs.get_custom_job(name=custom.name)


def test_fake_refuses_what_vertex_refuses(fake: FakeJobService) -> None:
    jobs = client(fake)
    custom = jobs.create_custom_job(parent=PARENT, custom_job=to_proto(samples.cassava()))
    with pytest.raises(api_exceptions.FailedPrecondition, match="cancel it before deleting"):
        jobs.delete_custom_job(name=custom.name)
    with pytest.raises(api_exceptions.PermissionDenied):
        jobs.create_custom_job(
            parent="projects/other/locations/us-central1", custom_job=to_proto(samples.cassava())
        )
    with pytest.raises(api_exceptions.InvalidArgument, match="unsupported filter"):
        list(jobs.list_custom_jobs(request={"parent": PARENT, "filter": "state=RUNNING"}))


def test_fake_faults_are_injectable(fake: FakeJobService) -> None:
    jobs = client(fake)
    fake.inject("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED)
    with pytest.raises(api_exceptions.ResourceExhausted):
        list(jobs.list_custom_jobs(request={"parent": PARENT}, retry=None))
    assert list(jobs.list_custom_jobs(request={"parent": PARENT}, retry=None)) == []


# ------------------------------------------------------------------------ the backend


def test_submit_get_find_cancel_delete(fake: FakeJobService, backend: VertexBackend) -> None:
    record = backend.submit(samples.cassava())
    assert record.kind is JobKind.CUSTOM_JOB and record.state is JobState.QUEUED
    assert record.display_name == "multiworker-cassava"
    assert backend.get(record.name).state is JobState.PENDING
    found = backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"})
    assert found is not None and found.name == record.name
    assert backend.find(JobKind.CUSTOM_JOB, {"codelab": "other"}) is None
    assert backend.find(JobKind.HYPERPARAMETER_TUNING_JOB, {"codelab": "cassava"}) is None

    backend.cancel(record.name)
    assert backend.get(record.name).state is JobState.CANCELLED
    backend.cancel(record.name)  # already finished: fine
    backend.delete(record.name)
    backend.delete(record.name)  # already gone: fine
    backend.cancel(record.name)
    with pytest.raises(JobNotFoundError):
        backend.get(record.name)


def test_find_returns_the_newest(fake: FakeJobService, backend: VertexBackend) -> None:
    first = backend.submit(samples.cassava())
    second = backend.submit(samples.cassava())
    found = backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"})
    assert found is not None and found.name == second.name != first.name


def test_tuning_job_record(fake: FakeJobService, backend: VertexBackend) -> None:
    record = backend.submit(samples.horses_or_humans())
    assert record.kind is JobKind.HYPERPARAMETER_TUNING_JOB
    for _ in range(3):
        record = backend.get(record.name)
    assert record.state is JobState.SUCCEEDED
    assert len(record.trials) == 6 and record.best_trial is not None
    assert record.best_trial.final_metric == max(t.final_metric or 0 for t in record.trials)


def test_reads_retry_transient_errors(fake: FakeJobService, backend: VertexBackend) -> None:
    record = backend.submit(samples.cassava())
    fake.inject("GetCustomJob", grpc.StatusCode.UNAVAILABLE)
    fake.inject("GetCustomJob", grpc.StatusCode.DEADLINE_EXCEEDED)
    fake.inject("GetCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert backend.get(record.name).name == record.name
    assert fake.calls["GetCustomJob"] == 4
    fake.inject("ListCustomJobs", grpc.StatusCode.UNAVAILABLE, times=2)
    assert backend.find(JobKind.CUSTOM_JOB, {"codelab": "cassava"}) is not None
    fake.inject("CancelCustomJob", grpc.StatusCode.UNAVAILABLE)
    backend.cancel(record.name)
    assert fake.calls["CancelCustomJob"] == 2


def test_other_errors_are_not_retried(fake: FakeJobService, backend: VertexBackend) -> None:
    record = backend.submit(samples.cassava())
    fake.inject("GetCustomJob", grpc.StatusCode.PERMISSION_DENIED)
    with pytest.raises(api_exceptions.PermissionDenied):
        backend.get(record.name)
    assert fake.calls["GetCustomJob"] == 1


def test_create_is_never_retried(fake: FakeJobService, backend: VertexBackend) -> None:
    fake.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(api_exceptions.ServiceUnavailable):
        backend.submit(samples.cassava())
    assert fake.calls["CreateCustomJob"] == 1


def test_delete_refused_while_running_surfaces(
    fake: FakeJobService, backend: VertexBackend
) -> None:
    fake.hold_new_in = v1.JobState.JOB_STATE_RUNNING
    record = backend.submit(samples.cassava())
    with pytest.raises(api_exceptions.FailedPrecondition):
        backend.delete(record.name)


def test_failed_job_reports_its_error(fake: FakeJobService, backend: VertexBackend) -> None:
    fake.outcome = v1.JobState.JOB_STATE_FAILED
    record = backend.submit(samples.cassava())
    for _ in range(3):
        record = backend.get(record.name)
    assert record.state is JobState.FAILED
    assert record.error_message and "non-zero status" in record.error_message


def test_factory_builds_a_vertex_backend() -> None:
    settings = BackendSettings(BackendKind.VERTEX, project="p", location="europe-west4")
    built = backend_for(settings)
    assert isinstance(built, VertexBackend)
    assert built.parent == "projects/p/locations/europe-west4"
    assert BackendSettings.from_props(settings.to_props()) == settings
    with pytest.raises(ValueError, match="needs project and location"):
        BackendSettings(BackendKind.VERTEX, project="p")
    with pytest.raises(ValueError, match="needs local_root"):
        BackendSettings(BackendKind.LOCAL)
    with pytest.raises(ValueError, match="unknown keys"):
        BackendSettings.from_props({"kind": "vertex", "project": "p", "location": "l", "x": 1})


def test_regional_endpoint_without_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_HOST_ENV)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p"))
    built = job_service_client("asia-southeast1")
    assert built.api_endpoint == "asia-southeast1-aiplatform.googleapis.com"


def test_emulator_endpoint(fake: FakeJobService) -> None:
    built = job_service_client("us-central1")
    assert built.api_endpoint == fake.address


def test_helpers() -> None:
    assert label_filter({"b": "2", "a": "1"}) == 'labels.a="1" AND labels.b="2"'
    assert console_url("projects/p/locations/us-central1/customJobs/123") == (
        "https://console.cloud.google.com/vertex-ai/training/custom-jobs/123"
        "?project=p&region=us-central1"
    )
    assert "hyperparameter-tuning-jobs/9" in console_url(
        "projects/p/locations/us-central1/hyperparameterTuningJobs/9"
    )
