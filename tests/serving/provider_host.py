"""The serving providers driven the way the engine drives them: the real dynamic host
(``python -m pulumi.dynamic``) in a fresh process, called over gRPC (tests.jobs.provider_host)."""

from __future__ import annotations

from typing import Any

import pulumi.dynamic
from pulumi.dynamic.dynamic import serialize_provider

from tests.jobs.provider_host import ROOT, Engine, ProviderHost
from tests.serving.conftest import STANDIN


class ServingHost(ProviderHost):
    """A dynamic host whose processes (and the local servers they start) find the
    stand-in ``predictor`` first."""

    def __init__(self, emulator_address: str) -> None:
        super().__init__(emulator_address, path_first=(str(STANDIN),))


class ServingEngine(Engine):
    def __init__(
        self,
        host: ProviderHost,
        provider: pulumi.dynamic.ResourceProvider,
        type_name: str,
        name: str,
    ) -> None:
        self.stub = host.stub
        self.serialized = serialize_provider(provider)
        self.urn = f"urn:pulumi:dev::vertex::pulumi-python:dynamic/vertex:{type_name}::{name}"


def up(engine: Engine, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    inputs, failures = engine.check(props)
    assert failures == []
    return engine.create(inputs)


__all__ = ["ROOT", "ServingEngine", "ServingHost", "up"]
