"""The typed Args of a persistent resource (pools kept warm), built into its Vertex REST
body one way, judged where they meet their platform, and the rule a job placed on the
resource is held to.

A pool is declared in the machine vocabulary of a job's pools (``machine_type``,
``Accelerator``, boot disk, ``ReservationAffinity``); the resource takes the platform's
region, network, CMEK key and labels. What could never be provisioned (the hardware
catalog's rules, a malformed reservation affinity, an id Vertex refuses) is refused at
construction with ``Finding`` values, before anything is registered.

Vertex's rule for a job on a persistent resource ("train on a persistent resource"): each
of the job's pools matches one of the resource's pools exactly in machine type,
accelerator and disk, and asks for at most that pool's replicas (its ``replicaCount``, or
its autoscaling maximum). ``PersistentResourceArgs.fit_findings`` applies it to a job's
pools; the job side calls it through ``JobCapacity`` (the jobs package cannot import
this one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pulumi

from vertex_training._checks import Checked, InvalidArgumentsError, is_known, unchecked_copy
from vertex_training.findings import Finding, beyond
from vertex_training.jobs.api import CustomJobArgs, JobArgs, JobPlatform
from vertex_training.jobs.body import int64, to_body, vertex
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.pools import Machines, ReservationAffinity
from vertex_training.jobs.rules.hardware import (
    acknowledge,
    check_machine_spec,
    check_region,
    normalize_accelerator,
)
from vertex_training.jobs.rules.job import (  # the jobs' own rules, applied here too
    BOOT_DISK_GB_RANGE,
    BOOT_DISK_TYPES,
    PERSISTENT_RESOURCE_ID,
    label_problems,
)

__all__ = [
    "RESERVATION_KEY",
    "Autoscaling",
    "PersistentResourceArgs",
    "ResourcePool",
    "on_capacity",
]

RESERVATION_KEY = "compute.googleapis.com/reservation-name"
"""``ReservationAffinity.key`` of a SPECIFIC_RESERVATION (the only key Vertex takes)."""

DEFAULT_DISK = ("pd-ssd", 100)
"""``DiskSpec``'s defaults (Vertex AI API reference): a pool without a disk has this one,
on a job and on a persistent resource alike, so an unset disk matches it."""


@dataclass(frozen=True, kw_only=True)
class Autoscaling(Checked):
    """``ResourcePool.autoscalingSpec``: the pool grows and shrinks between these counts."""

    min_replica_count: pulumi.Input[int] = field(metadata=vertex("minReplicaCount", encode=int64))
    """Kept warm (and billed) while the resource exists."""
    max_replica_count: pulumi.Input[int] = field(metadata=vertex("maxReplicaCount", encode=int64))
    """The most replicas a job on the pool can have."""


@dataclass(frozen=True, kw_only=True)
class ResourcePool(Machines):
    """A ``ResourcePool`` of a persistent resource: machines of one kind kept provisioned."""

    autoscaling: Autoscaling | None = field(default=None, metadata=vertex("autoscalingSpec"))
    """None: ``replica_count`` replicas, always."""
    id: str | None = None
    """The pool's id within the resource; None: Vertex names it."""

    @property
    def min_replicas(self) -> Any:
        """Replicas billed while the resource exists."""
        return (
            self.replica_count if self.autoscaling is None else self.autoscaling.min_replica_count
        )

    @property
    def max_replicas(self) -> Any:
        """The most replicas a job can have on this pool."""
        if self.autoscaling is None:
            return self.replica_count
        return self.autoscaling.max_replica_count


