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
