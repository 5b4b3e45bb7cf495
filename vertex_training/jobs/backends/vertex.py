"""The Vertex AI backend: ``aiplatform_v1.JobServiceClient`` on the regional endpoint.

Clients are built on first use and live only as long as this backend object, which the
dynamic provider builds inside each method: nothing here is ever pickled into state.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.api_core import retry as api_retry
from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import JobServiceClient
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import (
    JobServiceGrpcTransport,
)

from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.convert import custom_job_to_proto, record_from_proto, tuning_job_to_proto
from vertex_training.jobs.rest import console_url
from vertex_training.jobs.spec import JobKind, JobRecord, JobSpec, TuningJobSpec

_log = logging.getLogger(__name__)

EMULATOR_HOST_ENV = "VERTEX_AI_EMULATOR_HOST"
"""``host:port`` of a JobService speaking plaintext gRPC (emulators, tests); like
``STORAGE_EMULATOR_HOST`` for Cloud Storage."""

TRANSIENT_ERRORS = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.DeadlineExceeded,
    api_exceptions.TooManyRequests,  # RESOURCE_EXHAUSTED: quota, retry after backoff
)

T = TypeVar("T")


def regional_endpoint(location: str) -> str:
    return f"{location}-aiplatform.googleapis.com"


def _kind_of(name: str) -> JobKind:
    collection = name.split("/")[-2] if name.count("/") >= 1 else ""
    try:
        return JobKind(collection)
    except ValueError:
        raise JobNotFoundError(f"{name!r} is not a Vertex job resource name") from None


def label_filter(labels: Mapping[str, str]) -> str:
    """The list filter that matches jobs carrying every label (AIP-160 syntax)."""
    return " AND ".join(f'labels.{key}="{value}"' for key, value in sorted(labels.items()))


class VertexBackend:
    """``JobBackend`` on Vertex AI for one project and region."""

    def __init__(
        self,
        project: str,
        location: str,
        *,
        retry_initial_seconds: float = 1.0,
        retry_timeout_seconds: float = 120.0,
    ) -> None:
        if not project:
            raise ValueError("project: the vertex backend needs a Google Cloud project id")
        if not location:
            raise ValueError("location: the vertex backend needs a region, e.g. us-central1")
        self.project = project
        self.location = location
        self.retry = api_retry.Retry(
            predicate=api_retry.if_exception_type(*TRANSIENT_ERRORS),
            initial=retry_initial_seconds,
            maximum=max(retry_initial_seconds * 16, retry_initial_seconds),
            multiplier=2.0,
            timeout=retry_timeout_seconds,
        )
        self._client: JobServiceClient | None = None

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    @property
    def client(self) -> JobServiceClient:
        if self._client is None:
            self._client = job_service_client(self.location)
        return self._client

    # The protocol -----------------------------------------------------------------

    def submit(self, spec: JobSpec) -> JobRecord:
        # retry=None: a create whose answer was lost may still have made a job; the
        # caller looks for it by label (find) instead of submitting twice.
        if isinstance(spec, TuningJobSpec):
            tuning = self.client.create_hyperparameter_tuning_job(
                parent=self.parent,
                hyperparameter_tuning_job=tuning_job_to_proto(spec),
                retry=None,
            )
            record = record_from_proto(tuning)
        else:
            custom = self.client.create_custom_job(
                parent=self.parent, custom_job=custom_job_to_proto(spec), retry=None
            )
            record = record_from_proto(custom)
        _log.info("submitted %s (%s)", record.name, spec.display_name)
        return record

    def get(self, name: str) -> JobRecord:
        kind = _kind_of(name)
        getter: Callable[..., Any] = (
            self.client.get_custom_job
            if kind is JobKind.CUSTOM_JOB
            else self.client.get_hyperparameter_tuning_job
        )
        try:
            return record_from_proto(getter(name=name, retry=self.retry))
        except api_exceptions.NotFound as error:
            raise JobNotFoundError(f"{name} not found: {error.message}") from error

    def find(self, kind: JobKind, labels: Mapping[str, str]) -> JobRecord | None:
        lister: Callable[..., Any] = (
            self.client.list_custom_jobs
            if kind is JobKind.CUSTOM_JOB
            else self.client.list_hyperparameter_tuning_jobs
        )
        pager = lister(
            request={"parent": self.parent, "filter": label_filter(labels)}, retry=self.retry
        )
        # The filter is the server's job; checking again keeps a lax server honest.
        records = [
            record_from_proto(job)
            for job in pager
            if all(job.labels.get(k) == v for k, v in labels.items())
        ]
        if not records:
            return None
        return max(records, key=lambda r: (r.create_time or "", r.name))

    def cancel(self, name: str) -> None:
        kind = _kind_of(name)
        canceller: Callable[..., Any] = (
            self.client.cancel_custom_job
            if kind is JobKind.CUSTOM_JOB
            else self.client.cancel_hyperparameter_tuning_job
        )
        try:
            canceller(name=name, retry=self.retry)
        except api_exceptions.NotFound:
            _log.info("cancel: %s is already gone", name)
        except api_exceptions.FailedPrecondition as error:
            # Vertex answers FAILED_PRECONDITION for a job that already finished.
            _log.info("cancel: %s not cancellable (%s)", name, error.message)

    def delete(self, name: str) -> None:
        kind = _kind_of(name)
        deleter: Callable[..., Any] = (
            self.client.delete_custom_job
            if kind is JobKind.CUSTOM_JOB
            else self.client.delete_hyperparameter_tuning_job
        )
        try:
            operation = deleter(name=name, retry=self.retry)
        except api_exceptions.NotFound:
            _log.info("delete: %s is already gone", name)
            return
        operation.result(timeout=300)


def job_service_client(location: str) -> JobServiceClient:
    """A client on ``{location}-aiplatform.googleapis.com``, or on the emulator named by
    ``VERTEX_AI_EMULATOR_HOST`` over plaintext gRPC with anonymous credentials."""
    emulator = os.environ.get(EMULATOR_HOST_ENV)
    if emulator:
        transport = JobServiceGrpcTransport(
            host=emulator,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            channel=grpc.insecure_channel(emulator),
        )
        return JobServiceClient(transport=transport)
    return JobServiceClient(client_options={"api_endpoint": regional_endpoint(location)})


__all__ = [
    "EMULATOR_HOST_ENV",
    "VertexBackend",
    "console_url",
    "job_service_client",
    "label_filter",
    "regional_endpoint",
]
