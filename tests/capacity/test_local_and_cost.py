"""On a local platform the resource is the warm pool (``capacity.local.WarmPool``, here a
stand-in recording its Args); on a cloud one it is priced per hour while it exists, beside
the stack's one-off total, never in it."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.capacity.resources import gpu_pool, platform
from tests.pulumi_mocks import run_pulumi
from vertex_training.capacity import PersistentResource, PersistentResourceArgs, ResourcePool
from vertex_training.cost.estimate import stack_estimate
from vertex_training.cost.report import (
    capacity_estimate_message,
    estimate_table,
    stack_total_message,
)


@pytest.fixture
def warm_pools(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A stand-in ``vertex_training.capacity.local`` whose ``WarmPool`` records its Args."""
    made: list[Any] = []

    @dataclass(frozen=True, kw_only=True)
    class WarmPoolArgs:
        resource_id: str
        resource_pools: list[dict[str, Any]]
        local_root: str
        project: str
        location: str

    class WarmPool(pulumi.ComponentResource):
        def __init__(self, name: str, args: WarmPoolArgs, opts: pulumi.ResourceOptions) -> None:
            super().__init__("test:capacity:WarmPool", name, None, opts)
            self.name = pulumi.Output.from_input(f"local/{args.resource_id}")
            made.append((name, args))

    module = types.ModuleType("vertex_training.capacity.local")
    module.WarmPool = WarmPool  # type: ignore[attr-defined]
    module.WarmPoolArgs = WarmPoolArgs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vertex_training.capacity.local", module)
    return made


def test_on_a_local_platform_it_is_the_warm_pool(warm_pools: list[Any], tmp_path: Path) -> None:
    local = platform("local", local_root=tmp_path, network=None, kms_key_name=None)
    args = PersistentResourceArgs(
        platform=local, pools=[ResourcePool(machine_type="n1-standard-4", replica_count=2)]
    )
    made: list[PersistentResource] = []
    run = run_pulumi(lambda: made.append(PersistentResource("warm", args)) or made[0].name)
    ((name, pool_args),) = warm_pools
    assert name == "warm-pool"
    assert pool_args.resource_id == "warm"
    assert pool_args.resource_pools == [
        {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "2"}
    ]
    assert pool_args.local_root == str(tmp_path)
    assert (pool_args.project, pool_args.location) == ("p", "us-central1")
    assert not [r for r in run.registrations if r.type.startswith("gcp:")]
    assert made[0].cost_estimate is None
    pool = run.named("warm-pool")
    assert pool.parent == run.named("warm").urn


def test_it_is_priced_per_hour_beside_the_total() -> None:
    resources: list[PersistentResource] = []
    args = PersistentResourceArgs(
        platform=platform(),
        pools=[gpu_pool(), ResourcePool(machine_type="e2-standard-4", replica_count=2)],
    )
    run_pulumi(lambda: resources.append(PersistentResource("warm", args)))
    estimate = resources[0].cost_estimate
    assert estimate is not None
    # Minimum replicas: one n1-standard-8 with two T4s (autoscaling from 1) and two e2s.
    assert [(p.replicas, p.machine_type, p.accelerator_count) for p in estimate.pools] == [
        (1, "n1-standard-8", 2),
        (2, "e2-standard-4", 0),
    ]
    assert estimate.usd_per_hour > 0 and not estimate.unknown
    assert capacity_estimate_message(estimate) == (
        f"estimated cost of persistent resource warm: ${estimate.usd_per_hour:,.2f} per hour "
        "while it exists (1 x n1-standard-8, 2 x e2-standard-4 + 2 x NVIDIA_TESLA_T4 at "
        "minimum replicas, on-demand, us-central1), whether or not a job runs on it; the jobs "
        "on it add nothing per run"
    )
    total = stack_estimate([], None, (), [estimate])
    assert total.usd_high == 0  # kept out of the one-off total
    rate = f"${estimate.usd_per_hour:,.2f} per hour"
    assert f"capacity: {rate} while it exists (1 persistent resource" in stack_total_message(total)
    table = estimate_table(total)
    assert "warm (persistent resource)" in table and "total: $0.00" in table
