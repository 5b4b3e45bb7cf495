"""A serving rule's findings are found once, as early as their inputs are known: a stack's
endpoint and model where the stack reader meets the stack's region, kept by the Args for
the resources to show; on other facts they are judged there; a body changed after judging
is still judged in ``check``."""

from __future__ import annotations

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


PREBUILT = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"


def test_a_stack_model_keeps_what_the_reader_found_and_shows_its_warning_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = {"models": [{"name": "m", "artifactUri": "gs://b/m", "image": PREBUILT}]}
    declarations, problems = read_serving(ours, [], region="us-central1", environment="dev")
    assert problems == []  # a warning: the resource shows it
    (model,) = declarations.models
    assert model.args.judged is not None and model.args.judged.on == ("dev", "us-central1")
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None: warned.append(message))

    run_pulumi(lambda: declarations.declare(_Platform(), {}), stack="dev")

    [warning] = [w for w in warned if "prebuilt TensorFlow prediction images" in w]
    assert warning.startswith("Model 'm'.image: Google's prebuilt")
    assert "(Vertex field Model.containerSpec.imageUri)" in warning


def test_args_put_on_other_facts_are_judged_there() -> None:
    # What was found on the stack's facts holds there only: an image by tag, fine on a
    # local stack, is refused where the model meets prod.
    image = "us-docker.pkg.dev/p/r/serving:latest"
    ours = {"models": [{"name": "m", "artifactUri": "gs://b/m", "image": image}]}
    declarations, problems = read_serving(ours, [], region=None, environment="local")
    assert problems == []
    with pytest.raises(api.InvalidArgumentsError) as caught:
        run_pulumi(lambda: declarations.declare(_Platform(environment="prod"), {}), stack="prod")
    assert str(caught.value).startswith(
        f"Model 'm'.image: {image!r} is not an image by digest (a tag can move under a served "
        "model in prod) (Vertex field Model.containerSpec.imageUri); valid: "
    )


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
