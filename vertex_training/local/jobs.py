"""The local Vertex's JobService: CustomJobs and HyperparameterTuningJobs run by the local
job runner (one process per replica, studies on Optuna), answered in Vertex's own messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import empty_pb2, json_format

from vertex_training.jobs.backends.base import JobNotFoundError, JobRefusedError
from vertex_training.jobs.records import JobKind, JobRecord, JobState, TrialRecord
from vertex_training.local.names import Names, page, parse_label_filter, runs_here
from vertex_training.local.operations import Operations
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.wire import ServiceError

_MESSAGE: dict[JobKind, Any] = {
    JobKind.CUSTOM_JOB: v1.CustomJob,
    JobKind.HYPERPARAMETER_TUNING_JOB: v1.HyperparameterTuningJob,
}
_FIELD = {
    JobKind.CUSTOM_JOB: "custom_job",
    JobKind.HYPERPARAMETER_TUNING_JOB: "hyperparameter_tuning_job",
}
_LIST = {
    JobKind.CUSTOM_JOB: (v1.ListCustomJobsResponse, "custom_jobs"),
    JobKind.HYPERPARAMETER_TUNING_JOB: (
        v1.ListHyperparameterTuningJobsResponse,
        "hyperparameter_tuning_jobs",
    ),
}


def _trial(trial: TrialRecord) -> dict[str, Any]:
    """A trial as Vertex reports it. Vizier ends an automatically stopped trial through
    STOPPING: an early-stopped trial keeps that state, so that clients can tell."""
    return {
        "id": trial.trial_id,
        "state": "STOPPING" if trial.early_stopped else trial.state,
        "parameters": [{"parameterId": k, "value": v} for k, v in trial.parameters.items()],
        "finalMeasurement": {
            "metrics": [{"metricId": k, "value": v} for k, v in trial.final_metrics.items()]
        },
        **({"infeasibleReason": trial.infeasible_reason} if trial.infeasible_reason else {}),
        **{k: v for k, v in (("startTime", trial.start_time), ("endTime", trial.end_time)) if v},
    }


class JobService:
    """``google.cloud.aiplatform.v1.JobService``: what the project and Vertex's clients use of
    it. The runner's store keeps each job's body as created; a job's message is that body
    with what the runner knows of it now (state, times, error, trials)."""

    def __init__(self, names: Names, operations: Operations, runner: JobRunner) -> None:
        self.names = names
        self.operations = operations
        self.runner = runner

    def __getattr__(self, method: str) -> Callable[[Any], Any]:
        """``create_custom_job``, ``get_hyperparameter_tuning_job`` ...: one implementation
        per verb, for both kinds."""
        for kind, noun in _FIELD.items():
            verb, _, rest = method.partition("_")
            if rest in (noun, noun + "s"):
                return lambda request: getattr(self, f"_{verb}")(kind, request)
        raise AttributeError(method)

    def _message(self, kind: JobKind, record: JobRecord) -> Any:
        body = self.runner.job_body(record.name)
        stamps = (("createTime", record.create_time), ("startTime", record.start_time))
        body |= {k: v for k, v in (*stamps, ("endTime", record.end_time)) if v}
        body |= {
            "name": record.name,
            "state": f"JOB_STATE_{record.state.value}",
            "labels": dict(record.labels),
            "displayName": record.display_name,
        }
        if record.error_message:
            cancelled = record.state is JobState.CANCELLED
            body["error"] = {"code": 1 if cancelled else 3, "message": record.error_message}
        if kind is JobKind.HYPERPARAMETER_TUNING_JOB:
            body["trials"] = [_trial(t) for t in record.trials]
        message = _MESSAGE[kind]()
        json_format.ParseDict(body, _MESSAGE[kind].pb(message), ignore_unknown_fields=False)
        return message

    def _create(self, kind: JobKind, request: Any) -> Any:
        self.names.check_parent(request.parent)
        job = getattr(request, _FIELD[kind])
        body = json_format.MessageToDict(type(job).pb(job))
        self._judge(kind, body)
        runs_here(job, _FIELD[kind])
        try:
            record = self.runner.submit(kind, body)
        except JobRefusedError as error:  # what cannot start here (an image, a pool)
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT, f"{_FIELD[kind]}: {error}"
            ) from error
        return self._message(kind, record)

    @staticmethod
    def _judge(kind: JobKind, body: dict[str, Any]) -> None:
        """What Vertex refuses of a job, by the rules our providers judge it with at
        preview (no region: this machine has no availability to check)."""
        from vertex_training.jobs.rules.job import job_findings
        from vertex_training.jobs.view import read_view

        view, found = read_view(kind, body)
        if view is not None:
            found += job_findings(view)
        if errors := [f for f in found if f.severity == "error"]:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "; ".join(f"{_FIELD[kind]}.{finding}" for finding in errors),
            )

    def _record(self, kind: JobKind, name: str) -> JobRecord:
        """The job as it is now. One whose local supervisor died (killed, or the machine
        went down) goes on where it stopped: Vertex, too, runs its jobs to their end."""
        self.names.resource_id(name, kind.value)
        try:
            return self.runner.resume_interrupted(name) or self.runner.get(name)
        except JobNotFoundError as error:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"name: {name} not found") from error

    def _get(self, kind: JobKind, request: Any) -> Any:
        return self._message(kind, self._record(kind, request.name))

    def _list(self, kind: JobKind, request: Any) -> Any:
        self.names.check_parent(request.parent)
        labels = parse_label_filter(request.filter)
        records = [
            self.runner.resume_interrupted(r.name) or r
            for r in self.runner.records()
            if r.kind is kind and set(labels.items()) <= set(r.labels)
        ]
        records.sort(key=lambda r: (r.create_time or "", r.name), reverse=True)
        response_type, field = _LIST[kind]
        chosen, token = page(records, request.page_size, request.page_token)
        return response_type(
            {field: [self._message(kind, r) for r in chosen], "next_page_token": token}
        )

    def _cancel(self, kind: JobKind, request: Any) -> empty_pb2.Empty:
        record = self._record(kind, request.name)
        if record.state.is_terminal:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{request.name} is {record.state.value}: only a job that has not ended can be "
                "cancelled",
            )
        self.runner.cancel(record.name)
        return empty_pb2.Empty()

    def _delete(self, kind: JobKind, request: Any) -> Any:
        record = self._record(kind, request.name)
        if not record.state.is_terminal:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{request.name} is {record.state.value}: cancel it and wait for it to end "
                "before deleting it",
            )
        return self.operations.run(
            lambda: self.runner.delete(record.name),
            v1.DeleteOperationMetadata(),
        )
