"""The local Vertex as a process: one per local root, its address in ``<root>/vertex.json``.

The first client of a root starts it (``ensure_server``); a second start finds the running
one. Started on demand, it exits by itself once it holds nothing running or serving, so
that a ``destroy`` leaves no process behind. Jobs, pools and prediction servers run in
processes of their own: they go on while it is down, and a restarted server reports them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vertex_training.jobs.backends.local._store import file_lock, process_alive, process_start_time

_log = logging.getLogger(__name__)

ADDRESS_FILE = "vertex.json"
LOG_FILE = "vertex.log"
DEFAULT_PROJECT = "local"
DEFAULT_LOCATION = "us-central1"
IDLE_EXIT_SECONDS = 20.0
"""How long a server started on demand waits, holding nothing, before it exits."""
START_TIMEOUT_SECONDS = 60.0


class LocalVertex:
    """The services of one local root, for ``wire.serve``; what it holds, for the idle exit."""

    def __init__(self, root: Path, project: str, location: str) -> None:
        from vertex_training.jobs.backends.local import LocalBackend
        from vertex_training.local.capacity import PersistentResourceService
        from vertex_training.local.jobs import JobService
        from vertex_training.local.names import Names
        from vertex_training.local.operations import Operations
        from vertex_training.local.serving import EndpointService, ModelService, PredictionService
        from vertex_training.serving.backends.local import LocalServingBackend

        self.root = root
        names = Names(project, location)
        operations = Operations(names, root)
        self.runner = LocalBackend(str(root))
        self.twin = LocalServingBackend(str(root))
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
        """What keeps the server needed: jobs not ended, endpoints serving, pools."""
        from vertex_training.local.capacity import RESOURCE_FILE

        held = [r.name for r in self.runner.records() if not r.state.is_terminal]
        held += [
            endpoint_id
            for endpoint_id in self.twin.stored_endpoints()
            if self.twin.stored_endpoint(endpoint_id).get("deployed")
        ]
        held += [p.parent.name for p in (self.root / "capacity").glob(f"*/{RESOURCE_FILE}")]
        return held

    def admin(
        self, method: str, path: str, query: Mapping[str, list[str]], body: bytes
    ) -> tuple[int, str, bytes]:
        """``/local/...``: what Vertex has no API for. ``health``; ``log?job=<id>&replica=
        <pool>-<index>`` (a replica's log: Vertex's is in Cloud Logging)."""
        if path == "/local/health":
            return 200, "application/json", json.dumps({"root": str(self.root)}).encode()
        if path == "/local/log" and method == "GET":
            job, replica = query.get("job", [""])[0], query.get("replica", ["0-0"])[0]
            log = self.root / "jobs" / job / "logs" / f"{replica}.log"
            if job.isdigit() and log.is_file() and "/" not in replica:
                return 200, "text/plain; charset=utf-8", log.read_bytes()
            return 404, "text/plain", f"no log {replica} of job {job!r}".encode()
        return 404, "text/plain", f"{method} {path}: no such control".encode()


def _answers(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def running(root: Path) -> dict[str, Any] | None:
    """The server of ``root`` (``vertex.json``) when it runs and answers."""
    try:
        found: dict[str, Any] = json.loads((root / ADDRESS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    alive = process_alive(int(found["pid"]), found.get("start"))
    return found if alive and _answers(found["address"]) else None


def ensure_server(root: Path, project: str, location: str) -> str:
    """The address of ``root``'s local Vertex, started (detached) when none runs."""
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / ".vertex.lock"):
        found = running(root)
        if found is None:
            from vertex_training.jobs.backends.local.environment import replica_pythonpath

            command = [sys.executable, "-m", "vertex_training.local", "serve", "--root", str(root)]
            command += ["--project", project, "--location", location, "--on-demand"]
            with open(root / LOG_FILE, "ab") as log:
                process = subprocess.Popen(
                    command,
                    env={**os.environ, "PYTHONPATH": replica_pythonpath(os.environ)},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # it outlives the provider process that starts it
                )
            threading.Thread(target=process.wait, daemon=True).start()
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while (found := running(root)) is None or found["pid"] != process.pid:
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = (root / LOG_FILE).read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"the local Vertex of {root} did not start:\n{tail}")
                time.sleep(0.05)
    if (found["project"], found["location"]) != (project, location):
        raise ValueError(
            f"the local Vertex of {root} serves projects/{found['project']}/locations/"
            f"{found['location']}, not projects/{project}/locations/{location}"
        )
    return str(found["address"])


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
    print(f"local Vertex AI of {root}: http://{server.address}, {project}/{location}", flush=True)
    stop = threading.Event()
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
