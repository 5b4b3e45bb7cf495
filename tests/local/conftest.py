"""Fixtures for the local backend tests: a backend in a temporary root, stand-in pools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.bodies import pool
from vertex_training.jobs.backends.vertex import record_from_proto
from vertex_training.jobs.records import JobRecord
from vertex_training.local.jobs import job_message
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import LocalJobState

STANDIN = str(Path(__file__).with_name("standin.py"))

PoolFactory = Callable[..., dict[str, Any]]


@pytest.fixture
def backend(tmp_path: Path) -> JobRunner:
    return JobRunner(str(tmp_path / "root"))


def read_back(backend: JobRunner, job: LocalJobState) -> JobRecord:
    """The job as a client reads it from the local Vertex: the JobService's message, as
    the Vertex backend reports it (trials, best trial, model)."""
    return record_from_proto(job_message(backend, job))


def standin(
    args: Sequence[str] = (),
    replicas: int = 1,
    env: Sequence[tuple[str, str]] = (),
    accelerators: int = 0,
) -> dict[str, Any]:
    """A ``WorkerPoolSpec`` body whose replicas run ``standin.py`` with ``args``."""
    return pool(
        "n1-standard-8" if accelerators else "n1-standard-4",
        "NVIDIA_TESLA_T4" if accelerators else None,
        accelerators,
        replicas=replicas,
        image="python:3.11-slim",
        command=("python", STANDIN),
        args=args,
        env=env,
    )


@pytest.fixture
def standin_pool() -> PoolFactory:
    return standin


def pid_gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
