"""``google.longrunning`` operations of the local Vertex: each a file under the local root,
so that a restarted server still answers for it."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.rpc import status_pb2

from vertex_training.local.names import Names, page
from vertex_training.local.wire import ServiceError

_log = logging.getLogger(__name__)

QUICK_SECONDS = 1.0
"""An operation that ends this soon is answered done: its client need not poll."""


def _packed(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message if hasattr(message, "DESCRIPTOR") else type(message).pb(message))
    return packed


class Operations:
    """The operations service, and ``run`` for the methods that return an operation."""

    def __init__(self, names: Names, root: Path) -> None:
        self.names = names
        self.dir = root / "operations"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._ids = itertools.count(int(time.time() * 1000))
        self._changed = threading.Condition()
        self._running: set[str] = set()
        for path in self._files():  # what a stopped server left running never ends
            operation = operations_pb2.Operation.FromString(path.read_bytes())
            if not operation.done:
                self._fail(operation, grpc.StatusCode.ABORTED, "the local Vertex stopped")

    def running(self) -> list[str]:
        """The operations whose work goes on now: the server is needed until they end."""
        with self._changed:
            return sorted(self._running)

    def _files(self) -> list[Path]:
        return sorted(
            (p for p in self.dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
        )

    def _path(self, name: str) -> Path:
        return self.dir / self.names.resource_id(name, "operations")

    def _write(self, operation: operations_pb2.Operation) -> None:
        path = self._path(operation.name)
        path.with_suffix(".tmp").write_bytes(operation.SerializeToString())
        path.with_suffix(".tmp").replace(path)
        with self._changed:
            self._changed.notify_all()

    def _fail(
        self, operation: operations_pb2.Operation, code: grpc.StatusCode, message: str
    ) -> None:
        operation.done = True
        operation.error.CopyFrom(status_pb2.Status(code=code.value[0], message=message))
        self._write(operation)

    def run(self, work: Callable[[], Any], metadata: Any) -> operations_pb2.Operation:
        """An operation doing ``work`` on a thread of its own (its response: what ``work``
        returns, or Empty for None); answered done when it ends within ``QUICK_SECONDS``."""
        name = self.names.name("operations", str(next(self._ids)))
        operation = operations_pb2.Operation(name=name, metadata=_packed(metadata))
        self._write(operation)
        with self._changed:
            self._running.add(name)

        def finish() -> None:
            try:
                result = work()
                operation.response.CopyFrom(
                    _packed(empty_pb2.Empty() if result is None else result)
                )
                operation.done = True
                self._write(operation)
            except ServiceError as error:
                self._fail(operation, error.code, error.message)
            except Exception as error:
                _log.exception("operation %s failed", name)
                self._fail(operation, grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
            finally:
                with self._changed:
                    self._running.discard(name)

        threading.Thread(target=finish, name=name, daemon=True).start()
        return self.wait_operation(operations_pb2.WaitOperationRequest(name=name), QUICK_SECONDS)

    # -- google.longrunning.Operations -------------------------------------------------

    def get_operation(self, request: operations_pb2.GetOperationRequest) -> Any:
        path = self._path(request.name)
        if not path.is_file():
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND, f"name: operation {request.name} not found"
            )
        return operations_pb2.Operation.FromString(path.read_bytes())

    def wait_operation(
        self, request: operations_pb2.WaitOperationRequest, default: float = 60.0
    ) -> Any:
        timeout = request.timeout.ToTimedelta().total_seconds() or default
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (operation := self.get_operation(request)).done:
                if not self._changed.wait(deadline - time.monotonic()):
                    return self.get_operation(request)
        return operation

    def list_operations(self, request: operations_pb2.ListOperationsRequest) -> Any:
        self.names.check_parent(request.name, "name")
        chosen, token = page(self._files(), request.page_size, request.page_token)
        return operations_pb2.ListOperationsResponse(
            operations=[operations_pb2.Operation.FromString(p.read_bytes()) for p in chosen],
            next_page_token=token,
        )

    def delete_operation(self, request: operations_pb2.DeleteOperationRequest) -> Any:
        self._path(request.name).unlink(missing_ok=True)
        return empty_pb2.Empty()

    def cancel_operation(self, request: operations_pb2.CancelOperationRequest) -> Any:
        self.get_operation(request)  # our operations end by themselves, soon
        return empty_pb2.Empty()
