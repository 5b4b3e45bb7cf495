"""Running a job's replicas on a warm pool: the jobs side of the local persistent resource.

A local persistent resource (``vertex_training.capacity.local``, the pool side) keeps one
worker process per replica slot: this interpreter with TensorFlow already imported,
waiting for one replica to run. A job whose ``jobSpec.persistentResourceId`` names it
hands each replica to a waiting worker instead of starting a process. The two sides meet
in files only (the jobs layer never imports the capacity layer), under
``<local root>/capacity/<resource id>/``:

``pool.json``
    written by ``up``: the number of slots, the workers' interpreter (``python``) and
    ``environment``, the values of ``IMPORT_TIME_VARIABLES`` every worker was started
    with. Gone once ``destroy`` began.
``slots/<slot>/<pid>/``
    one directory per worker process. ``worker.json`` (pid, kernel start time) as soon
    as it runs; ``ready`` once TensorFlow is imported and the slot's previous worker has
    ended (a slot runs one job at a time). A job claims the worker by renaming ``ready``
    to ``claimed`` (atomic: one claimer wins), then writes ``request.json`` (a
    ``ReplicaRequest``). The worker forks the slot's next worker, runs the replica in
    its own interpreter with exactly the request's environment, writes the exit code to
    the request's ``exit_file`` and ends: an interpreter serves one job, so no job sees
    another's variables, graphs or strategy.

What an interpreter reads at import (``IMPORT_TIME_VARIABLES``) is the pool's: a replica
whose environment sets one of them otherwise, or whose command is not this interpreter
running a module or a script, runs cold, as without a pool, with one line saying why.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vertex_training._processes import process_alive
from vertex_training._project import project_root

_log = logging.getLogger(__name__)

CAPACITY_DIR = "capacity"
"""Under a local root: one directory per persistent resource."""
POOL_FILE = "pool.json"
SLOTS_DIR = "slots"
WORKER_FILE = "worker.json"
READY, CLAIMED, REQUEST = "ready", "claimed", "request.json"
IMPORT_TIME_VARIABLES = (
    "TF_USE_LEGACY_KERAS",
    "CUDA_VISIBLE_DEVICES",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_ENABLE_ONEDNN_OPTS",
    "PYTHONPATH",
    "PYTHONHASHSEED",
)
"""What TensorFlow or the interpreter read once, at start or at import: a warm worker
has read the pool's values."""
CLAIM_POLL_SECONDS = 0.05
EXIT_KILLED = -9
"""The exit code of a worker that died without writing its own (killed)."""


def pool_dir(root: Path, resource_id: str) -> Path:
    return root / CAPACITY_DIR / resource_id


