"""What processes on this machine share: a file lock, a whole-file write, and whether a
process still runs (by pid and its kernel start time, so that a recycled pid is not it)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made when missing) between processes."""
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def atomic_write_text(path: Path, text: str) -> None:
    """Readers in other processes see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, ...);
    None when the process is gone or a zombie (it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid``, None when it is gone or a zombie."""
    fields = proc_stat(pid)
    return fields[19] if fields else None


def process_alive(pid: int, start_time: str | None = None) -> bool:
    current = process_start_time(pid)
    return current is not None and (start_time is None or current == start_time)
