"""The local Vertex's Model Registry and endpoints under ``<local root>/serving``: Vertex's
own messages (their ``json_format`` JSON) and the few facts only this machine has.

A model is ``registry/<model id>/``: ``model.json`` (``nextVersion``, and ``versions``: a
``v1.Model`` each) and a copy of each version's SavedModel in ``versions/<version id>`` (a
retrained job overwrites its model directory; a registered version must not change under
an endpoint). An endpoint is ``endpoints/<id>/endpoint.json``: its ``v1.Endpoint`` and
``server``, the pid, start and port of its prediction server (``python -m predictor`` on
127.0.0.1, speaking Vertex's predict JSON at ``/v1/<endpoint name>:predict``).

The services' threads, the thread that keeps endpoints serving and a test's process meet
only here, so each read-modify-write holds an ``flock`` and files are written whole (a
temporary file, then a rename).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vertex_training._processes import (
    atomic_write_text,
    file_lock,
    process_alive,
    process_start_time,
)
from vertex_training._project import project_root
from vertex_training.local.runners.environment import local_bucket_paths

_log = logging.getLogger(__name__)

PREDICTOR_MODULE = "predictor"
"""The prediction server the serving image runs; here it runs from the checkout."""
SERVER_START_TIMEOUT_SECONDS = 180.0
"""Loading a SavedModel starts TensorFlow: tens of seconds on a busy machine."""
HEALTH_ROUTE = "/health"


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(value, indent=2, sort_keys=True))


def _port(port: int = 0) -> int:
    """``port`` when it is free (0: any free port); 0 when it is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return 0
        return int(sock.getsockname()[1])


def _alive(server: Mapping[str, Any]) -> bool:
    return bool(server.get("pid")) and process_alive(int(server["pid"]), server.get("start"))


