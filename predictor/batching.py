"""Concurrent requests for one deployed model and one signature, answered from shared calls.

A :class:`Batcher` queues the instances of the requests it is given and calls the model on
up to ``max_batch_size`` of them at a time, on ``batch_threads`` threads of its own, so that
the event loop keeps reading requests while TensorFlow runs. Requests that arrive while
every thread is busy wait in the queue and make the next calls. An idle thread calls at
once, unless its last call served several requests (the model is under concurrent load):
then it waits for the batch to fill, at most ``max_wait_ms``. One client alone never waits.
A request larger than ``max_batch_size`` is split across calls. Beyond ``max_queued``
waiting instances a request is refused (:class:`QueueFullError`): it is answered at once
instead of piling up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from predictor import BadRequestError

__all__ = ["Batcher", "Batching", "QueueFullError"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Batching:
    """How one deployed model gathers requests (docs/predictor.md: how the defaults were
    measured)."""

    max_batch_size: int = 8
    """Instances in one call of the model at most."""
    max_wait_ms: float = 0.0
    """How long an idle thread waits for its batch to fill after a call that served several
    requests."""
    max_queued: int = 64
    """Instances waiting for the model at most; a request beyond is refused (429)."""
    batch_threads: int = 2
    """Calls of the model that run at once, each on a thread of its own (TensorFlow
    Serving's ``num_batch_threads``)."""

    def __post_init__(self) -> None:
        if min(self.max_batch_size, self.max_queued, self.batch_threads) < 1 or (
            self.max_wait_ms < 0
        ):
            raise ValueError(
                f"{self}: max_batch_size, max_queued and batch_threads must be at least 1, "
                "max_wait_ms at least 0"
            )


class QueueFullError(Exception):
    """The model's queue is full: the request is refused, to be retried later."""


@dataclass
class _Piece:
    """Up to ``max_batch_size`` consecutive instances of one request."""

    rows: Sequence[Any]
    answer: asyncio.Future[list[Any]]


class Batcher:
    """The queue and the calls of one deployed model's signature.

    ``run(rows)`` returns one prediction per row or raises :class:`BadRequestError`. The
    calls run on the batcher's own threads, each of which takes the next batch as soon as
    its call returns, without waiting for the event loop: under load the model never waits
    for a loop busy with other connections. ``alone()`` says whether the server has a single
    connection open: then nothing can join the request (a connection carries a request at
    a time), which calls the model itself, on the loop's thread; the thread switches it
    saves are most of what the server would add to one client's latency on a busy machine.
    """

    def __init__(
        self,
        run: Callable[[Sequence[Any]], list[Any]],
        batching: Batching,
        alone: Callable[[], bool] = lambda: False,
    ) -> None:
        self._run = run
        self.batching = batching
        self._alone = alone
        self._queue: deque[_Piece] = deque()
        self._changed = threading.Condition()
        """Guards the queue; notified when pieces come or the batcher closes."""
        self.queued = 0
        """Instances waiting for the model."""
        self._threads: list[threading.Thread] = []
        self._closed = False

    async def predict(self, rows: Sequence[Any]) -> list[Any]:
        """One prediction per row, once the calls that hold them have run."""
        if self.queued and self.queued + len(rows) > self.batching.max_queued:
            raise QueueFullError(
                f"{self.queued} instances are waiting for this model; "
                f"at most {self.batching.max_queued}"
            )
        size = self.batching.max_batch_size
        if self._alone():
            return [p for i in range(0, len(rows), size) for p in self._run(rows[i : i + size])]
        loop = asyncio.get_running_loop()
        pieces = [
            _Piece(rows[i : i + size], loop.create_future()) for i in range(0, len(rows), size)
        ]
        with self._changed:
            if not self._threads:
                self._threads = [
                    threading.Thread(target=self._work, name=f"batcher-{i}", daemon=True)
                    for i in range(self.batching.batch_threads)
                ]
                for thread in self._threads:
                    thread.start()
            self._queue.extend(pieces)
            self.queued += len(rows)
            self._changed.notify()
        answers = await asyncio.gather(*(piece.answer for piece in pieces), return_exceptions=True)
        predictions = []
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
            predictions.extend(answer)
        return predictions

    async def close(self) -> None:
        """Drop what still waits (the server answered its requests before) and let the
        thread end after its call."""
        with self._changed:
            self._closed = True
            self._queue.clear()
            self.queued = 0
            self._changed.notify()

    def _work(self) -> None:
        concurrent = False  # whether this thread's last call served several requests
        wait_s, most = self.batching.max_wait_ms / 1e3, self.batching.max_batch_size
        while True:
            with self._changed:
                while not self._queue:
                    if self._closed:
                        return
                    self._changed.wait()
                deadline = time.monotonic() + wait_s
                while (
                    concurrent
                    and self.queued < most
                    and not self._closed
                    and (left := deadline - time.monotonic()) > 0
                ):
                    self._changed.wait(left)
                if not self._queue:  # closed meanwhile
                    continue
                batch = [self._queue.popleft()]
                size = len(batch[0].rows)
                while self._queue and size + len(self._queue[0].rows) <= most:
                    batch.append(self._queue.popleft())
                    size += len(batch[-1].rows)
                self.queued -= size
            # Pieces of one request never share a call (all but its last are full).
            concurrent = len(batch) > 1
            self._call(batch)

    def _call(self, batch: list[_Piece]) -> None:
        rows = [row for piece in batch for row in piece.rows]
        try:
            predictions = self._run(rows)
        except BadRequestError as error:
            if len(batch) == 1:
                _settle(batch, error=error)
            else:
                # One request's instance spoils the call: each request again on its own, so
                # that only that request fails.
                for piece in batch:
                    self._call([piece])
            return
        except Exception as error:  # the requests get a 500 with it; the thread goes on
            logger.exception("prediction failed")
            _settle(batch, error=error)
            return
        _settle(batch, predictions)


def _settle(
    batch: list[_Piece], predictions: list[Any] | None = None, error: Exception | None = None
) -> None:
    """From the batcher's thread: each piece's answer, set on its loop in one turn."""

    def settle() -> None:
        start = 0
        for piece in batch:
            if piece.answer.done():  # its request is gone (the client closed the connection)
                pass
            elif error is not None:
                piece.answer.set_exception(error)
            else:
                piece.answer.set_result((predictions or [])[start : start + len(piece.rows)])
            start += len(piece.rows)

    with contextlib.suppress(RuntimeError):  # the loop is closed: the server has stopped
        batch[0].answer.get_loop().call_soon_threadsafe(settle)
