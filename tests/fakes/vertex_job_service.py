"""A fake Vertex AI JobService at the wire: real ``aiplatform_v1`` protos over gRPC.

Covers what the project uses for CustomJob and HyperparameterTuningJob: create, get,
list (with the ``labels.key="value" AND ...`` filter), cancel and delete, with a state
machine (each get moves a job one step along QUEUED -> PENDING -> RUNNING -> outcome),
per-method call counts, and injectable faults (any status code, optionally after the
call took effect, which is how a lost create response looks to a client).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Self

import grpc
from google.cloud.aiplatform_v1 import types as v1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.rpc import status_pb2

SERVICE = "google.cloud.aiplatform.v1.JobService"
S = v1.JobState
TERMINAL = {
    S.JOB_STATE_SUCCEEDED,
    S.JOB_STATE_FAILED,
    S.JOB_STATE_CANCELLED,
    S.JOB_STATE_EXPIRED,
    S.JOB_STATE_PARTIALLY_SUCCEEDED,
}
_FILTER_TERM = re.compile(r'^labels\.([a-z0-9_-]+)\s*=\s*"([^"]*)"$')


@dataclass
class Fault:
    code: grpc.StatusCode
    times: int = 1
    after_effect: bool = False
    """Apply the call, then fail: the client never learns it succeeded."""


class FakeService:
    """What every fake service shares: one project and region, per-method call counts,
    faults to inject by method name (in the order they were asked for), and the gRPC
    server on a free local port."""

    def __init__(self, project: str, location: str) -> None:
        self.parent = f"projects/{project}/locations/{location}"
        self.calls: Counter[str] = Counter()
        self.faults: dict[str, list[Fault]] = {}
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        self.address = ""

    def inject(
        self, method: str, code: grpc.StatusCode, *, times: int = 1, after_effect: bool = False
    ) -> None:
        self.faults.setdefault(method, []).append(Fault(code, times, after_effect))

    def _take_fault(self, method: str) -> Fault | None:
        queue = self.faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    def _serve(self, services: Mapping[str, Mapping[str, grpc.RpcMethodHandler]]) -> str:
        """Serve the handlers of each service (by its full name); the address."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        for service, handlers in services.items():
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(service, dict(handlers)),)
            )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        self.address = f"127.0.0.1:{port}"
        return self.address

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Serve every method of the service; the address."""
        raise NotImplementedError

    def _call(self, method: str, context: grpc.ServicerContext, apply: Callable[[], Any]) -> Any:
        """One call of ``method``: counted, under the lock, with its injected fault (before
        ``apply``, or after it took effect)."""
        with self._lock:
            self.calls[method] += 1
            fault = self._take_fault(method)
            if fault is not None and not fault.after_effect:
                context.abort(fault.code, f"injected {fault.code.name}")
            response = apply()
        if fault is not None:
            context.abort(fault.code, f"injected {fault.code.name} after the effect")
        return response


@dataclass
class _Job:
    message: Any  # v1.CustomJob | v1.HyperparameterTuningJob
    steps: list[int]
    """States still to come, one per get."""
    held: bool = False


class FakeJobService(FakeService):
    def __init__(
        self,
        project: str = "test-project",
        location: str = "us-central1",
        *,
        outcome: int = S.JOB_STATE_SUCCEEDED,
        error_message: str = "The replica workerpool0-0 exited with a non-zero status of 1.",
    ) -> None:
        super().__init__(project, location)
        self.outcome = outcome
        self.hold_new_in: int | None = None
        """When set, new jobs go straight to this state and stay (e.g. RUNNING forever)."""
        self.error_message = error_message
        self.jobs: dict[str, _Job] = {}
        self._next_id = 1000

    # ------------------------------------------------------------------- test controls

    def hold(self, name: str, state: int = S.JOB_STATE_RUNNING) -> None:
        """Put a job in ``state`` and keep it there (until cancelled or released)."""
        with self._lock:
            job = self.jobs[name]
            self._set_state(job, state)
            job.held = True

    def release(self, name: str) -> None:
        with self._lock:
            job = self.jobs[name]
            job.held = False
            job.steps = [S.JOB_STATE_RUNNING, self.outcome]

    def delete_behind_our_back(self, name: str) -> None:
        with self._lock:
            del self.jobs[name]

    def state(self, name: str) -> str:
        return S(self.jobs[name].message.state).name

    def names(self, collection: str = "") -> list[str]:
        return sorted(n for n in self.jobs if f"/{collection}" in n)

    def reset_calls(self) -> None:
        self.calls.clear()

    def reset(self) -> None:
        """Forget jobs, faults, counts and settings (one service shared by many tests)."""
        with self._lock:
            self.jobs.clear()
            self.faults.clear()
            self.calls.clear()
            self.outcome = S.JOB_STATE_SUCCEEDED
            self.hold_new_in = None

    # --------------------------------------------------------------------- server

    def start(self) -> str:
        handlers = {}
        for kind, message_type in (
            ("CustomJob", v1.CustomJob),
            ("HyperparameterTuningJob", v1.HyperparameterTuningJob),
        ):
            field = "custom_job" if kind == "CustomJob" else "hyperparameter_tuning_job"
            plural = "customJobs" if kind == "CustomJob" else "hyperparameterTuningJobs"
            list_response = getattr(v1, f"List{kind}sResponse")
            handlers[f"Create{kind}"] = self._handler(
                f"Create{kind}",
                getattr(v1, f"Create{kind}Request"),
                message_type.serialize,
                self._create_fn(field, plural),
            )
            handlers[f"Get{kind}"] = self._handler(
                f"Get{kind}", getattr(v1, f"Get{kind}Request"), message_type.serialize, self._get
            )
            handlers[f"List{kind}s"] = self._handler(
                f"List{kind}s",
                getattr(v1, f"List{kind}sRequest"),
                list_response.serialize,
                self._list_fn(plural, list_response, f"{field}s"),
            )
            handlers[f"Cancel{kind}"] = self._handler(
                f"Cancel{kind}",
                getattr(v1, f"Cancel{kind}Request"),
                empty_pb2.Empty.SerializeToString,
                self._cancel,
            )
            handlers[f"Delete{kind}"] = self._handler(
                f"Delete{kind}",
                getattr(v1, f"Delete{kind}Request"),
                operations_pb2.Operation.SerializeToString,
                self._delete,
            )
        return self._serve({SERVICE: handlers})

    def _handler(
        self,
        method: str,
        request_type: Any,
        serialize: Callable[[Any], bytes],
        fn: Callable[[Any, grpc.ServicerContext], Any],
    ) -> grpc.RpcMethodHandler:
        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            return self._call(method, context, lambda: fn(request, context))

        return grpc.unary_unary_rpc_method_handler(
            handle,
            request_deserializer=request_type.deserialize,
            response_serializer=serialize,
        )

    # --------------------------------------------------------------------- methods

    def _create_fn(self, field: str, plural: str) -> Callable[..., Any]:
        def create(request: Any, context: grpc.ServicerContext) -> Any:
            if request.parent != self.parent:
                context.abort(grpc.StatusCode.PERMISSION_DENIED, f"parent {request.parent}")
            job = type(getattr(request, field))(getattr(request, field))
            self._next_id += 1
            job.name = f"{self.parent}/{plural}/{self._next_id}"
            job.state = S.JOB_STATE_QUEUED
            job.create_time = _now()
            job.update_time = _now()
            entry = _Job(job, [S.JOB_STATE_PENDING, S.JOB_STATE_RUNNING, self.outcome])
            self.jobs[job.name] = entry
            if self.hold_new_in is not None:
                self._set_state(entry, self.hold_new_in)
                entry.held = True
            return job

        return create

    def _lookup(self, name: str, context: grpc.ServicerContext) -> _Job:
        job = self.jobs.get(name)
        if job is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"{name} not found")
        return job  # type: ignore[return-value]

    def _get(self, request: Any, context: grpc.ServicerContext) -> Any:
        job = self._lookup(request.name, context)
        if job.steps and not job.held:
            self._set_state(job, job.steps.pop(0))
        return job.message

    def _list_fn(self, plural: str, response_type: Any, field: str) -> Callable[..., Any]:
        def list_jobs(request: Any, context: grpc.ServicerContext) -> Any:
            wanted: dict[str, str] = {}
            if request.filter:
                for term in request.filter.split(" AND "):
                    match = _FILTER_TERM.match(term.strip())
                    if not match:
                        context.abort(
                            grpc.StatusCode.INVALID_ARGUMENT, f"unsupported filter {term!r}"
                        )
                    wanted[match.group(1)] = match.group(2)  # type: ignore[union-attr]
            found = [
                job.message
                for name, job in sorted(self.jobs.items())
                if name.startswith(f"{request.parent}/{plural}/")
                and all(job.message.labels.get(k) == v for k, v in wanted.items())
            ]
            return response_type(**{field: found})

        return list_jobs

    def _cancel(self, request: Any, context: grpc.ServicerContext) -> Any:
        job = self._lookup(request.name, context)
        if job.message.state in TERMINAL:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "job is already finished")
        self._set_state(job, S.JOB_STATE_CANCELLING)
        job.held = False
        job.steps = [S.JOB_STATE_CANCELLED]
        return empty_pb2.Empty()

    def _delete(self, request: Any, context: grpc.ServicerContext) -> Any:
        job = self._lookup(request.name, context)
        if job.message.state not in TERMINAL:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"job is {S(job.message.state).name}; cancel it before deleting",
            )
        del self.jobs[request.name]
        response = any_pb2.Any()
        response.Pack(empty_pb2.Empty())
        return operations_pb2.Operation(
            name=f"{request.name}/operations/1", done=True, response=response
        )

    # ------------------------------------------------------------------ state machine

    def _set_state(self, job: _Job, state: int) -> None:
        message = job.message
        message.state = state
        message.update_time = _now()
        if state == S.JOB_STATE_RUNNING and not message.start_time:
            message.start_time = _now()
        if state in TERMINAL:
            message.end_time = _now()
            if state == S.JOB_STATE_FAILED:
                message.error = status_pb2.Status(code=13, message=self.error_message)
        if isinstance(message, v1.HyperparameterTuningJob) and state in TERMINAL:
            _add_trials(message, succeeded=state == S.JOB_STATE_SUCCEEDED)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _trial_value(param: v1.StudySpec.ParameterSpec, index: int) -> float | str:
    which = param._pb.WhichOneof("parameter_value_spec")
    if which == "double_value_spec":
        low, high = param.double_value_spec.min_value, param.double_value_spec.max_value
        return low + (high - low) * (index % 5) / 5
    if which == "integer_value_spec":
        return float(param.integer_value_spec.min_value)
    if which == "discrete_value_spec":
        numbers = param.discrete_value_spec.values
        return numbers[index % len(numbers)]
    categories = param.categorical_value_spec.values
    return categories[index % len(categories)]


def _add_trials(job: v1.HyperparameterTuningJob, *, succeeded: bool) -> None:
    """Trials as Vertex reports them: ids from "1", a final metric per succeeded trial."""
    if job.trials:
        return
    metric_id = job.study_spec.metrics[0].metric_id if job.study_spec.metrics else "metric"
    for index in range(job.max_trial_count):
        trial = v1.Trial(
            id=str(index + 1),
            state=v1.Trial.State.SUCCEEDED if succeeded else v1.Trial.State.STOPPING,
            parameters=[
                v1.Trial.Parameter(parameter_id=p.parameter_id, value=_trial_value(p, index))
                for p in job.study_spec.parameters
            ],
        )
        if succeeded:
            # A peak in the middle so that "best" is neither the first nor the last.
            score = 0.9 - abs(index - job.max_trial_count // 2) * 0.1
            trial.final_measurement = v1.Measurement(
                step_count=10, metrics=[v1.Measurement.Metric(metric_id=metric_id, value=score)]
            )
        job.trials.append(trial)
