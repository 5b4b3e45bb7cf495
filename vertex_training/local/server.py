"""The local Vertex as a process: one per local root, its address in ``<root>/vertex.json``
(``_local_vertex`` finds it, or starts it on demand).

Started on demand, it exits by itself once it holds nothing running or serving, so that a
``destroy`` leaves no process behind. Jobs, pools and prediction servers run in processes
of their own: they go on while it is down, and a restarted server reports them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vertex_training._local_vertex import ADDRESS_FILE
from vertex_training._processes import process_start_time

_log = logging.getLogger(__name__)

DEFAULT_PROJECT = "local"
DEFAULT_LOCATION = "us-central1"
KEEP_SERVING_SECONDS = 5.0
"""How often the server looks that what it keeps running runs."""
IDLE_EXIT_SECONDS = 10.0
"""How long a server started on demand waits, holding nothing, before it exits."""


class LocalVertex:
    """The services of one local root, for ``wire.serve``; what it holds, for the idle exit."""

    def __init__(self, root: Path, project: str, location: str) -> None:
        from vertex_training.local.capacity import PersistentResourceService
        from vertex_training.local.jobs import JobService
        from vertex_training.local.names import Names
        from vertex_training.local.operations import Operations
        from vertex_training.local.runners.jobs import JobRunner
        from vertex_training.local.runners.registry import Registry
        from vertex_training.local.serving import EndpointService, ModelService, PredictionService

        self.root = root
        names = Names(project, location)
        self.operations = operations = Operations(names, root)
        self.runner = JobRunner(str(root), parent=names.parent)
        self.twin = Registry(str(root), names.parent)
        registry = (names, operations, self.twin)
        self.handlers: dict[str, Any] = {
            "JobService": JobService(names, operations, self.runner),
            "ModelService": ModelService(*registry),
            "EndpointService": EndpointService(*registry),
            "PredictionService": PredictionService(*registry),
            "PersistentResourceService": PersistentResourceService(names, operations, root),
            "Operations": operations,
        }

    def holds(self) -> list[str]:
        """What keeps the server needed: jobs not ended, endpoints serving, pools, and the
        operations still at work."""
        from vertex_training.local.capacity import RESOURCE_FILE

        held = self.operations.running()
        held += [r.name for r in self.runner.records() if not r.state.is_terminal]
        held += self.twin.serving()
        held += [p.parent.name for p in (self.root / "capacity").glob(f"*/{RESOURCE_FILE}")]
        return held

    def keep_serving(self) -> None:
        """What Vertex keeps running does run: an endpoint's prediction server, a pool's
        workers (after a machine restart, or when one died)."""
        from vertex_training.local.runners.pool import ensure_workers, healthy

        for endpoint in self.twin.serving():
            self.twin.ensure_serving(endpoint)
        for pool in (self.root / "capacity").glob("*/pool.json"):
            if not healthy(pool.parent):
                ensure_workers(pool.parent)

    def admin(
        self, method: str, path: str, query: Mapping[str, list[str]], body: bytes
    ) -> tuple[int, str, bytes]:
        """``/local/...``: what Vertex has no API for. ``health``; ``log?job=<id>&replica=
        <pool>-<index>`` (a replica's log: Vertex's is in Cloud Logging); the hooks a test
        holds or fails a run with: ``POST /local/hold`` (each replica that starts waits,
        stopped) and ``DELETE /local/hold`` (they go on), ``POST /local/fail?job=<id>&
        replica=<pool>-<index>`` (the replica is killed, as when its machine goes away)."""
        if path == "/local/health":
            return 200, "application/json", json.dumps({"root": str(self.root)}).encode()
        if path == "/local/log" and method == "GET":
            job, replica = query.get("job", [""])[0], query.get("replica", ["0-0"])[0]
            log = self.root / "jobs" / job / "logs" / f"{replica}.log"
            if job.isdigit() and log.is_file() and "/" not in replica:
                return 200, "text/plain; charset=utf-8", log.read_bytes()
            return 404, "text/plain", f"no log {replica} of job {job!r}".encode()
        if path == "/local/hold" and method in ("POST", "DELETE"):
            self.runner.hold(method == "POST")
            return 200, "application/json", json.dumps({"held": method == "POST"}).encode()
        if path == "/local/fail" and method == "POST":
            job, replica = query.get("job", [""])[0], query.get("replica", ["workerpool0-0"])[0]
            if job.isdigit() and self.runner.fail(job, replica):
                return 200, "application/json", b"{}"
            return 404, "text/plain", f"no replica {replica} of job {job!r} runs".encode()
        return 404, "text/plain", f"{method} {path}: no such control".encode()


def serve(
    root: Path, project: str, location: str, *, host: str, port: int, on_demand: bool
) -> None:
    """Serve until interrupted (or, ``on_demand``, until idle)."""
    from vertex_training.local import wire

    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    vertex = LocalVertex(root, project, location)
    server = wire.serve(vertex.handlers, host=host, port=port, admin=vertex.admin)
    pid = os.getpid()
    record = {"address": server.address, "pid": pid, "start": process_start_time(pid)}
    record |= {"project": project, "location": location}
    (root / f".{ADDRESS_FILE}.tmp").write_text(json.dumps(record))
    (root / f".{ADDRESS_FILE}.tmp").replace(root / ADDRESS_FILE)
    _log.info("local Vertex AI of %s: http://%s, %s/%s", root, server.address, project, location)
    stop = threading.Event()

    def watch() -> None:
        while True:
            try:
                vertex.keep_serving()
            except Exception:  # logged; the next look tries again
                _log.exception("keeping %s serving failed", root)
            if stop.wait(KEEP_SERVING_SECONDS):
                return

    threading.Thread(target=watch, name="keep-serving", daemon=True).start()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    idle_since = time.monotonic()
    while not stop.wait(1.0):
        if not on_demand:
            continue
        if vertex.holds():
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > IDLE_EXIT_SECONDS:
            _log.info("nothing running or serving for %.0f s: exiting", IDLE_EXIT_SECONDS)
            break
    with contextlib.suppress(FileNotFoundError, ValueError):
        if json.loads((root / ADDRESS_FILE).read_text())["pid"] == pid:
            (root / ADDRESS_FILE).unlink()
    server.stop(grace=5.0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vertex_training.local",
        description="A local Vertex AI: the v1 API (gRPC and REST on one port) on this machine.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("serve", help="serve until interrupted")
    command.add_argument("--root", type=Path, default=Path(".local-vertex"))
    command.add_argument("--host", default="127.0.0.1")
    command.add_argument("--port", type=int, default=0, help="0: a free port (see vertex.json)")
    command.add_argument("--project", default=DEFAULT_PROJECT)
    command.add_argument("--location", default=DEFAULT_LOCATION)
    command.add_argument("--on-demand", action="store_true", help="exit once holding nothing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    serve(
        args.root,
        args.project,
        args.location,
        host=args.host,
        port=args.port,
        on_demand=args.on_demand,
    )
    return 0
