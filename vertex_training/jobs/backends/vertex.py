"""The Vertex AI backend: ``aiplatform_v1.JobServiceClient`` on the regional endpoint.

Clients are built on first use and live only as long as this backend object, which the
dynamic provider builds inside each method: nothing here is ever pickled into state.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as api_exceptions
from google.api_core import retry as api_retry
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1 import JobServiceClient
from google.protobuf import timestamp_pb2

from vertex_training._dynamic import BackendSettings
from vertex_training.jobs.backends.base import (
    JobNotFoundError,
    JobRefusedError,
    JobWaitTimeoutError,
)
from vertex_training.jobs.protos import BodyParseError, JobMessage, parse_body
from vertex_training.jobs.records import (
    JobKind,
    JobRecord,
    TrialRecord,
    best_trial,
    job_state,
    model_dir,
)

_log = logging.getLogger(__name__)
_progress = logging.getLogger("vertex_training.jobs.progress")
"""A waiting job's state changes. The engine shows a dynamic provider's stderr as it comes
(a dynamic provider has no engine connection for structured logs, pulumi/pulumi#6065), so
in the provider's process this logger writes its bare lines there: a waiting `pulumi up`
says what its jobs are doing instead of sitting silent for minutes."""

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
    try:
        return JobKind(name.split("/")[-2])
    except (ValueError, IndexError):
        raise JobNotFoundError(f"{name!r} is not a Vertex job resource name") from None


def label_filter(labels: Mapping[str, str]) -> str:
    """The list filter that matches jobs carrying every label (AIP-160 syntax)."""
    return " AND ".join(f'labels.{key}="{value}"' for key, value in sorted(labels.items()))


class VertexService:
    """What every backend on Vertex AI shares: the project and region of its settings, and
    the retry policy of its calls (transient errors, exponential backoff from
    ``retry_initial_seconds``, capped at 16 times that, for ``retry_timeout_seconds``)."""

    def __init__(self, settings: BackendSettings) -> None:
        assert settings.location  # BackendSettings holds it, and the project
        self.settings = settings
        self.location = settings.location
        self.parent = f"projects/{settings.project}/locations/{settings.location}"
        self.retry_initial = settings.retry_initial_seconds
        self.retry_timeout = settings.retry_timeout_seconds
        self.retry = api_retry.Retry(
            predicate=api_retry.if_exception_type(*TRANSIENT_ERRORS),
            initial=self.retry_initial,
            maximum=max(self.retry_initial * 16, self.retry_initial),
            multiplier=2.0,
            timeout=self.retry_timeout,
        )

    @functools.cached_property
    def local_api(self) -> str | None:
        """``http://host:port`` of the local Vertex this backend calls (looked up once per
        backend, not per poll); None on Google's."""
        return f"http://{local_address(self.settings)}" if self.settings.local_root else None


def progress_line(record: JobRecord) -> str:
    """One line of a job's progress: its state and, for a study, its trials so far."""
    line = f"{record.display_name or record.job_id} ({record.name}): {record.state.value}"
    if record.trials:
        ended = sum(t.state in ("SUCCEEDED", "INFEASIBLE") for t in record.trials)
        line += f"; trials: {len(record.trials)} started, {ended} ended"
    best = record.best_trial
    if best is not None and best.final_metrics:
        metric, value = next(iter(best.final_metrics.items()))
        line += f"; best so far: trial {best.trial_id}, {metric} {value:.4g}"
    return line


