"""The pool side of a local persistent resource: its worker processes, started, replaced
and stopped (the files they share with the jobs side: ``jobs.backends.local.warm``)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from vertex_training.local.runners.warm import (
    CLAIMED,
    IMPORT_TIME_VARIABLES,
    POOL_FILE,
    READY,
    SLOTS_DIR,
    WORKER_FILE,
    pool_environment,
    worker_alive,
    workers,
)

_log = logging.getLogger(__name__)

WORKER_MODULE = "vertex_training.local.runners.worker"
WARM = "warm"
"""A worker's file once it has imported what the trainer imports (it may still wait for
its slot's previous worker to end before it is ``ready``)."""
WARM_TIMEOUT_SECONDS = 600.0
"""How long ``up`` waits for a new worker to import TensorFlow."""
LOGS_DIR = "logs"


def start_worker(pool: Path, slot: int, env: Mapping[str, str], after: Path | None) -> Path:
    """Start a worker for ``slot`` in a session of its own (it outlives its starter, the
    provider's process), ready once the worker ``after`` (a worker directory, the slot's
    busy one) has ended; its directory. (A worker that takes a replica forks the slot's
    next one itself.)"""
    (pool / LOGS_DIR).mkdir(parents=True, exist_ok=True)
    predecessor = json.loads((after / WORKER_FILE).read_text()) if after else None
    command = [sys.executable, "-m", WORKER_MODULE, str(pool), str(slot)]
    if predecessor:
        command += [str(predecessor["pid"]), str(predecessor["start"])]
    # The cluster module loads the protos: only what starts or stops a worker needs it, not
    # the health check a no-op ``up`` makes.
    from vertex_training.local.runners.cluster import start_process

    process, start = start_process(command, pool / LOGS_DIR / f"slot-{slot}.log", env)
    # Reaped when it ends while its starter still runs: a zombie would look alive.
    threading.Thread(target=process.wait, daemon=True).start()
    worker = pool / SLOTS_DIR / str(slot) / str(process.pid)
    write_worker_file(worker, process.pid, start)
    return worker


def write_worker_file(worker: Path, pid: int, start: str | None) -> None:
    """The worker's directory in its slot's, and in it its process (``worker.json``)."""
    worker.mkdir(exist_ok=True)
    temporary = worker / f"{WORKER_FILE}.tmp"
    temporary.write_text(json.dumps({"pid": pid, "start": start}), encoding="utf-8")
    temporary.rename(worker / WORKER_FILE)  # read whole or not at all


def slot_workers(pool: Path, slot: int) -> list[Path]:
    """The slot's live workers; the directories of dead ones are removed."""
    directory = pool / SLOTS_DIR / str(slot)
    directory.mkdir(parents=True, exist_ok=True)
    live = []
    for worker in sorted(directory.iterdir()):
        if worker_alive(worker):
            live.append(worker)
        else:
            shutil.rmtree(worker, ignore_errors=True)
    return live


def waiting(worker: Path) -> bool:
    """Not claimed by a job (warming, waiting for its slot, or ready)."""
    return not (worker / CLAIMED).exists()


def create_pool(pool: Path, slots: int) -> None:
    """Record the pool (its slots and the import-time environment of its workers) and
    start its workers."""
    pool.mkdir(parents=True, exist_ok=True)
    env = pool_environment(os.environ)
    warm_env = {name: env[name] for name in IMPORT_TIME_VARIABLES if name in env}
    info = {"slots": slots, "python": sys.executable, "environment": warm_env}
    (pool / POOL_FILE).write_text(json.dumps(info, indent=1), encoding="utf-8")
    ensure_workers(pool)


def ensure_workers(pool: Path) -> list[str]:
    """Start a worker in every slot that has none waiting (one died, or the machine
    restarted), and wait until the new ones are warm; what was replaced, one line each."""
    info = json.loads((pool / POOL_FILE).read_text(encoding="utf-8"))
    # What an interpreter reads at import is the pool's, whoever starts the worker.
    env = {
        k: v for k, v in pool_environment(os.environ).items() if k not in IMPORT_TIME_VARIABLES
    } | info["environment"]
    started, replaced = [], []
    for slot in range(int(info["slots"])):
        live = slot_workers(pool, slot)
        if not any(waiting(w) for w in live):
            busy = [w for w in live if not waiting(w)]
            started.append(start_worker(pool, slot, env, busy[0] if busy else None))
            replaced.append(f"slot {slot}: no live worker waiting; started one")
    for line in replaced:
        _log.info("%s: %s", pool.name, line)
    _wait_warm(pool, started)
    return replaced


def healthy(pool: Path) -> bool:
    """Every slot has a live worker waiting."""
    try:
        info = json.loads((pool / POOL_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    return all(
        any(worker_alive(w) and waiting(w) for w in listed_workers(pool, slot))
        for slot in range(int(info["slots"]))
    )


def listed_workers(pool: Path, slot: int) -> list[Path]:
    """The slot's worker directories, live or not."""
    directory = pool / SLOTS_DIR / str(slot)
    return sorted(directory.iterdir()) if directory.is_dir() else []


def _wait_warm(pool: Path, started: list[Path]) -> None:
    from vertex_training.local.runners.cluster import log_tail

    deadline = time.monotonic() + WARM_TIMEOUT_SECONDS
    for worker in started:
        while not ((worker / WARM).exists() or (worker / READY).exists()):
            if not worker_alive(worker) or time.monotonic() > deadline:
                slot = worker.parent.name
                log = pool / LOGS_DIR / f"slot-{slot}.log"
                raise RuntimeError(
                    f"a worker of {pool.name} (slot {slot}) did not warm up (log {log}):\n"
                    f"{log_tail(log)}"
                )
            time.sleep(0.1)


def stop_pool(pool: Path) -> None:
    """Stop every worker of the pool (a job's replica in one included) and remove it:
    ``pool.json`` goes first, so that no worker forks a successor any more."""
    from vertex_training.local.runners.cluster import stop_process_groups

    with contextlib.suppress(FileNotFoundError):
        (pool / POOL_FILE).unlink()
    # A worker that took a job just before may still fork its successor: look again.
    for _ in range(3):
        pids = []
        for worker in workers(pool) if pool.is_dir() else ():
            if worker_alive(worker):
                pids.append(int(json.loads((worker / WORKER_FILE).read_text())["pid"]))
        if not pids:
            break
        stop_process_groups(pids)
    shutil.rmtree(pool, ignore_errors=True)


__all__ = [
    "create_pool",
    "ensure_workers",
    "healthy",
    "listed_workers",
    "start_worker",
    "stop_pool",
    "waiting",
    "write_worker_file",
]
