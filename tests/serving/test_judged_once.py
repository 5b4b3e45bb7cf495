"""Each serving rule runs once, as early as its inputs are known: a stack's endpoint and
model where the stack reader meets the stack's region, not again where the resource is
registered; a body changed after judging is still judged in ``check``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.pulumi_mocks import run_pulumi
from vertex_training.serving import api
from vertex_training.stack.serving import read_serving

DIGEST = "us-docker.pkg.dev/p/r/serving@sha256:" + "a" * 64
VERSION = "projects/p/locations/us-central1/models/m@1"


@dataclass
class _Platform:
    """What a model and an endpoint read of a ``vt.TrainingPlatform``."""

    environment: str = "dev"
    region: str = "us-central1"
    project: str = "p"
    labels: dict[str, str] = field(default_factory=dict)
    local_root: Path | None = None

    def resource_options(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions()


def _counting(monkeypatch: pytest.MonkeyPatch, name: str, calls: list[str]) -> None:
    real: Callable[..., Any] = getattr(api, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, name, counted)


def test_a_stack_endpoint_and_model_are_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for name in ("deployment_findings", "traffic_findings", "image_findings"):
        _counting(monkeypatch, name, calls)
    ours = {
        "models": [{"name": "m", "artifactUri": "gs://b/m", "image": DIGEST}],
        "endpoints": [{"name": "e", "deployments": {"blue": {"model": VERSION}}}],
    }
    declarations, problems = read_serving(ours, [], region="us-central1", environment="dev")
    assert problems == []
    judged_by_the_reader = sorted(calls)

    run_pulumi(lambda: declarations.declare(_Platform(), {}), stack="dev")

    assert judged_by_the_reader == ["deployment_findings", "image_findings", "traffic_findings"]
    assert sorted(calls) == judged_by_the_reader  # not again for the resources


def test_args_put_on_other_facts_are_judged_there(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Args keep what was found on the stack's facts only: elsewhere they are judged anew.
    ours = {"endpoints": [{"name": "e", "deployments": {"blue": {"model": VERSION}}}]}
    declarations, _ = read_serving(ours, [], region=None, environment="local")
    calls: list[str] = []
    _counting(monkeypatch, "deployment_findings", calls)
    run_pulumi(lambda: declarations.declare(_Platform(), {}), stack="dev")
    assert calls == ["deployment_findings"]


def _endpoint_props(machine_type: str, judged_on: str) -> dict[str, Any]:
    from vertex_training._dynamic import PROVIDER_VERSION, BackendKind, BackendSettings
    from vertex_training.serving.resources import judged_digest

    def deployments(machine: str) -> dict[str, Any]:
        machine_spec = {"machineType": machine}
        dedicated = {"machineSpec": machine_spec, "minReplicaCount": 1.0, "maxReplicaCount": 1.0}
        return {"blue": {"model": VERSION, "displayName": "blue", "dedicatedResources": dedicated}}

    traffic = {"blue": 100.0}
    return {
        "body": {"displayName": "e"},
        "endpoint_id": "123456789",
        "deployments": deployments(machine_type),
        "traffic": traffic,
        "judged": judged_digest(traffic, deployments(judged_on), "us-central1"),
        "backend": BackendSettings(
            BackendKind.VERTEX, project="p", location="us-central1"
        ).to_props(),
        "identity": "vertex-training/dev/e",
        "provider_version": PROVIDER_VERSION,
    }


def test_check_judges_a_deployment_changed_after_the_args_judged_it() -> None:
    # A transform (or a direct registration, an edited state) changed the machine: before,
    # check parsed the body only and the machine reached Vertex unjudged.
    from vertex_training.serving.resources import EndpointProvider

    props = _endpoint_props("n1-standard-3", judged_on="n1-standard-2")
    failures = EndpointProvider().check({}, props).failures
    assert [(f.property, f.reason.split(" (catalog")[0]) for f in failures] == [
        (
            "deployments",
            "blue.dedicatedResources.machineSpec.machineType: 'n1-standard-3' is not a "
            "prediction machine type",
        )
    ]


def test_check_does_not_judge_again_what_the_args_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    from vertex_training.serving import rules
    from vertex_training.serving.resources import EndpointProvider

    calls: list[str] = []
    for name in ("deployment_findings", "traffic_findings"):
        real = getattr(rules, name)
        monkeypatch.setattr(
            rules, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a)
        )
    props = _endpoint_props("n1-standard-2", judged_on="n1-standard-2")
    assert EndpointProvider().check({}, props).failures == []
    assert calls == []