class VertexBackend(VertexService):
    """The jobs' backend: Vertex AI's JobService for one project and region, Google's or
    the local Vertex of the settings' local root."""

    @functools.cached_property
    def client(self) -> JobServiceClient:
        return service_client(JobServiceClient, self.settings)

    def _record(self, message: JobMessage) -> JobRecord:
        """The job's record; on the local Vertex, its page is the local Vertex's answer."""
        record = record_from_proto(message)
        if self.local_api:
            record = dataclasses.replace(record, console_url=f"{self.local_api}/v1/{record.name}")
        return record

    def _rpc(self, template: str, kind: JobKind) -> Callable[..., Any]:
        """The client's method for ``kind``: ``get_{}`` -> ``get_custom_job`` ..."""
        rpc: Callable[..., Any] = getattr(self.client, template.format(kind.noun))
        return rpc

    def _on(self, verb: str, name: str) -> Any:
        """The client's ``verb`` (get, cancel, delete) of the job ``name``, retried."""
        return self._rpc(f"{verb}_{{}}", _kind_of(name))(name=name, retry=self.retry)

    def submit(self, kind: JobKind, body: Mapping[str, Any]) -> JobRecord:
        """Create the job from its Vertex REST body, sent as it is (not retried: callers
        ``find`` first). Returns at once."""
        try:
            message = parse_body(kind, body)
        except BodyParseError as error:
            raise JobRefusedError(str(error)) from error
        # retry=None: a create whose answer was lost may still have made a job; the
        # caller looks for it by label (find) instead of submitting twice.
        created: JobMessage = self._rpc("create_{}", kind)(
            parent=self.parent, **{kind.noun: message}, retry=None
        )
        record = self._record(created)
        _log.info("submitted %s (%s)", record.name, record.display_name)
        return record

    def get(self, name: str) -> JobRecord:
        """Current record; raises ``JobNotFoundError`` when the job is gone."""
        try:
            return self._record(self._on("get", name))
        except api_exceptions.NotFound as error:
            raise JobNotFoundError(f"{name} not found: {error.message}") from error

    def find(self, kind: JobKind, labels: Mapping[str, str]) -> JobRecord | None:
        """The newest job of ``kind`` carrying all ``labels`` (adoption after a crash)."""
        request = {"parent": self.parent, "filter": label_filter(labels)}
        jobs = self._rpc("list_{}s", kind)(request=request, retry=self.retry)
        # The filter is the server's job; checking again keeps a lax server honest.
        found = [r for r in map(self._record, jobs) if labels.items() <= set(r.labels)]
        return max(found, key=lambda r: (r.create_time or "", r.name), default=None)

    def cancel(self, name: str) -> None:
        """Ask the job to stop; a job already terminal or gone is fine."""
        try:
            self._on("cancel", name)
        except api_exceptions.NotFound:
            _log.info("cancel: %s is already gone", name)
        except api_exceptions.FailedPrecondition as error:
            # Vertex answers FAILED_PRECONDITION for a job that already finished.
            _log.info("cancel: %s not cancellable (%s)", name, error.message)

    def delete(self, name: str) -> None:
        """Remove the job; a job already gone is fine. Callers cancel and wait first."""
        try:
            operation = self._on("delete", name)
        except api_exceptions.NotFound:
            _log.info("delete: %s is already gone", name)
            return
        operation.result(timeout=300)

    def wait(
        self,
        name: str,
        timeout: float,
        poll_seconds: float = 0.1,
        *,
        hint: str = "",
        report: bool = False,
    ) -> JobRecord:
        """Poll ``get`` every ``poll_seconds`` until the job ends; the last record. Raises
        ``JobWaitTimeoutError`` (ending with ``hint``) when ``timeout`` s pass first. With
        ``report``, ``_progress`` gets the job's :func:`progress_line` whenever it changes."""
        if report and not _progress.handlers:  # once per provider process
            _progress.addHandler(logging.StreamHandler())  # stderr, the bare message
            _progress.setLevel(logging.INFO)
            _progress.propagate = False
        deadline = time.monotonic() + timeout
        last_line = ""
        while True:
            record = self.get(name)
            line = progress_line(record)
            if report and line != last_line:
                _progress.info(line)
                last_line = line
            if record.state.is_terminal:
                return record
            if time.monotonic() >= deadline:
                where = f" {record.console_url}" if record.console_url else ""
                raise JobWaitTimeoutError(
                    f"{name} is still {record.state.value} after {timeout:.0f} s; {hint}{where}"
                )
            time.sleep(poll_seconds)


def console_url(name: str) -> str | None:
    """The Cloud console page of a job resource name ``projects/P/locations/L/<kind>/ID``."""
    parts = name.split("/")
    if len(parts) != 6:
        return None
    _, project, _, location, collection, job_id = parts
    page = JobKind(collection).noun.replace("_", "-") + "s"
    return (
        f"https://console.cloud.google.com/vertex-ai/training/{page}/{job_id}"
        f"?project={project}&region={location}"
    )


def _timestamp(value: Any) -> str | None:
    """RFC 3339 text of a proto-plus timestamp (a ``DatetimeWithNanoseconds``)."""
    if value is None:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    if stamp.seconds == 0 and stamp.nanos == 0:
        return None
    return stamp.ToJsonString()


