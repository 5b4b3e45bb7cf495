"""A warm worker of a local persistent resource:
``python -m vertex_training.local.runners.worker <pool dir> <slot> [<pid> <start>]``.

It imports what the trainer imports, waits for the slot's previous worker (``<pid>``,
started at kernel time ``<start>``) to end, then for one replica (``warm`` describes the
files). Given one, it forks the slot's next worker from itself (a copy of this warm
interpreter as it was before any job, so the next one imports nothing and no job sees
another's state), runs the replica in this interpreter with exactly its environment, and
ends.
"""

from __future__ import annotations

import importlib
import logging
import os
import runpy
import sys
import time
import traceback
from pathlib import Path

from vertex_training._processes import process_alive, process_start_time
from vertex_training.local.runners.pool import WARM, listed_workers, waiting, write_worker_file
from vertex_training.local.runners.warm import (
    POOL_FILE,
    READY,
    SLOTS_DIR,
    ReplicaRequest,
    worker_alive,
)

_log = logging.getLogger("vertex_training.local.runners.worker")

WARM_MODULES = ("tensorflow", "tf_keras", "hypertune")
"""What the trainer imports that takes long: imported before any job (the trainer's own
modules are not, so a job runs the trainer as it is on disk when the job starts)."""
POLL_SECONDS = 0.02


def run_replica(request: ReplicaRequest) -> int:
    """Run the replica as ``python -m module`` or ``python script`` would; its exit code."""
    sys.stdout.flush()
    sys.stderr.flush()
    log = os.open(request.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    try:
        if request.module is not None:
            sys.argv = [request.module, *request.args]
            runpy.run_module(request.module, run_name="__main__", alter_sys=True)
        else:
            assert request.script is not None
            sys.argv = [request.script, *request.args]
            sys.path[0] = str(Path(request.script).resolve().parent)
            runpy.run_path(request.script, run_name="__main__")
        code = 0
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            # What the interpreter writes for ``sys.exit(message)``: the replica's own
            # output in its log, as a cold run shows it (no log line of ours).
            sys.stderr.write(f"{exit_.code}\n")
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def fork_successor() -> tuple[int, str] | None:
    """Fork the slot's next worker from this interpreter, in a session of its own and no
    child of ours (a zombie would look alive): in it, this worker (pid, start time); here,
    None. A fork is safe here because this interpreter has only imported modules:
    TensorFlow starts its runtime (thread pools, CUDA) at a job's first op, after it."""
    parent = (os.getpid(), process_start_time(os.getpid()) or "")
    if child := os.fork():
        os.waitpid(child, 0)  # the go-between: it ends at once
        return None
    try:
        if os.fork():
            os._exit(0)
        os.setsid()  # its own group too: a stop of a worker's group is a stop of it alone
        # A fresh interpreter seeds numpy's global generator itself (``random`` reseeds at
        # a fork on its own).
        if (numpy := sys.modules.get("numpy")) is not None:
            numpy.random.seed()
        return parent
    except BaseException:
        os._exit(1)


def main(argv: list[str]) -> int:
    pool, slot = Path(argv[1]), int(argv[2])
    predecessor = (int(argv[3]), argv[4]) if len(argv) > 4 else None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # Its own handler: the root logger stays unconfigured for the replica's basicConfig.
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False
    me = pool / SLOTS_DIR / str(slot) / str(os.getpid())
    me.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for module in WARM_MODULES:
        importlib.import_module(module)
    _log.info("worker %d of slot %d warm in %.1f s", os.getpid(), slot, time.monotonic() - started)
    while True:
        (me / WARM).touch()
        while predecessor and process_alive(*predecessor):
            if not (pool / POOL_FILE).exists():
                return 0  # destroyed
            time.sleep(POLL_SECONDS)
        (me / READY).touch()
        while (request := ReplicaRequest.read(me)) is None:
            if not (pool / POOL_FILE).exists():
                return 0
            time.sleep(POLL_SECONDS)
        # The slot's next worker, unless the pool is going or an `up` started one meanwhile.
        others = (w for w in listed_workers(pool, slot) if w != me)
        if not (pool / POOL_FILE).exists() or any(worker_alive(w) and waiting(w) for w in others):
            break
        if (predecessor := fork_successor()) is None:
            break
        me = pool / SLOTS_DIR / str(slot) / str(os.getpid())
        try:
            write_worker_file(me, os.getpid(), process_start_time(os.getpid()))
        except FileNotFoundError:
            return 0  # the pool went meanwhile
        _log.info("worker %d of slot %d forked warm from %d", os.getpid(), slot, predecessor[0])
    _log.info("worker %d runs %s", os.getpid(), request.module or request.script)
    code = run_replica(request)
    exit_file = Path(request.exit_file)
    temporary = exit_file.with_name(f"{exit_file.name}.tmp")
    temporary.write_text(str(code), encoding="utf-8")
    temporary.rename(exit_file)
    return code


if __name__ == "__main__":
    # No interpreter teardown: TensorFlow's threads may hold it, and nothing is left to save.
    os._exit(main(sys.argv))
