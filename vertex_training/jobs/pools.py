"""The typed Args of a worker pool (``WorkerPoolSpec``: machine, accelerators, container,
disk, reservations, NFS mounts) and of a job's ``Scheduling``, each built into its Vertex
REST body and judged where it is built by what it must be in any job."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi

from vertex_training._checks import LATER, Checked
from vertex_training.findings import Finding
from vertex_training.jobs.body import int64, seconds, to_body, vertex
from vertex_training.jobs.refusals import judged_where_built, refusal
from vertex_training.jobs.rules.job import pool_findings
from vertex_training.jobs.view import MAX_DURATION_SECONDS, WorkerPoolSpec


@dataclass(frozen=True, kw_only=True)
class ReservationAffinity(Checked):
    """``MachineSpec.reservationAffinity``: which Compute Engine reservations a pool's VMs
    may consume."""

    type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"] = field(
        metadata=vertex("reservationAffinityType")
    )
    key: str | None = None
    """SPECIFIC_RESERVATION: the label key, ``compute.googleapis.com/reservation-name``."""
    values: Sequence[str] = ()
    """SPECIFIC_RESERVATION: the reservations, ``projects/P/zones/Z/reservations/R``."""


@dataclass(frozen=True, kw_only=True)
class NfsMount(Checked):
    """``WorkerPoolSpec.nfsMounts[]``: an NFS share mounted in each replica."""

    server: str
    """IP address of the NFS server."""
    path: str
    """Source path exported by the server (starts with ``/``)."""
    mount_point: str
    """Mounted at ``/mnt/nfs/<mount_point>`` in the container."""


@dataclass(frozen=True)
class Accelerator(Checked):
    """GPUs (or TPU chips) attached to each replica: ``MachineSpec.acceleratorType``/``Count``."""

    type: pulumi.Input[str] = field(metadata=vertex("acceleratorType"))
    """The API's enum name, e.g. ``NVIDIA_TESLA_V100``, ``NVIDIA_H100_80GB``, ``TPU_V5_LITEPOD``."""
    count: pulumi.Input[int] = field(default=1, metadata=vertex("acceleratorCount"))
    tpu_topology: pulumi.Input[str] | None = field(default=None, kw_only=True)
    """TPUs: the slice's topology (``MachineSpec.tpuTopology``), e.g. ``2x2``."""


@dataclass(frozen=True, kw_only=True)
class Machines(Checked):
    """Machines of one kind, alike in a job's pool and in a persistent resource's (where a
    job's pools must match them): the machine, its accelerators, the replicas, the boot
    disk and the reservations they may consume."""

    machine_type: pulumi.Input[str] = field(metadata=vertex("machineSpec.machineType"))
    accelerator: Accelerator | None = field(default=None, metadata=vertex("machineSpec"))
    replica_count: pulumi.Input[int] = field(
        default=1, metadata=vertex("replicaCount", encode=int64)
    )
    boot_disk_type: pulumi.Input[str] | None = field(
        default=None, metadata=vertex("diskSpec.bootDiskType")
    )
    """None: the service's default (``pd-ssd``)."""
    boot_disk_size_gb: pulumi.Input[int] | None = field(
        default=None, metadata=vertex("diskSpec.bootDiskSizeGb")
    )
    """None: the service's default (100)."""
    reservation_affinity: ReservationAffinity | None = field(
        default=None, metadata=vertex("machineSpec.reservationAffinity")
    )
    """None: the service's default (consume any matching reservation)."""


@dataclass(frozen=True, kw_only=True)
class WorkerPool(Machines):
    """A ``WorkerPoolSpec``: the machine each replica runs on and the container it runs."""

    def __post_init__(self) -> None:
        super().__post_init__()
        # What a pool must be anywhere, its machine against the catalog included: refused
        # here, before any resource exists; the warnings are its job's to show.
        _ = self.warnings

    @functools.cached_property
    def warnings(self) -> tuple[Finding, ...]:
        """What the hardware catalog cannot tell about this pool (or what it acknowledged),
        at API paths under the pool: shown by the job that runs it. Judged once, where the
        pool is built (not a field: it is no argument, and no part of the body)."""
        body = to_body(self)  # without an image, the job's platform gives one
        body.setdefault("containerSpec", {}).setdefault("imageUri", LATER)
        return judged_where_built(self, WorkerPoolSpec, pool_findings, body)

    image: pulumi.Input[str] | None = field(default=None, metadata=vertex("containerSpec.imageUri"))
    """``containerSpec.imageUri``; None: the platform's image when it has exactly one. On a
    cloud platform, an image by digest (``platform.image("trainer")``)."""
    command: pulumi.Input[Sequence[pulumi.Input[str]]] | None = field(
        default=None, metadata=vertex("containerSpec.command")
    )
    args: pulumi.Input[Sequence[pulumi.Input[str]]] = field(
        default=(), metadata=vertex("containerSpec.args")
    )
    env: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict,
        metadata=vertex(
            "containerSpec.env",
            encode=lambda env: [{"name": k, "value": v} for k, v in env.items()],
        ),
    )
    nfs_mounts: Sequence[NfsMount] = ()
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other ``WorkerPoolSpec`` field (camelCase), merged into this pool's body,
    e.g. ``{"lustreMounts": [...]}``."""
    acknowledged_hardware_checks: Sequence[str] = field(default=(), metadata=vertex(None))
    """Hardware check ids (from an error's "(check ...)") to warn about instead of refusing,
    for a catalog row that is out of date: the job that runs the pool, judged on its
    platform's catalog, warns instead of refusing. Never part of the Vertex body."""

    def with_replicas(self, replica_count: pulumi.Input[int]) -> WorkerPool:
        """This pool with another replica count (e.g. the workers of a chief's pool)."""
        return dataclasses.replace(self, replica_count=replica_count)


@dataclass(frozen=True, kw_only=True)
class Scheduling(Checked):
    """``Scheduling``: how long a job may run, on which capacity, and its restarts."""

    strategy: Literal["STANDARD", "SPOT", "FLEX_START"] | None = None
    """None: the service's default (on-demand). ``SPOT`` is cheaper and may be preempted."""
    timeout_seconds: pulumi.Input[float] | None = field(
        default=None, metadata=vertex("timeout", encode=seconds)
    )
    """The job is cancelled after this long (the service default is 7 days)."""
    max_wait_seconds: pulumi.Input[float] | None = field(
        default=None, metadata=vertex("maxWaitDuration", encode=seconds)
    )
    """FLEX_START: how long to wait for capacity."""
    restart_job_on_worker_restart: bool = False
    disable_retries: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        # A protobuf Duration holds at most 315,576,000,000 s (10,000 years): a larger
        # number (1e400 reads as infinity) is said here, not met as an OverflowError.
        problems = [
            Finding(
                key,
                f"{value:g} is out of range",
                valid=f"a number of seconds up to {MAX_DURATION_SECONDS}",
                caller=key,
            )
            for key in ("timeout_seconds", "max_wait_seconds")
            if isinstance(value := getattr(self, key), int | float)
            and not abs(value) <= MAX_DURATION_SECONDS
        ]
        if problems:
            raise refusal("Scheduling", problems)


__all__ = [
    "Accelerator",
    "Machines",
    "NfsMount",
    "ReservationAffinity",
    "Scheduling",
    "WorkerPool",
]