class Registry:
    """The store of the local Vertex's models and endpoints, and their prediction servers."""

    def __init__(self, root: str, parent: str) -> None:
        self.root = Path(root).resolve()
        self.parent = parent
        """``projects/P/locations/L``: the project and region of its names."""
        self.dir = self.root / "serving"

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The lock every read-modify-write holds (it is not reentrant)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        return file_lock(self.dir / ".lock")

    def local_path(self, uri: str) -> Path:
        """Where an artifact URI lives here: ``gs://b/p`` and ``/gcs/b/p`` under the local
        root's bucket stand-in, other paths as they are."""
        return Path(local_bucket_paths(uri, self.root / "gcs")).expanduser().resolve()

    # -- models ------------------------------------------------------------------------

    def version_dir(self, model: str, version_id: str) -> Path:
        """The copy of the version's SavedModel that its deployments serve (``model``: its
        id or its name)."""
        return self.dir / "registry" / model.rsplit("/", 1)[-1] / "versions" / version_id

    def stored_models(self) -> list[str]:
        """The id of every model."""
        return sorted(p.parent.name for p in (self.dir / "registry").glob("*/model.json"))

    def stored_model(self, model_id: str) -> dict[str, Any] | None:
        """``model.json`` of ``model_id`` (``nextVersion``, ``versions``); None: no model."""
        return _read(self.dir / "registry" / model_id / "model.json")

    def write_model(self, model_id: str, stored: Mapping[str, Any]) -> None:
        """``stored`` as the model's record: the copy of a version it lost goes, and the
        model goes with its last version."""
        directory = self.dir / "registry" / model_id
        kept = {v["versionId"] for v in stored["versions"]}
        for copy in (directory / "versions").glob("*"):
            if copy.name not in kept:
                shutil.rmtree(copy, ignore_errors=True)
        if not kept:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            _write(directory / "model.json", stored)

    def deployments(self, model: str, version_id: str) -> list[tuple[str, str]]:
        """(endpoint, deployed model id) of each deployment of ``model`` at ``version_id``."""
        return [
            (endpoint["name"], deployed["id"])
            for endpoint in self.endpoints()
            for deployed in endpoint.get("deployedModels", [])
            if (deployed["model"], deployed["modelVersionId"]) == (model, version_id)
        ]

    # -- endpoints ---------------------------------------------------------------------

    def stored_endpoints(self) -> list[str]:
        """The id of every endpoint."""
        return sorted(p.parent.name for p in (self.dir / "endpoints").glob("*/endpoint.json"))

    def endpoints(self) -> list[dict[str, Any]]:
        """Every endpoint's record."""
        return list(filter(None, map(self.stored_endpoint, self.stored_endpoints())))

    def stored_endpoint(self, endpoint_id: str) -> dict[str, Any] | None:
        """``endpoint.json``: the ``v1.Endpoint`` and its ``server``; None: no endpoint."""
        return _read(self.dir / "endpoints" / endpoint_id / "endpoint.json")

    def write_endpoint(self, endpoint_id: str, stored: dict[str, Any], *, stop: bool) -> None:
        """``stored`` as the endpoint's record; ``stop``: what it serves changed, so its
        server stops (it reads its deployments once; ``ensure_serving`` starts it again on
        the new ones). The port is kept: its address stays the same."""
        if stop:
            _stop(stored.get("server") or {})
            stored["server"] = {"port": (stored.get("server") or {}).get("port")}
        _write(self.dir / "endpoints" / endpoint_id / "endpoint.json", stored)

    def delete_endpoint(self, endpoint_id: str, stored: Mapping[str, Any]) -> None:
        _stop(stored.get("server") or {})
        shutil.rmtree(self.dir / "endpoints" / endpoint_id)

    @staticmethod
    def undeployed(stored: dict[str, Any], deployed_id: str, traffic: Mapping[str, int]) -> None:
        """``deployed_id`` off the endpoint ``stored``, ``traffic`` its new split."""
        left = [d for d in stored.get("deployedModels", []) if d["id"] != deployed_id]
        stored["deployedModels"] = left
        stored["trafficSplit"] = dict(traffic) if left else {}

    def serving(self) -> list[str]:
        """The endpoints with deployed models: Vertex keeps each one's server running."""
        return [e["name"] for e in self.endpoints() if e.get("deployedModels")]

    # -- the prediction servers --------------------------------------------------------

    def ensure_serving(self, name: str) -> str:
        """Where the prediction server of the endpoint ``name`` answers ("" when nothing is
        deployed), started when it is not running."""
        endpoint_id = name.rsplit("/", 1)[-1]
        with self.locked():
            stored = self.stored_endpoint(endpoint_id)
            if not stored or not stored.get("deployedModels"):
                return ""
            if not _alive(stored.get("server") or {}):
                _log.info("%s: the prediction server is not running; starting it", name)
                self._start(endpoint_id, stored)
            return f"http://127.0.0.1:{stored['server']['port']}{self._route(endpoint_id)}"

    def _route(self, endpoint_id: str) -> str:
        return f"/v1/{self.parent}/endpoints/{endpoint_id}:predict"

    def _start(self, endpoint_id: str, stored: dict[str, Any]) -> None:
        """Start a server for what the endpoint ``stored`` serves (the caller holds the lock)."""
        directory = self.dir / "endpoints" / endpoint_id
        split = stored.get("trafficSplit") or {}
        deployments = [
            {
                "deployedModelId": d["id"],
                "model": d["model"],
                "modelVersionId": d["modelVersionId"],
                "modelDir": str(self.version_dir(d["model"], d["modelVersionId"])),
                "trafficPercent": int(split.get(d["id"], 0)),
            }
            for d in stored["deployedModels"]
        ]
        _write(directory / "deployments.json", deployments)
        # The same port again when it is free: the stack's predictUrl stays valid.
        port = _port(int((stored.get("server") or {}).get("port") or 0)) or _port()
        env = {
            **os.environ,
            "PYTHONPATH": _pythonpath(),
            "AIP_HTTP_PORT": str(port),
            "AIP_HEALTH_ROUTE": HEALTH_ROUTE,
            "AIP_PREDICT_ROUTE": self._route(endpoint_id),
        }
        command = [sys.executable, "-m", PREDICTOR_MODULE, "--host", "127.0.0.1"]
        with open(directory / "server.log", "ab") as log:
            process = subprocess.Popen(
                [*command, "--deployments", str(directory / "deployments.json")],
                # Its own directory: `-m` puts the working directory first on the path,
                # and what the server imports comes from PYTHONPATH alone.
                cwd=directory,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: it outlives the local Vertex (it serves while that one
                # is down) and is stopped as a group.
                start_new_session=True,
            )
        stored["server"] = dict(pid=process.pid, start=process_start_time(process.pid), port=port)
        self.write_endpoint(endpoint_id, stored, stop=False)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_SECONDS
        health = f"http://127.0.0.1:{port}{HEALTH_ROUTE}"
        while True:
            with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as answer:
                if answer.status == 200:
                    return
            if process.poll() is not None or time.monotonic() > deadline:
                self.write_endpoint(endpoint_id, stored, stop=True)
                tail = (directory / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(
                    f"the prediction server of {self.parent}/endpoints/{endpoint_id} did "
                    f"not become healthy (log {directory / 'server.log'}):\n{tail}"
                )
            time.sleep(0.1)


def _stop(server: Mapping[str, Any]) -> None:
    """Stop a prediction server: its whole group (it runs in a session of its own)."""
    if not _alive(server):
        return
    pid = int(server["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while process_alive(pid, server.get("start")) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid, server.get("start")):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    # Reap it when this process started it: no zombie left behind.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _pythonpath() -> str:
    """The caller's own path first (a test's stand-in server), then the project (its
    ``predictor``), then wherever this library was imported from."""
    library = Path(__file__).resolve().parents[3]
    existing = os.environ.get("PYTHONPATH")
    entries = [*([existing] if existing else []), str(project_root()), str(library)]
    return os.pathsep.join(dict.fromkeys(entries))


__all__ = ["PREDICTOR_MODULE", "Registry"]
