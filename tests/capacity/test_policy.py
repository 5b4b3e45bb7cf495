"""The pack's capacity rules on what a persistent resource registers (under mocks): the
environment's always-on hourly capacity is bounded (config-driven), and a resource says
which team it belongs to."""

from __future__ import annotations

import copy

from policy import rules
from policy.rules import PERSISTENT_RESOURCE_TYPE, Resource
from tests.capacity.resources import gpu_pool, platform
from tests.pulumi_mocks import run_pulumi
from vertex_training.capacity import PersistentResource, PersistentResourceArgs


def _registered(labels: dict[str, str]) -> tuple[Resource, float]:
    made: list[PersistentResource] = []
    args = PersistentResourceArgs(platform=platform(), pools=[gpu_pool()], labels=labels)
    run = run_pulumi(lambda: made.append(PersistentResource("warm", args)))
    registration = run.one(PERSISTENT_RESOURCE_TYPE)
    resource = Resource(
        registration.type, copy.deepcopy(dict(registration.inputs)), registration.urn, "warm"
    )
    estimate = made[0].cost_estimate
    assert estimate is not None
    return resource, estimate.usd_per_hour


def test_the_stack_capacity_per_hour_is_bounded_by_its_environment() -> None:
    resource, usd = _registered({"team": "vision"})
    # The pack prices the registered pools as the program did.
    assert rules.capacity_per_hour(resource) == usd > 0
    assert rules.stack_capacity_limit([resource], "dev", {"dev": usd + 1}) == []
    (violation,) = rules.stack_capacity_limit([resource], "dev", {"dev": 1.0})
    assert f"cost ${usd:,.2f} per hour while they exist" in violation
    assert "warm: $" in violation and "dev allows $1.00 per hour" in violation
    # An environment the config does not list is not judged.
    assert rules.stack_capacity_limit([resource], "prod", {"dev": 1.0}) == []


def test_a_resource_without_a_team_label_is_refused() -> None:
    labelled, _ = _registered({"team": "vision"})
    assert rules.capacity_team_label(labelled) == []
    unlabelled, _ = _registered({})
    (violation,) = rules.capacity_team_label(unlabelled)
    assert "without label(s) team identifying its team" in violation
    assert "has: env" in violation