@dataclass(frozen=True, kw_only=True)
class PersistentResourceArgs(Checked):
    """A Vertex AI PersistentResource: pools kept provisioned for the jobs placed on it."""

    pools: Sequence[ResourcePool]
    platform: JobPlatform | None = None
    """Its region, network, CMEK key, labels (and, on ``local``, its root: a warm pool).
    None only in a stack file's entry, which the stack's platform places."""
    resource_id: str | None = None
    """The id (``persistentResourceId``), 1-63 of ``[a-z0-9-]``; None: the resource name."""
    display_name: pulumi.Input[str] | None = None
    """None: the resource name."""
    labels: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Added to the platform's (the policy pack asks for a ``team``)."""
    network: pulumi.Input[str] | Literal[False] | None = None
    """None: the platform's, if it has one; False: none."""
    kms_key_name: pulumi.Input[str] | None = None
    """None: the platform's."""
    enable_custom_service_account: bool = True
    """Jobs on it run as their own service account (the platform's training account), not
    Vertex's service agent (``resourceRuntimeSpec.serviceAccountSpec``)."""
    reserved_ip_ranges: Sequence[str] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.platform is None:
            return  # a stack file's entry: judged on the stack's platform
        found = self.findings()
        errors = [f for f in found if f.severity == "error"]
        if errors:
            lines = "\n  ".join(map(str, errors))
            raise InvalidArgumentsError(
                f"PersistentResourceArgs would be refused:\n  {lines}", findings=errors
            )
        for warning in found:
            pulumi.log.warn(str(warning))

    # ------------------------------------------------------------------ the resource

    def findings(self) -> list[Finding]:
        """What Vertex would refuse of the pools (each at its argument ``pools[i]...``),
        the platform's acknowledged hardware checks applied; values not known yet are left
        unjudged."""
        assert self.platform is not None
        found: list[Finding] = []
        if not self.pools:
            empty = Finding("resourcePools", "a persistent resource has at least one pool")
            found.append(empty.at("pools"))
        if self.resource_id is not None and not PERSISTENT_RESOURCE_ID.match(self.resource_id):
            found.append(_bad_id(self.resource_id, "resource_id"))
        labels = {**dict(self.platform.labels), **self.labels}
        known = {k: v for k, v in labels.items() if isinstance(v, str)}
        if len(known) == len(labels):
            found += [Finding(at, message).at(at) for at, message in label_problems(known)]
        local = self.platform.environment == "local"
        for index, pool in enumerate(self.pools):
            found += _pool_findings(pool, f"resourcePools[{index}]", f"pools[{index}]", local)
            accelerator = pool.accelerator
            if not local and accelerator is not None and isinstance(accelerator.type, str):
                where = f"resourcePools[{index}].machineSpec"
                found += [
                    f.at(f"pools[{index}].accelerator.type" if f.path != "region" else "")
                    for f in check_region(self.platform.region, [(where, accelerator.type)])
                ]
        return acknowledge(found, self.platform.acknowledged_hardware_checks)

    def id_for(self, name: str) -> str:
        """The resource's id as ``name``: ``resource_id``, else the name (judged)."""
        resource_id = self.resource_id or name
        if not PERSISTENT_RESOURCE_ID.match(resource_id):
            finding = _bad_id(resource_id, "resource_id")
            raise InvalidArgumentsError(f"PersistentResource {name!r}: {finding}", [finding])
        return resource_id

    def pool_bodies(self) -> list[dict[str, Any]]:
        """``resourcePools``: each pool's REST body, in camelCase."""
        return [to_body(pool) for pool in self.pools]

    def body(self, name: str) -> dict[str, Any]:
        """The ``PersistentResource`` REST body the resource ``name`` declares (its id goes
        beside it, in the create request), the platform's settings filled in."""
        platform = self.platform
        assert platform is not None
        network = platform.network if self.network is None else self.network
        key = platform.kms_key_name if self.kms_key_name is None else self.kms_key_name
        body: dict[str, Any] = {
            "displayName": self.display_name if self.display_name is not None else name,
            "resourcePools": self.pool_bodies(),
            "labels": {**dict(platform.labels), **self.labels},
        }
        if network:
            body["network"] = network
        if key is not None:
            body["encryptionSpec"] = {"kmsKeyName": key}
        if self.enable_custom_service_account:
            spec = {"enableCustomServiceAccount": True}
            body["resourceRuntimeSpec"] = {"serviceAccountSpec": spec}
        if self.reserved_ip_ranges:
            body["reservedIpRanges"] = list(self.reserved_ip_ranges)
        return body

    # ------------------------------------------------------------------ jobs on it

    def fit_findings(
        self, resource_id: str, job_pools: Sequence[Any], path: str, parallel_trials: int = 1
    ) -> list[Finding]:
        """Vertex's rule for a job on this resource: each of ``job_pools`` (a job's
        ``WorkerPoolSpec`` views, at ``path[i]``; None for an empty pool) matches one pool
        exactly (machine type, accelerator, disk) and asks for no more replicas than it
        holds; a warning where ``parallel_trials`` runs at once outgrow a pool (trials
        would queue). Pools of the resource not known yet (Outputs) are not judged."""
        pools = [(i, p) for i, p in enumerate(self.pools) if _known_pool(p)]
        if len(pools) < len(self.pools):
            return []
        ours = [(i, p, _shape_of_pool(p)) for i, p in pools]
        offered = "; ".join(f"{_pool_name(i, p)}: {_describe(s)}" for i, p, s in ours)
        found: list[Finding] = []
        demand: dict[int, int] = {}
        for index, job_pool in enumerate(job_pools):
            if job_pool is None:
                continue
            shape = _shape_of_job_pool(job_pool)
            at = f"{path}[{index}]"
            matches = [(i, p) for i, p, s in ours if s == shape]
            if not matches:
                found.append(
                    Finding(
                        at,
                        f"{_describe(shape)} matches no pool of persistent resource "
                        f"{resource_id!r} ({offered})",
                        valid="the machine type, accelerator and boot disk of one of its "
                        "pools exactly, or a pool like this one added to the resource",
                    )
                )
                continue
            i, pool = max(matches, key=lambda m: int(m[1].max_replicas))
            most = int(pool.max_replicas)
            wanted = job_pool.replica_count
            if wanted > most:
                found.append(
                    Finding(
                        f"{at}.replicaCount",
                        f"{wanted} replicas of {_describe(shape)}, but pool "
                        f"{_pool_name(i, pool)} of persistent resource {resource_id!r} holds "
                        f"at most {most} ({_holds(pool)})",
                        valid=f"at most {most} replicas, or a larger pool on the resource",
                    )
                )
            demand[i] = demand.get(i, 0) + wanted
        for i, wanted in demand.items():
            pool = self.pools[i]
            most = int(pool.max_replicas)
            if parallel_trials > 1 and parallel_trials * wanted > most:
                found.append(
                    Finding(
                        "parallelTrialCount",
                        f"{parallel_trials} trials at a time x {wanted} replicas need "
                        f"{parallel_trials * wanted} of pool {_pool_name(i, pool)} of "
                        f"persistent resource {resource_id!r}, which holds {most}: trials "
                        "would queue",
                        severity="warning",
                    )
                )
        return found


