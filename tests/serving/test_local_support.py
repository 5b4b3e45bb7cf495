"""The local twin's table over the protos: every field of a Model, an Endpoint and a
DeployedModel it can meet is classified, and what it refuses fails `check` at its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.cloud import aiplatform_v1 as v1

from tests.fakes.settings import local_settings
from tests.jobs.test_local_support import proto_fields
from vertex_training._dynamic import PROVIDER_VERSION
from vertex_training.serving.local_support import local_support
from vertex_training.serving.resources import EndpointProvider, ModelProvider

ROOTS = (v1.Model, v1.Endpoint, v1.DeployedModel)


def test_every_serving_proto_field_is_classified_and_none_is_stale() -> None:
    fields = proto_fields(ROOTS, local_support())
    assert "MachineSpec.accelerator_count" in fields and "ModelContainerSpec.env" in fields
    assert sorted(fields - set(local_support())) == []
    assert sorted(set(local_support()) - fields) == []


def _local(tmp_path: Path) -> dict[str, Any]:
    return local_settings(str(tmp_path)).to_props()


def _endpoint_failures(tmp_path: Path, body: dict[str, Any], deployed: dict[str, Any]) -> list[str]:
    props = {
        "body": body,
        "endpoint_id": "123456789",
        "deployments": {"blue": {"model": "local/models/m@1", **deployed}},
        "traffic": {"blue": 100},
        "backend": _local(tmp_path),
        "identity": "vertex-training/local/e",
        "provider_version": PROVIDER_VERSION,
    }
    result = EndpointProvider().check({}, props)
    return [f"{f.property}: {f.reason}" for f in result.failures]


def test_private_service_connect_and_a_tpu_are_refused_on_the_local_twin(tmp_path: Path) -> None:
    # The deny list that preceded the table let both through to create.
    failures = _endpoint_failures(
        tmp_path,
        {"displayName": "e", "enablePrivateServiceConnect": True},
        {
            "dedicatedResources": {
                "machineSpec": {
                    "machineType": "ct5lp-hightpu-1t",
                    "acceleratorType": "TPU_V5_LITEPOD",
                }
            }
        },
    )
    assert failures == [
        "body: enablePrivateServiceConnect: private endpoints live in a Google Cloud network; "
        "it runs on "
        "Vertex only",
        "deployments: blue.dedicatedResources.machineSpec.acceleratorType: TPU_V5_LITEPOD is a "
        "TPU; TPUs exist on Google Cloud only; it runs on Vertex only",
    ]


def test_a_model_container_command_is_refused_and_its_env_is_not(tmp_path: Path) -> None:
    body = {
        "displayName": "m",
        "artifactUri": str(tmp_path),
        "containerSpec": {"imageUri": "serving:local", "command": ["x"], "env": [{"name": "A"}]},
    }
    props = {
        "body": body,
        "model_id": "m-1",
        "backend": _local(tmp_path),
        "identity": "vertex-training/local/m",
    }
    result = ModelProvider().check({}, props)
    assert [(f.property, f.reason) for f in result.failures] == [
        (
            "body",
            "containerSpec.command: the local twin runs our prediction server, not a "
            "container; it runs on Vertex only",
        )
    ]
