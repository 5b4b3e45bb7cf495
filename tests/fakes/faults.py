"""The local Vertex with faults around it: where a test needs Vertex, the local Vertex answers,
served in-process on the wire (gRPC and REST on one port), and a proxy per service counts each
method's calls, keeps its requests and injects what the network and the service do to a client:
a status code (UNAVAILABLE, a refusal), optionally after the call took effect (a lost
response), or a long-running operation answered before it is done (a slow one: its client
polls it, without a sleep in the test).
Nothing here answers for Vertex: every response is the local Vertex's own."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import grpc
from google.longrunning import operations_pb2

from tests.fakes.settings import LOCATION, PROJECT
from vertex_training.local import wire
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import LocalJobState
from vertex_training.local.server import LocalVertex
from vertex_training.local.wire import ServiceError


@dataclass
class Fault:
    code: grpc.StatusCode | None = None
    """The status the call fails with (None: it answers)."""
    times: int = 1
    after_effect: bool = False
    """The call takes effect, then fails: the client never learns that it did."""
    unfinished: bool = False
    """A long-running operation is answered not yet done: the client has to poll it."""


def ended(runner: JobRunner, name: str, timeout: float = 30.0) -> LocalJobState:
    """The job ``name`` of ``runner`` once it has ended (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    while not (job := runner.get(name)).state.is_terminal:
        assert time.monotonic() < deadline, f"{name} is still {job.state} after {timeout} s"
        time.sleep(0.02)
    return job


def rpc_name(method: str) -> str:
    """``create_custom_job`` -> ``CreateCustomJob``: the method as Vertex's reference names it."""
    return "".join(word.title() for word in method.split("_"))


class FaultyVertex:
    """A local Vertex on ``root`` (project and region of ``tests.fakes.settings``), served at
    ``address``; :meth:`reset` moves it to a fresh root at the same address."""

    def __init__(self, root: Path) -> None:
        self._served: list[LocalVertex] = []
        """Every root served: what they run ends at :meth:`stop`."""
        self.calls: Counter[str] = Counter()
        self.requests: defaultdict[str, list[Any]] = defaultdict(list)
        self._faults: dict[str, list[Fault]] = {}
        self._lock = threading.Lock()
        self.vertex = LocalVertex(root, PROJECT, LOCATION)
        proxies = {service: _Proxy(self, service) for service in wire.SERVICES}
        # The admin of whichever root is served now (reset swaps it).
        self._server = wire.serve(proxies, admin=lambda *a: self.vertex.admin(*a))  # noqa: PLW0108
        self.address = self._server.address

    def inject(self, method: str, code: grpc.StatusCode | None = None, **fault: Any) -> None:
        """Make the next call(s) of ``method`` (``CreateCustomJob``) fail or linger: see
        :class:`Fault`. Faults of one method apply in the order they were injected."""
        with self._lock:
            self._faults.setdefault(method, []).append(Fault(code, **fault))

    def reset(self, root: Path) -> None:
        """Forget calls and faults, end what the last root runs (without waiting for it),
        and serve ``root``."""
        self.end_runs(self.vertex)
        self._served.append(self.vertex)
        with self._lock:
            self.calls.clear()
            self.requests.clear()
            self._faults.clear()
            self.vertex = LocalVertex(root, PROJECT, LOCATION)

    def end_runs(self, vertex: LocalVertex, *, wait: bool = False) -> None:
        """Cancel the jobs ``vertex`` runs and stop its prediction servers."""
        runner, twin = vertex.runner, vertex.twin
        for record in runner.records():
            if not record.state.is_terminal:
                runner.cancel(record.name)
                if wait:
                    ended(runner, record.name)
        with twin.locked():
            for endpoint in twin.endpoints():
                endpoint["deployedModels"], endpoint["trafficSplit"] = [], {}
                twin.write_endpoint(endpoint["name"].rsplit("/", 1)[-1], endpoint, stop=True)

    def stop(self) -> None:
        """Stop serving, once every job of every root served has ended."""
        self._server.stop()
        for vertex in [*self._served, self.vertex]:
            self.end_runs(vertex, wait=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def job_names(self, collection: str = "customJobs") -> list[str]:
        """The jobs of ``collection`` the local Vertex holds."""
        return sorted(r.name for r in self.vertex.runner.records() if f"/{collection}/" in r.name)

    def until_running(self, name: str, timeout: float = 30.0) -> None:
        """Return once the job ``name`` runs (polled, with a deadline)."""
        deadline = time.monotonic() + timeout
        while (state := self.vertex.runner.get(name).state).value != "RUNNING":
            assert not state.is_terminal and time.monotonic() < deadline, f"{name} is {state}"
            time.sleep(0.02)

    def call(self, service: str, method: str, request: Any) -> Any:
        rpc = rpc_name(method)
        with self._lock:
            self.calls[rpc] += 1
            self.requests[rpc].append(request)
            queue = self._faults.get(rpc)
            fault = queue[0] if queue else None
            if queue and fault:
                fault.times -= 1
                if fault.times <= 0:
                    queue.pop(0)
            handler = getattr(self.vertex.handlers[service], method)
        if fault is None:
            return handler(request)
        if fault.code is not None and not fault.after_effect:
            raise ServiceError(fault.code, f"injected {fault.code.name}")
        response = handler(request)
        if fault.code is not None:
            raise ServiceError(fault.code, f"injected {fault.code.name} after the effect")
        if fault.unfinished and isinstance(response, operations_pb2.Operation):
            return operations_pb2.Operation(name=response.name, metadata=response.metadata)
        return response


class _Proxy:
    """One service of the local Vertex, each call through :meth:`FaultyVertex.call`; a
    method the service lacks stays absent (the wire answers UNIMPLEMENTED)."""

    def __init__(self, faulty: FaultyVertex, service: str) -> None:
        self._faulty, self._service = faulty, service

    def __getattr__(self, method: str) -> Any:
        getattr(self._faulty.vertex.handlers[self._service], method)
        return lambda request: self._faulty.call(self._service, method, request)
