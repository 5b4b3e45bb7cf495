"""What the real stack programs register under mocks, as a policy pack receives it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policy.rules import Resource
from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_program, stack_file_config

STACKS = ("local", "dev", "prod")


def registered(stack: str) -> list[Resource]:
    """Every custom resource of ``stack``'s program with its inputs (the mocks' view)."""
    run = run_program(stack, stack_file_config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    return [
        Resource(r.type, copy.deepcopy(dict(r.inputs)), r.urn, r.name)
        for r in run.registrations
        if r.custom
    ]


@pytest.fixture(scope="session")
def stacks() -> dict[str, list[Resource]]:
    return {stack: registered(stack) for stack in STACKS}


def one(resources: list[Resource], type_: str, name: str | None = None) -> Resource:
    found = [r for r in resources if r.type == type_ and (name is None or r.name == name)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def changed(resource: Resource, **props: Any) -> Resource:
    """A copy of a registered resource with some inputs replaced (a violating variant)."""
    return Resource(
        resource.type, {**copy.deepcopy(dict(resource.props)), **props}, resource.urn, resource.name
    )
