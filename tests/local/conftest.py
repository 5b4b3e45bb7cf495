"""Fixtures for the local backend tests: a backend in a temporary root, stand-in pools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from vertex_training.jobs.backends.local import LocalBackend
from vertex_training.jobs.spec import ContainerSpec, MachineSpec, WorkerPoolSpec

STANDIN = str(Path(__file__).with_name("standin.py"))

PoolFactory = Callable[..., WorkerPoolSpec]


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(str(tmp_path / "root"))


@pytest.fixture
def standin_pool() -> PoolFactory:
    """A worker pool whose replicas run ``standin.py`` with ``args``."""

    def make(
        args: Sequence[str] = (),
        replicas: int = 1,
        env: Sequence[tuple[str, str]] = (),
        accelerators: int = 0,
    ) -> WorkerPoolSpec:
        machine = (
            MachineSpec("n1-standard-8", "NVIDIA_TESLA_T4", accelerators)
            if accelerators
            else MachineSpec("n1-standard-4")
        )
        return WorkerPoolSpec(
            machine=machine,
            container=ContainerSpec(
                image_uri="python:3.11-slim",
                command=("python", STANDIN),
                args=tuple(args),
                env=tuple(env),
            ),
            replica_count=replicas,
        )

    return make


def pid_gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