def _bad_id(resource_id: str, where: str) -> Finding:
    return Finding(
        "persistentResourceId",
        f"{resource_id!r} is not a persistent resource id",
        valid="1-63 characters: a lowercase letter, then lowercase letters, digits or '-', "
        "not ending with '-' (set resource_id, or name the resource so)",
        caller=where,
    )


def _known(*values: Any) -> bool:
    return all(is_known(v) for v in values)


def _known_pool(pool: ResourcePool) -> bool:
    accelerator = pool.accelerator
    values = [pool.machine_type, pool.boot_disk_type, pool.boot_disk_size_gb, pool.max_replicas]
    if accelerator is not None:
        values += [accelerator.type, accelerator.count]
    return _known(*values)


Shape = tuple[str, str | None, int, str, int]
"""What must match between a job's pool and a resource's: machine type, accelerator type
and count, boot disk type and size (the service's defaults filled in)."""


def _shape(machine: str, accelerator: str | None, count: int, disk: Any, size: Any) -> Shape:
    accelerator = normalize_accelerator(accelerator)
    return (
        machine,
        accelerator,
        int(count) if accelerator else 0,
        disk or DEFAULT_DISK[0],
        int(size) if size else DEFAULT_DISK[1],
    )


def _shape_of_pool(pool: Any) -> Shape:
    """A ``ResourcePool``'s shape (its values known: ``_known_pool``)."""
    accelerator = pool.accelerator
    return _shape(
        str(pool.machine_type),
        None if accelerator is None else str(accelerator.type),
        0 if accelerator is None else int(accelerator.count),
        pool.boot_disk_type,
        pool.boot_disk_size_gb,
    )


