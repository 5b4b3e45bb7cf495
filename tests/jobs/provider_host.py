"""Drive a job provider the way the Pulumi engine does, without the Pulumi CLI.

The provider is serialized exactly as ``pulumi.dynamic.Resource`` serializes it (dill,
sorted dicts, base64), then served by the real host ``python -m pulumi.dynamic`` in a
fresh process, and called over gRPC with properties encoded by the SDK's own
``rpc.serialize_properties``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_KEY = "__provider"


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def _plain(struct: struct_pb2.Struct) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct, True))


class ProviderHost:
    """One ``python -m pulumi.dynamic`` process talking to the Vertex at ``emulator_address``."""

    def __init__(self, emulator_address: str, path_first: tuple[str, ...] = ()) -> None:
        env = {
            **os.environ,
            "VERTEX_AI_EMULATOR_HOST": emulator_address,
            # path_first: what the provider's processes must find before the repository.
            "PYTHONPATH": os.pathsep.join((*path_first, str(ROOT))),
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

    def close(self) -> None:
        if hasattr(self, "channel"):
            self.channel.close()
        self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class Engine:
    """The engine's side of one resource's life: check, create, read, diff, delete."""

    def __init__(self, host: ProviderHost, kind: JobKind, name: str = "job") -> None:
        self.stub = host.stub
        self.serialized = serialize_provider(JobProvider(kind))
        type_name = "CustomJob" if kind is JobKind.CUSTOM_JOB else "HyperparameterTuningJob"
        self.urn = f"urn:pulumi:dev::vertex::pulumi-python:dynamic/vertex:{type_name}::{name}"

    def _with_provider(self, props: dict[str, Any]) -> dict[str, Any]:
        return {**props, PROVIDER_KEY: self.serialized}

    def check(
        self, news: dict[str, Any], olds: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        response = self.stub.Check(
            provider_pb2.CheckRequest(
                urn=self.urn,
                olds=_struct(self._with_provider(olds or {})),
                news=_struct(self._with_provider(news)),
            )
        )
        return _plain(response.inputs), [(f.property, f.reason) for f in response.failures]

    def create(self, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        response = self.stub.Create(
            provider_pb2.CreateRequest(urn=self.urn, properties=_struct(inputs))
        )
        return response.id, _plain(response.properties)

    def read(
        self, id_: str, outs: dict[str, Any], inputs: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        response = self.stub.Read(
            provider_pb2.ReadRequest(
                id=id_, urn=self.urn, properties=_struct(outs), inputs=_struct(inputs)
            )
        )
        return response.id, _plain(response.properties)

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
        return self.stub.Diff(
            provider_pb2.DiffRequest(id=id_, urn=self.urn, olds=_struct(olds), news=_struct(news))
        )

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
        response = self.stub.Update(
            provider_pb2.UpdateRequest(id=id_, urn=self.urn, olds=_struct(olds), news=_struct(news))
        )
        return _plain(response.properties)

    def delete(self, id_: str, outs: dict[str, Any]) -> None:
        self.stub.Delete(provider_pb2.DeleteRequest(id=id_, urn=self.urn, properties=_struct(outs)))
