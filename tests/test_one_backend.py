"""One backend: the local stack's providers speak the Vertex API through the Vertex clients,
pointed at the local Vertex of the stack's local root. (No provider can import a runner:
they sit behind the local Vertex, a floor above them; ``test_layers`` holds the arrows.)"""

from __future__ import annotations

import base64
from pathlib import Path

import dill
import pytest

from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_program, stack_file_config
from vertex_training._dynamic import BackendSettings, Provider
from vertex_training.jobs.backends.vertex import VertexService


def test_every_provider_of_the_local_stack_calls_the_local_vertex_through_the_vertex_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[Path, str, str]] = []

    def ensure_server(root: Path, project: str, location: str) -> str:
        started.append((root, project, location))
        return "127.0.0.1:1"  # no call is made: building a client dials nothing

    monkeypatch.setattr("vertex_training._local_vertex.ensure_server", ensure_server)
    run = run_program("local", stack_file_config(PROJECT_ROOT / "stacks" / "Pulumi.local.yaml"))
    dynamic = [r for r in run.registrations if r.type.startswith("pulumi-python:dynamic/")]
    assert len(dynamic) == 5  # two jobs, the model, the endpoint, the persistent resource
    for registration in dynamic:
        props = dict(registration.inputs)
        provider = dill.loads(base64.b64decode(props["__provider"]))
        assert isinstance(provider, Provider)
        settings = BackendSettings.from_props(props["backend"])
        assert (settings.project, settings.location) == ("local", "us-central1")
        assert settings.local_root == str(PROJECT_ROOT / ".local-vertex")
        backend = provider.backend(props)
        if isinstance(backend, VertexService):  # jobs; models and endpoints
            client = getattr(backend, "client", None) or backend.models
        else:  # the persistent resource: the service's client itself
            client = backend
        assert type(client).__module__.startswith("google.cloud.aiplatform_v1."), type(client)
        assert client._transport._host.startswith("127.0.0.1:1")
    assert {(p, loc) for _, p, loc in started} == {("local", "us-central1")}