def _shape_of_job_pool(pool: Any) -> Shape:
    """A job's ``WorkerPoolSpec`` view's shape."""
    machine, disk = pool.machine_spec, pool.disk_spec
    return _shape(
        machine.machine_type or "",
        machine.accelerator_type,
        machine.accelerator_count,
        None if disk is None else disk.boot_disk_type,
        None if disk is None else disk.boot_disk_size_gb,
    )


def _describe(shape: Shape) -> str:
    machine, accelerator, count, disk, size = shape
    gpus = f" + {count} x {accelerator}" if accelerator else ""
    return f"{machine}{gpus}, {disk} {size} GB"


def _pool_name(index: int, pool: ResourcePool) -> str:
    return repr(pool.id) if pool.id else f"pools[{index}]"


def _holds(pool: ResourcePool) -> str:
    if pool.autoscaling is None:
        return f"replicaCount {pool.replica_count}"
    return f"autoscaling maximum {pool.autoscaling.max_replica_count}"


INT64_MAX = 2**63 - 1
"""The most an int64 field of the protos (a replica count) holds."""


def _pool_findings(pool: Any, path: str, caller: str, local: bool) -> list[Finding]:
    """What one ``ResourcePool`` must be to be provisioned at all: replica counts, the hardware
    catalog's machine and accelerator rules, the disk, what pulumi-gcp can send, a
    well-formed reservation; each at its API path under ``path`` and the caller's field
    under ``caller`` (derived from the pool's fields)."""
    found = [*_replica_findings(pool), *_machine_findings(pool), *_disk_findings(pool)]
    if not local:
        found += _unsendable_findings(pool)
    out = []
    for f in found:
        where = caller_path(ResourcePool, f.path)
        out.append(replace(f, path=f"{path}.{f.path}").at(f"{caller}.{where}" if where else caller))
    if pool.reservation_affinity is not None:
        out += _reservation_findings(
            pool.reservation_affinity,
            f"{path}.machineSpec.reservationAffinity",
            f"{caller}.reservation_affinity",
        )
    return out


def _replica_findings(pool: Any) -> Iterator[Finding]:
    counts = {"replicaCount": pool.replica_count}
    if pool.autoscaling is not None:
        counts["autoscalingSpec.minReplicaCount"] = pool.autoscaling.min_replica_count
        counts["autoscalingSpec.maxReplicaCount"] = pool.autoscaling.max_replica_count
    for key, count in counts.items():
        if is_known(count) and count > INT64_MAX:  # more than the proto's int64 holds
            yield beyond(key, count, INT64_MAX)
        elif is_known(count) and count < (0 if key.endswith("minReplicaCount") else 1):
            yield Finding(key, f"{count} replicas", valid="at least 1")
    scaling = pool.autoscaling
    if scaling is not None and _known(scaling.min_replica_count, scaling.max_replica_count):
        low, high = scaling.min_replica_count, scaling.max_replica_count
        if high < low:
            message = f"the maximum {high} is below the minimum {low}"
            valid = f"a maximum of at least {low}"
            yield Finding("autoscalingSpec.maxReplicaCount", message, valid=valid)
        if is_known(pool.replica_count) and not low <= pool.replica_count <= high:
            message = f"{pool.replica_count} is outside the autoscaling range {low}-{high}"
            yield Finding("replicaCount", message, valid=f"a replica count from {low} to {high}")


