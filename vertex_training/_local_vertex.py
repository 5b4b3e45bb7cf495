"""Where the local Vertex of a local root answers: ``<root>/vertex.json``, written by its
server (``python -m vertex_training.local serve``). A client of a local platform finds the
running one here, or starts one on demand; nothing here loads the server itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vertex_training._processes import file_lock, process_alive

ADDRESS_FILE = "vertex.json"
LOG_FILE = "vertex.log"
START_TIMEOUT_SECONDS = 60.0


def _answers(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def _pythonpath() -> str:
    """The caller's path (what it runs, the local Vertex runs: a test's stand-ins), then
    wherever this library was imported from."""
    library = str(Path(__file__).resolve().parents[1])
    entries = [*os.environ.get("PYTHONPATH", "").split(os.pathsep), library]
    return os.pathsep.join(dict.fromkeys(e for e in entries if e))


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
            command = [sys.executable, "-m", "vertex_training.local", "serve", "--root", str(root)]
            command += ["--project", project, "--location", location, "--on-demand"]
            with open(root / LOG_FILE, "ab") as log:
                process = subprocess.Popen(
                    command,
                    env={**os.environ, "PYTHONPATH": _pythonpath()},
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


__all__ = ["ADDRESS_FILE", "ensure_server", "running"]
