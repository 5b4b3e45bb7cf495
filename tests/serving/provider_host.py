"""The serving providers driven the way the engine drives them: the real dynamic host
(``python -m pulumi.dynamic``) in a fresh process, called over gRPC (tests.jobs.provider_host)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import grpc
import pulumi.dynamic
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from tests.jobs.provider_host import ROOT, Engine, ProviderHost, _struct
from tests.serving.conftest import STANDIN


class ServingHost(ProviderHost):
    """A dynamic host whose processes (and the local servers they start) find the
    stand-in ``predictor`` first."""

    def __init__(self, emulator_address: str) -> None:
        env = {
            **os.environ,
            "VERTEX_AI_EMULATOR_HOST": emulator_address,
            "PYTHONPATH": os.pathsep.join((str(STANDIN), str(ROOT))),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pulumi.dynamic"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        port = self.process.stdout.readline().decode().strip()
        if not port.isdigit():
            self.close()
            raise RuntimeError(f"provider host did not print a port: {port!r}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(provider_pb2.ConfigureRequest(args=_struct({})))


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