def _machine_findings(pool: Any) -> list[Finding]:
    """The machine, judged on every platform: one the catalog refuses is valid nowhere."""
    accelerator = pool.accelerator
    values = [pool.machine_type] + (
        []
        if accelerator is None
        else [accelerator.type, accelerator.count, accelerator.tpu_topology]
    )
    if not _known(*values):
        return []
    return check_machine_spec(
        "machineSpec",
        str(pool.machine_type),
        None if accelerator is None else str(accelerator.type),
        0 if accelerator is None else int(accelerator.count),
        None if accelerator is None else accelerator.tpu_topology,
    )


def _disk_findings(pool: Any) -> Iterator[Finding]:
    disk = pool.boot_disk_type
    if disk is not None and is_known(disk) and disk not in BOOT_DISK_TYPES:
        message = f"{disk!r} is not a boot disk type Vertex documents"
        yield Finding("diskSpec.bootDiskType", message, valid=", ".join(BOOT_DISK_TYPES))
    size, (low, high) = pool.boot_disk_size_gb, BOOT_DISK_GB_RANGE
    if size is not None and is_known(size) and not low <= size <= high:
        message = f"{size} is outside the valid range"
        yield Finding("diskSpec.bootDiskSizeGb", message, valid=f"{low}-{high}")


def _unsendable_findings(pool: Any) -> list[Finding]:
    """pulumi-gcp's AiPersistentResource (10.2.0) has no field for these: refused, not
    dropped on the way to Vertex."""
    accelerator = pool.accelerator
    return [
        Finding(
            f"machineSpec.{api}",
            f"pulumi-gcp's vertex.AiPersistentResource cannot send machineSpec.{api} to Vertex",
            valid="leave it unset on a persistent resource's pool",
        )
        for value, api in (
            (pool.reservation_affinity, "reservationAffinity"),
            (accelerator and accelerator.tpu_topology, "tpuTopology"),
        )
        if value is not None
    ]


def _reservation_findings(affinity: ReservationAffinity, path: str, caller: str) -> list[Finding]:
    """A SPECIFIC_RESERVATION names its reservations under the one key Vertex takes; the
    other types name none (Vertex refuses a key or values on them)."""
    if affinity.type == "SPECIFIC_RESERVATION":
        found = []
        if affinity.key != RESERVATION_KEY:
            found.append(
                Finding(
                    f"{path}.key",
                    f"{affinity.key!r} is not the reservation key",
                    valid=RESERVATION_KEY,
                ).at(f"{caller}.key")
            )
        if not affinity.values:
            found.append(
                Finding(
                    f"{path}.values",
                    "a SPECIFIC_RESERVATION names at least one reservation",
                    valid="projects/P/zones/Z/reservations/R",
                ).at(f"{caller}.values")
            )
        return found
    if affinity.key is not None or affinity.values:
        return [
            Finding(
                path,
                f"{affinity.type} takes no key or values",
                valid="type SPECIFIC_RESERVATION with them, or drop key and values",
            ).at(caller)
        ]
    return []


def on_capacity(args: JobArgs, find: Callable[[Any], Any]) -> JobArgs:
    """``args`` with its run's ``persistentResourceId`` replaced by ``find`` of it (the
    capacity it names), or as they are where ``find`` gives None."""
    run = args if isinstance(args, CustomJobArgs) else args.trial
    capacity = find(run.persistent_resource_id)
    if capacity is None:
        return args
    if isinstance(args, CustomJobArgs):
        return unchecked_copy(args, persistent_resource_id=capacity)
    return unchecked_copy(args, trial=unchecked_copy(args.trial, persistent_resource_id=capacity))