def trial_record(trial: v1.Trial) -> TrialRecord:
    """A trial as the service reports it: every metric of the final measurement by id,
    parameter values as given (struct numbers are doubles: 64.0 stays 64.0)."""
    state = v1.Trial.State(trial.state)
    stopped = state == v1.Trial.State.STOPPING
    ended = _timestamp(trial.end_time)
    return TrialRecord(
        trial_id=trial.id,
        # A stopped trial that has ended (the local Vertex keeps it STOPPING) succeeded.
        state="SUCCEEDED" if stopped and ended else state.name,
        parameters={p.parameter_id: p.value for p in trial.parameters},
        final_metrics={m.metric_id: m.value for m in trial.final_measurement.metrics},
        infeasible_reason=trial.infeasible_reason or None,
        # Vizier ends an automatically stopped trial SUCCEEDED before its last step:
        # the service marks it only through the STOPPING state it passes through.
        early_stopped=stopped,
        start_time=_timestamp(trial.start_time),
        end_time=ended,
    )


def record_from_proto(message: JobMessage) -> JobRecord:
    """What the backend reports of a job, from the service's own message. Vertex
    sets AIP_MODEL_DIR to <base>/model, and to <base>/<trial id>/model in trials: a tuning
    job's model is the best trial's."""
    trials: tuple[TrialRecord, ...] = ()
    best = None
    if isinstance(message, v1.HyperparameterTuningJob):
        kind = JobKind.HYPERPARAMETER_TUNING_JOB
        trials = tuple(trial_record(t) for t in message.trials)
        metrics = message.study_spec.metrics
        if metrics:  # the study's objective: its first metric and that metric's goal
            maximize = metrics[0].goal == v1.StudySpec.MetricSpec.GoalType.MAXIMIZE
            best = best_trial(trials, metrics[0].metric_id, maximize)
        base = message.trial_job_spec.base_output_directory.output_uri_prefix
        model = model_dir(base, best.trial_id) if best else None
        web: dict[str, str] = {}
    else:
        kind = JobKind.CUSTOM_JOB
        model = model_dir(message.job_spec.base_output_directory.output_uri_prefix, None)
        web = dict(message.web_access_uris)
    return JobRecord(
        name=message.name,
        kind=kind,
        display_name=message.display_name,
        state=job_state(getattr(message.state, "name", "")),
        labels=tuple(sorted(message.labels.items())),
        create_time=_timestamp(message.create_time),
        start_time=_timestamp(message.start_time),
        end_time=_timestamp(message.end_time),
        error_message=message.error.message or None,
        model_dir=model,
        trials=trials,
        best_trial=best,
        web_access_uris=web,
        console_url=console_url(message.name),
    )


def local_address(settings: BackendSettings) -> str | None:
    """``host:port`` of the Vertex AI that answers plaintext gRPC for ``settings``: the local
    Vertex of its local root (started when none runs), or the emulator named by
    ``VERTEX_AI_EMULATOR_HOST``; None for Google's."""
    if settings.local_root:
        from vertex_training._local_vertex import ensure_server

        assert settings.project and settings.location
        return ensure_server(Path(settings.local_root), settings.project, settings.location)
    return os.environ.get(EMULATOR_HOST_ENV)


def service_client(client_type: type[T], settings: BackendSettings) -> T:
    """A Vertex AI client (``client_type``) on ``{location}-aiplatform.googleapis.com``, or
    on the local Vertex (``local_address``) over plaintext gRPC with anonymous credentials
    (through the service's own gRPC transport)."""
    gapic: Any = client_type  # every GAPIC client class: get_transport_class, transport=
    emulator = local_address(settings)
    if emulator:
        transport = gapic.get_transport_class("grpc")(
            host=emulator,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            channel=grpc.insecure_channel(emulator),
        )
        client: T = gapic(transport=transport)
    else:
        assert settings.location
        client = gapic(client_options={"api_endpoint": regional_endpoint(settings.location)})
    return client


__all__ = [
    "EMULATOR_HOST_ENV",
    "VertexBackend",
    "VertexService",
    "console_url",
    "label_filter",
    "local_address",
    "progress_line",
    "record_from_proto",
    "regional_endpoint",
    "service_client",
]
