"""The local twin of Model Registry and endpoints, under ``<local root>/serving``.

A model is a directory ``registry/<model id>/`` holding ``model.json`` (its versions, their
labels and aliases) and a copy of each version's SavedModel (a retrained job overwrites
its model directory; a registered version must not change under an endpoint). An
endpoint is ``endpoints/<id>/`` with ``endpoint.json`` and one local process: the
prediction server (``python -m predictor``) on a free port of 127.0.0.1, speaking
Vertex's predict JSON at ``/v1/<endpoint name>:predict``.

Every process that touches the twin (the model's and the endpoint's providers run side by
side) meets only here, so each read-modify-write holds an ``flock`` and files are written
whole (a temporary file, then a rename).
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
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_training._processes import (
    atomic_write_text,
    file_lock,
    process_alive,
    process_start_time,
)
from vertex_training._project import project_root
from vertex_training.local.runners.store import LOCAL_PARENT, now_rfc3339
from vertex_training.serving.backends import base

if TYPE_CHECKING:
    pass

_log = logging.getLogger(__name__)

PREDICTOR_MODULE = "predictor"
"""The prediction server the serving image runs; here it runs from the checkout."""
SERVER_START_TIMEOUT_SECONDS = 180.0
"""Loading a SavedModel starts TensorFlow: tens of seconds on a busy machine."""
HEALTH_ROUTE = "/health"
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(value, indent=2, sort_keys=True))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class Registry:
    """The local Vertex's model registry and endpoints, kept under ``<root>/serving``."""

    def __init__(self, root: str, parent: str = LOCAL_PARENT) -> None:
        self.root = Path(root).resolve()
        self.parent = parent
        """``projects/P/locations/L``: the project and region of its names."""
        self.dir = self.root / "serving"

    # -- paths and locking -----------------------------------------------------------

    def _model_dir(self, model_id: str) -> Path:
        return self.dir / "registry" / model_id

    def _endpoint_dir(self, endpoint_id: str) -> Path:
        return self.dir / "endpoints" / endpoint_id

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        return file_lock(self.dir / ".lock")

    @contextlib.contextmanager
    def _endpoint(self, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The id and the stored ``endpoint.json`` of the endpoint ``name``, under the lock."""
        endpoint_id = self._id(name, "endpoints")
        with self._locked():
            yield endpoint_id, self._read_endpoint(endpoint_id)

    def local_path(self, uri: str) -> Path:
        """Where an artifact URI lives here: ``gs://b/p`` and ``/gcs/b/p`` under the local
        backend's bucket stand-in, other paths as they are."""
        from vertex_training.local.runners.jobs import JobRunner

        return Path(JobRunner(str(self.root), parent=self.parent).local_path(uri))

    def _id(self, name: str, collection: str) -> str:
        prefix = f"{self.parent}/{collection}/"
        if not name.startswith(prefix) or "/" in name[len(prefix) :]:
            raise base.ServingNotFoundError(f"{name!r} is not a local {collection[:-1]} name")
        return name[len(prefix) :]

    # -- Model Registry ----------------------------------------------------------------

    def _read_model(self, model_id: str) -> dict[str, Any] | None:
        path = self._model_dir(model_id) / "model.json"
        if not path.is_file():
            return None
        model: dict[str, Any] = json.loads(path.read_text())
        return model

    def stored_model(self, model_id: str) -> dict[str, Any] | None:
        """The registry's record of a model (its versions as uploaded, aliases, ids)."""
        with self._locked():
            return self._read_model(model_id)

    def stored_endpoint(self, endpoint_id: str) -> dict[str, Any]:
        """The endpoint as stored (its body, deployed models, traffic split, server)."""
        with self._locked():
            return self._read_endpoint(endpoint_id)

    def stored_endpoints(self) -> list[str]:
        """The id of every endpoint."""
        return sorted(p.parent.name for p in (self.dir / "endpoints").glob("*/endpoint.json"))

    def stored_models(self) -> list[str]:
        """The id of every model."""
        return sorted(p.parent.name for p in (self.dir / "registry").glob("*/model.json"))

    def _version_record(self, model_id: str, version: Mapping[str, Any]) -> base.ModelVersionRecord:
        model = f"{self.parent}/models/{model_id}"
        return base.ModelVersionRecord(
            model=model,
            version_id=str(version["versionId"]),
            artifact_uri=str(version.get("artifactUri", "")),
            display_name=str(version.get("displayName", "")),
            labels=dict(version.get("labels") or {}),
            aliases=tuple(version.get("versionAliases") or ()),
            create_time=version.get("createTime"),
        )

    def _deployed_to(self, model: str, version_id: str) -> Iterator[tuple[str, str]]:
        for path in sorted((self.dir / "endpoints").glob("*/endpoint.json")):
            endpoint = json.loads(path.read_text())
            for deployed in endpoint.get("deployed", []):
                if deployed["model"] == model and deployed["modelVersionId"] == version_id:
                    yield f"{self.parent}/endpoints/{path.parent.name}", deployed["id"]

    def find_version(
        self, model_id: str, labels: Mapping[str, str]
    ) -> base.ModelVersionRecord | None:
        with self._locked():
            model = self._read_model(model_id)
            if model is None:
                return None
            found = [
                v
                for v in model["versions"]
                if all((v.get("labels") or {}).get(k) == val for k, val in labels.items())
            ]
            return self._version_record(model_id, found[-1]) if found else None

    def upload(self, model_id: str, body: Mapping[str, Any]) -> base.ModelVersionRecord:
        source = self.local_path(str(body.get("artifactUri", "")))
        if not any((source / name).is_file() for name in SAVED_MODEL_FILES):
            raise base.ServingRefusedError(
                f"artifactUri: no SavedModel at {body.get('artifactUri')!r} (looked in "
                f"{source}); a model is uploaded from a job that wrote one"
            )
        with self._locked():
            model = self._read_model(model_id) or {"nextVersion": 1, "versions": []}
            version_id = str(model["nextVersion"])
            target = self._model_dir(model_id) / "versions" / version_id
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target)
            aliases = list(body.get("versionAliases") or [])
            if not model["versions"]:
                aliases = ["default", *aliases]  # the first version is the default
            elif "default" in aliases:
                self._strip_aliases(model, ["default"])
            version = {
                **{k: v for k, v in body.items() if k != "versionAliases"},
                "versionId": version_id,
                "versionAliases": aliases,
                "createTime": now_rfc3339(),
                "localDir": str(target),
            }
            model["versions"].append(version)
            model["nextVersion"] = int(version_id) + 1
            _write_json(self._model_dir(model_id) / "model.json", model)
            return self._version_record(model_id, version)

    def _version(self, model: Mapping[str, Any], version_id: str, name: str) -> dict[str, Any]:
        for version in model["versions"]:
            if version["versionId"] == version_id:
                found: dict[str, Any] = version
                return found
        raise base.ServingNotFoundError(f"model version {name}@{version_id} not found")

    def _stored_version(
        self, model: str, version_id: str
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """The model's id, its stored ``model.json`` and the version in it (under the lock);
        ``base.ServingNotFoundError`` when either is gone."""
        model_id = self._id(model, "models")
        stored = self._read_model(model_id)
        if stored is None:
            raise base.ServingNotFoundError(f"model {model} not found")
        return model_id, stored, self._version(stored, version_id, model)

    def get_version(self, model: str, version_id: str) -> base.ModelVersionRecord:
        with self._locked():
            model_id, _, version = self._stored_version(model, version_id)
            return self._version_record(model_id, version)

    def update_version(self, model: str, version_id: str, body: Mapping[str, Any]) -> None:
        with self._locked():
            model_id, stored, version = self._stored_version(model, version_id)
            _update_metadata(version, body)
            _write_json(self._model_dir(model_id) / "model.json", stored)

    @staticmethod
    def _strip_aliases(model: dict[str, Any], aliases: Sequence[str]) -> None:
        for version in model["versions"]:
            version["versionAliases"] = [
                a for a in version.get("versionAliases") or [] if a not in aliases
            ]

    def move_aliases(self, model: str, version_id: str, aliases: Sequence[str]) -> None:
        with self._locked():
            model_id, stored, version = self._stored_version(model, version_id)
            keep_default = "default" in (version.get("versionAliases") or [])
            self._strip_aliases(stored, aliases)
            version["versionAliases"] = (["default"] if keep_default else []) + [
                a for a in aliases if a != "default"
            ]
            if "default" in aliases and not keep_default:
                self._strip_aliases(stored, ["default"])
                version["versionAliases"].insert(0, "default")
            _write_json(self._model_dir(model_id) / "model.json", stored)

    def delete_version(self, model: str, version_id: str) -> None:
        model_id = self._id(model, "models")
        with self._locked():
            stored = self._read_model(model_id)
            if stored is None:
                return
            remaining = [v for v in stored["versions"] if v["versionId"] != version_id]
            if len(remaining) == len(stored["versions"]):
                return
            deployed = list(self._deployed_to(model, version_id))
            if deployed:
                raise base.ModelInUseError(_in_use_message(model, version_id, deployed))
            if not remaining:
                shutil.rmtree(self._model_dir(model_id))
                return
            gone = self._version(stored, version_id, model)
            if "default" in (gone.get("versionAliases") or []):
                # The registry always has a default: the newest version left takes it.
                remaining[-1]["versionAliases"] = [
                    "default",
                    *(remaining[-1].get("versionAliases") or []),
                ]
            stored["versions"] = remaining
            shutil.rmtree(Path(gone["localDir"]), ignore_errors=True)
            _write_json(self._model_dir(model_id) / "model.json", stored)

    # -- endpoints ---------------------------------------------------------------------

    def _read_endpoint(self, endpoint_id: str) -> dict[str, Any]:
        path = self._endpoint_dir(endpoint_id) / "endpoint.json"
        if not path.is_file():
            raise base.ServingNotFoundError(
                f"endpoint {self.parent}/endpoints/{endpoint_id} not found"
            )
        endpoint: dict[str, Any] = json.loads(path.read_text())
        return endpoint

    def _write_endpoint(self, endpoint_id: str, endpoint: Mapping[str, Any]) -> None:
        _write_json(self._endpoint_dir(endpoint_id) / "endpoint.json", endpoint)

    def _predict_route(self, endpoint_id: str) -> str:
        return f"/v1/{self.parent}/endpoints/{endpoint_id}:predict"

    def _endpoint_record(
        self, endpoint_id: str, endpoint: Mapping[str, Any]
    ) -> base.EndpointRecord:
        server = endpoint.get("server") or {}
        port = server.get("port")
        return base.EndpointRecord(
            name=f"{self.parent}/endpoints/{endpoint_id}",
            display_name=str(endpoint.get("displayName", "")),
            labels=dict(endpoint.get("labels") or {}),
            deployed=tuple(
                base.DeployedModelRecord(d["id"], d["model"], d["modelVersionId"])
                for d in endpoint.get("deployed", [])
            ),
            traffic={k: int(v) for k, v in (endpoint.get("trafficSplit") or {}).items()},
            predict_url=f"http://127.0.0.1:{port}{self._predict_route(endpoint_id)}"
            if port
            else "",
            serving=self._server_alive(server) if endpoint.get("deployed") else True,
        )

    @staticmethod
    def _server_alive(server: Mapping[str, Any]) -> bool:
        pid = server.get("pid")
        return pid is not None and process_alive(int(pid), server.get("start"))

    def get_endpoint(self, name: str) -> base.EndpointRecord:
        with self._endpoint(name) as (endpoint_id, endpoint):
            return self._endpoint_record(endpoint_id, endpoint)

    def create_endpoint(self, endpoint_id: str, body: Mapping[str, Any]) -> base.EndpointRecord:
        with self._locked():
            try:
                endpoint = self._read_endpoint(endpoint_id)
            except base.ServingNotFoundError:
                endpoint = {**body, "deployed": [], "trafficSplit": {}, "createTime": now_rfc3339()}
                self._write_endpoint(endpoint_id, endpoint)
            return self._endpoint_record(endpoint_id, endpoint)

    def update_endpoint(self, name: str, body: Mapping[str, Any]) -> None:
        with self._endpoint(name) as (endpoint_id, endpoint):
            _update_metadata(endpoint, body)
            self._write_endpoint(endpoint_id, endpoint)

    def deploy(
        self, name: str, deployed_model: Mapping[str, Any], traffic: Mapping[str, int]
    ) -> None:
        model, _, version_id = str(deployed_model["model"]).partition("@")
        with self._endpoint(name) as (endpoint_id, endpoint):
            stored = self._read_model(self._id(model, "models"))
            if stored is None:
                raise base.ServingNotFoundError(f"model {model} not found")
            version = self._version(stored, version_id or _default_version(stored), model)
            entry = {
                "id": str(deployed_model["id"]),
                "model": model,
                "modelVersionId": version["versionId"],
                "modelDir": version["localDir"],
                "body": dict(deployed_model),
            }
            endpoint["deployed"] = [d for d in endpoint["deployed"] if d["id"] != entry["id"]] + [
                entry
            ]
            endpoint["trafficSplit"] = dict(traffic)
            self._stopped(endpoint_id, endpoint)

    def set_traffic(self, name: str, traffic: Mapping[str, int]) -> None:
        with self._endpoint(name) as (endpoint_id, endpoint):
            endpoint["trafficSplit"] = dict(traffic)
            self._stopped(endpoint_id, endpoint)

    def undeploy(self, name: str, deployed_model_id: str, traffic: Mapping[str, int]) -> None:
        with self._endpoint(name) as (endpoint_id, endpoint):
            endpoint["deployed"] = [d for d in endpoint["deployed"] if d["id"] != deployed_model_id]
            endpoint["trafficSplit"] = dict(traffic) if endpoint["deployed"] else {}
            self._stopped(endpoint_id, endpoint)

    def delete_endpoint(self, name: str) -> None:
        endpoint_id = self._id(name, "endpoints")
        with self._locked():
            try:
                endpoint = self._read_endpoint(endpoint_id)
            except base.ServingNotFoundError:
                return
            if endpoint["deployed"]:
                raise base.ServingRefusedError(
                    f"endpoint {name} still has deployed models "
                    f"{[d['id'] for d in endpoint['deployed']]}: undeploy them first"
                )
            self._stop(endpoint)
            shutil.rmtree(self._endpoint_dir(endpoint_id))

    def ensure_serving(self, name: str) -> base.EndpointRecord:
        with self._endpoint(name) as (endpoint_id, endpoint):
            if endpoint["deployed"] and not self._server_alive(endpoint.get("server") or {}):
                _log.info("%s: the prediction server is not running; starting it", name)
                self._restart(endpoint_id, endpoint)
            return self._endpoint_record(endpoint_id, endpoint)

    # -- the server process ------------------------------------------------------------

    def _stopped(self, endpoint_id: str, endpoint: dict[str, Any]) -> None:
        """Record a change of what the endpoint serves and stop its server: the server
        reads its deployments once, and ``ensure_serving`` (the end of every change the
        provider makes) starts it again, once, on the new ones. The port is kept."""
        port = (endpoint.get("server") or {}).get("port")
        self._stop(endpoint)
        if port:
            endpoint["server"] = {"port": port}
        self._write_endpoint(endpoint_id, endpoint)

    def _stop(self, endpoint: dict[str, Any]) -> None:
        server = endpoint.pop("server", None) or {}
        if not server.get("pid") or not self._server_alive(server):
            return
        pid = int(server["pid"])
        # The server runs in a session of its own: its whole group goes.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while process_alive(pid, server.get("start")) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process_alive(pid, server.get("start")):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        # Reap it when we started it (same process): no zombie left behind.
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)

    def _restart(self, endpoint_id: str, endpoint: dict[str, Any]) -> None:
        """Stop the endpoint's server and, when models are deployed, start one serving them."""
        old_port = (endpoint.get("server") or {}).get("port")
        self._stop(endpoint)
        if not endpoint["deployed"]:
            self._write_endpoint(endpoint_id, endpoint)
            return
        directory = self._endpoint_dir(endpoint_id)
        deployments = [
            {
                "deployedModelId": d["id"],
                "model": d["model"],
                "modelVersionId": d["modelVersionId"],
                "modelDir": d["modelDir"],
                "trafficPercent": int(endpoint["trafficSplit"].get(d["id"], 0)),
            }
            for d in endpoint["deployed"]
        ]
        _write_json(directory / "deployments.json", deployments)
        # The same port again when it is free: the stack's predictUrl stays valid.
        port = int(old_port) if old_port and _port_free(int(old_port)) else _free_port()
        env = {
            **os.environ,
            "PYTHONPATH": _pythonpath(),
            "AIP_HTTP_PORT": str(port),
            "AIP_HEALTH_ROUTE": HEALTH_ROUTE,
            "AIP_PREDICT_ROUTE": self._predict_route(endpoint_id),
        }
        with open(directory / "server.log", "ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    PREDICTOR_MODULE,
                    "--host",
                    "127.0.0.1",
                    "--deployments",
                    str(directory / "deployments.json"),
                ],
                # Its own directory: `-m` puts the working directory first on the path,
                # and what the server imports comes from PYTHONPATH alone.
                cwd=directory,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: it outlives the provider process (it serves between
                # `up`s) and is stopped as a group.
                start_new_session=True,
            )
        endpoint["server"] = {
            "pid": process.pid,
            "start": process_start_time(process.pid),
            "port": port,
        }
        self._write_endpoint(endpoint_id, endpoint)
        health = f"http://127.0.0.1:{port}{HEALTH_ROUTE}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT_SECONDS
        while not _healthy(health):
            if process.poll() is not None or time.monotonic() > deadline:
                self._stop(endpoint)
                self._write_endpoint(endpoint_id, endpoint)
                tail = (directory / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(
                    f"the prediction server of {self.parent}/endpoints/{endpoint_id} did "
                    f"not become healthy (log {directory / 'server.log'}):\n{tail}"
                )
            time.sleep(0.1)


def _update_metadata(stored: dict[str, Any], body: Mapping[str, Any]) -> None:
    """A model version's or an endpoint's display name, description and labels from
    ``body`` (a Vertex REST body); one ``body`` leaves out is cleared."""
    for key in ("displayName", "description", "labels"):
        stored[key] = body.get(key, "" if key != "labels" else {})


def _default_version(model: Mapping[str, Any]) -> str:
    for version in model["versions"]:
        if "default" in (version.get("versionAliases") or []):
            return str(version["versionId"])
    return str(model["versions"][-1]["versionId"])


def _in_use_message(model: str, version_id: str, deployed: Sequence[tuple[str, str]]) -> str:
    where = ", ".join(f"{endpoint} (deployed model {dm})" for endpoint, dm in deployed)
    return (
        f"model version {model}@{version_id} is still deployed to {where}: undeploy it "
        "there first (remove the deployment from that endpoint, or destroy it), then delete "
        "the model"
    )


def _pythonpath() -> str:
    """The caller's own path first (a test's stand-in server), then the project (its
    ``predictor``), then wherever this library was imported from."""
    library = Path(__file__).resolve().parents[3]
    existing = os.environ.get("PYTHONPATH")
    entries = [*([existing] if existing else []), str(project_root()), str(library)]
    return os.pathsep.join(dict.fromkeys(entries))


__all__ = ["LOCAL_PARENT", "PREDICTOR_MODULE", "Registry"]