@dataclass(frozen=True)
class ReplicaRequest:
    """One replica, as a worker runs it: ``python -m module args`` or ``python script
    args`` (``module`` or ``script``), in ``cwd`` with exactly ``env``, its output appended
    to ``log``, its exit code written to ``exit_file``."""

    args: list[str]
    env: dict[str, str]
    cwd: str
    log: str
    exit_file: str
    module: str | None = None
    script: str | None = None

    def write(self, worker: Path) -> None:
        temporary = worker / f"{REQUEST}.tmp"
        temporary.write_text(json.dumps(asdict(self)), encoding="utf-8")
        temporary.rename(worker / REQUEST)  # the worker never reads half a request

    @classmethod
    def read(cls, worker: Path) -> ReplicaRequest | None:
        try:
            return cls(**json.loads((worker / REQUEST).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None


def worker_alive(worker: Path) -> bool:
    """The worker process of ``worker`` (a ``slots/<slot>/<pid>`` directory) still runs."""
    try:
        info = json.loads((worker / WORKER_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return False
    return process_alive(int(info["pid"]), info["start"])


def workers(pool: Path) -> Iterator[Path]:
    """Every worker directory of the pool, slot by slot."""
    for slot in sorted(pool.glob(f"{SLOTS_DIR}/*")):
        yield from sorted(slot.iterdir())


def cold_reason(pool: Mapping[str, Any], command: Sequence[str], env: Mapping[str, str]) -> str:
    """Why a replica cannot run in one of the pool's warm interpreters ('' when it can)."""
    if len(command) < 2 or command[0] != pool.get("python"):
        return f"its command {command[0]!r} is not the pool's interpreter {pool.get('python')}"
    if command[1].startswith("-") and (command[1] != "-m" or len(command) < 3):
        return f"its command is not `python -m <module>` or `python <script>` but {command[1]!r}"
    warm = pool.get("environment", {})
    for name in IMPORT_TIME_VARIABLES:
        if env.get(name) != warm.get(name):
            return (
                f"its environment has {name}={env.get(name)!r} where the pool's interpreters "
                f"read {name}={warm.get(name)!r} at import"
            )
    return ""


def _request(
    command: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path
) -> ReplicaRequest:
    exit_file = str(log.with_suffix(".exit"))
    if command[1] == "-m":
        return ReplicaRequest(
            list(command[3:]), dict(env), str(cwd), str(log), exit_file, module=command[2]
        )
    return ReplicaRequest(
        list(command[2:]), dict(env), str(cwd), str(log), exit_file, script=command[1]
    )


def _claim(pool: Path) -> Path | None:
    """A waiting worker of the pool, now ours; None when none waits."""
    for worker in workers(pool):
        with contextlib.suppress(FileNotFoundError):
            (worker / READY).rename(worker / CLAIMED)
            if worker_alive(worker):
                return worker
    return None


def _any_coming(pool: Path) -> bool:
    """A worker not yet claimed still runs (warming, or waiting for its slot)."""
    return any(not (w / CLAIMED).exists() and worker_alive(w) for w in workers(pool))


class WarmProcess:
    """A replica running in a pool's worker: the ``subprocess.Popen`` calls the cluster
    uses (``pid``, ``poll``, ``wait``). The worker is no child of ours: its end is read
    from the exit file it writes, or its death from ``/proc``."""

    def __init__(self, pid: int, start: str, exit_file: Path) -> None:
        self.pid = pid
        self.start = start
        self.exit_file = exit_file
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            # Looked at before the file: a worker that ended had written it by then.
            alive = process_alive(self.pid, self.start)
            if self.exit_file.exists():
                self.returncode = int(self.exit_file.read_text(encoding="utf-8"))
            elif not alive:
                self.returncode = EXIT_KILLED
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("warm worker", timeout or 0.0)
            time.sleep(CLAIM_POLL_SECONDS)
        return code


def run_warm(
    root: Path,
    *,
    resource_id: str,
    label: str,
    command: Sequence[str],
    env: Mapping[str, str],
    log: Path,
) -> WarmProcess | None:
    """Hand the replica ``label`` to a waiting worker of the pool ``resource_id``, waiting
    for one while a worker is coming; None (with one line saying why) where it must run
    cold."""
    pool = pool_dir(root, resource_id)
    try:
        info = json.loads((pool / POOL_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        _log.warning(
            "%s runs cold: persistent resource %s has no pool any more", label, resource_id
        )
        return None
    if reason := cold_reason(info, command, env):
        _log.warning("%s runs cold, not on persistent resource %s: %s", label, resource_id, reason)
        return None
    while (worker := _claim(pool)) is None:
        if not _any_coming(pool):
            _log.warning(
                "%s runs cold: no worker of persistent resource %s is alive (an `up` or "
                "`refresh` replaces dead ones)",
                label,
                resource_id,
            )
            return None
        time.sleep(CLAIM_POLL_SECONDS)
    request = _request(command, env, project_root(), log)
    Path(request.exit_file).unlink(missing_ok=True)
    request.write(worker)
    who = json.loads((worker / WORKER_FILE).read_text(encoding="utf-8"))
    _log.info("%s runs warm in worker %s of persistent resource %s", label, who["pid"], resource_id)
    return WarmProcess(int(who["pid"]), who["start"], Path(request.exit_file))


def pool_exists(root: Path, resource_id: str) -> bool:
    return (pool_dir(root, resource_id) / POOL_FILE).is_file()


def pool_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A worker's environment: ``environ`` with the path a replica's gets (the project,
    then this library), so that a replica of a job submitted from the same environment
    finds the pool's ``PYTHONPATH`` equal to its own."""
    # Here, not at import: the component provider's process constructs a local
    # PersistentResource (this module's ``pool_dir``), and there google.api_core, which
    # ``environment`` loads, cannot be imported beside pulumi's own google.rpc.Status.
    from vertex_training.local.runners.environment import replica_pythonpath

    return {**environ, "PYTHONPATH": replica_pythonpath(environ)}


__all__ = [
    "IMPORT_TIME_VARIABLES",
    "ReplicaRequest",
    "WarmProcess",
    "cold_reason",
    "pool_dir",
    "pool_environment",
    "pool_exists",
    "run_warm",
    "worker_alive",
    "workers",
]
