"""The local Vertex's JobService: CustomJobs and HyperparameterTuningJobs run by the local
job runner (one process per replica, studies on Optuna), answered in Vertex's own messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import empty_pb2, json_format

from vertex_training.jobs.backends.base import JobNotFoundError, JobRefusedError
from vertex_training.jobs.protos import JobMessage, parse_body
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.names import Names, page, parse_label_filter, runs_here
from vertex_training.local.operations import Operations
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import LocalJobState
from vertex_training.local.wire import ServiceError


def job_message(runner: JobRunner, job: LocalJobState) -> JobMessage:
    """The job's message: its body as created, with what the runner knows of it now
    (state, times, error, trials)."""
    body = runner.job_body(job.name) | {
        "name": job.name,
        "state": f"JOB_STATE_{job.state.value}",
        **({"trials": job.trials} if job.trials else {}),
    }
    stamps = (("createTime", job.create_time), ("startTime", job.start_time))
    body |= {k: v for k, v in (*stamps, ("endTime", job.end_time)) if v}
    if job.error_message:
        cancelled = job.state is JobState.CANCELLED
        body["error"] = {"code": 1 if cancelled else 3, "message": job.error_message}
    return parse_body(job.kind, body)


class JobService:
    """``google.cloud.aiplatform.v1.JobService``: what the project and Vertex's clients use of
    it, each job's message built by ``job_message``."""

    def __init__(self, names: Names, operations: Operations, runner: JobRunner) -> None:
        self.names = names
        self.operations = operations
        self.runner = runner

    def __getattr__(self, method: str) -> Callable[[Any], Any]:
        """``create_custom_job``, ``get_hyperparameter_tuning_job`` ...: one implementation
        per verb, for both kinds."""
        for kind in JobKind:
            verb, _, rest = method.partition("_")
            if rest in (kind.noun, kind.noun + "s"):
                return lambda request: getattr(self, f"_{verb}")(kind, request)
        raise AttributeError(method)

    def _create(self, kind: JobKind, request: Any) -> Any:
        self.names.check_parent(request.parent)
        job = getattr(request, kind.noun)
        body = json_format.MessageToDict(type(job).pb(job))
        self._judge(kind, body)
        runs_here(job, kind.noun)
        try:
            created = self.runner.submit(kind, body)
        except JobRefusedError as error:  # what cannot start here (an image, a pool)
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, f"{kind.noun}: {error}") from error
        return job_message(self.runner, created)

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
                "; ".join(f"{kind.noun}.{finding}" for finding in errors),
            )

    def _job(self, kind: JobKind, name: str) -> LocalJobState:
        self.names.resource_id(name, kind.value)
        try:
            return self.runner.get(name)
        except JobNotFoundError as error:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"name: {name} not found") from error

    def _get(self, kind: JobKind, request: Any) -> Any:
        return job_message(self.runner, self._job(kind, request.name))

    def _list(self, kind: JobKind, request: Any) -> Any:
        self.names.check_parent(request.parent)
        labels = parse_label_filter(request.filter).items()
        jobs = sorted(
            (self.runner.get(j.name) for j in self.runner.records() if j.kind is kind),
            key=lambda j: (j.create_time, j.name),
            reverse=True,
        )
        messages = [
            m for m in (job_message(self.runner, j) for j in jobs) if labels <= m.labels.items()
        ]
        chosen, token = page(messages, request.page_size, request.page_token)
        response = getattr(v1, f"List{kind.value[0].upper()}{kind.value[1:]}Response")
        return response({f"{kind.noun}s": chosen, "next_page_token": token})

    def _cancel(self, kind: JobKind, request: Any) -> empty_pb2.Empty:
        job = self._job(kind, request.name)
        if job.state.is_terminal:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{request.name} is {job.state.value}: only a job that has not ended can be "
                "cancelled",
            )
        self.runner.cancel(job.name)
        return empty_pb2.Empty()

    def _delete(self, kind: JobKind, request: Any) -> Any:
        job = self._job(kind, request.name)
        if not job.state.is_terminal:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{request.name} is {job.state.value}: cancel it and wait for it to end "
                "before deleting it",
            )
        return self.operations.run(
            lambda: self.runner.delete(job.name),
            v1.DeleteOperationMetadata(),
        )
