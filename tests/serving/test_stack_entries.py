"""A stack's models and endpoints: every problem the serving rules find is named at its YAML
key, with the jobs' problems, before anything is registered; YAML words, not Python's."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_training.findings import render
from vertex_training.stack.config import ConfigError, fix, parse_stack_config

NS = "vertex-training"
WHOLE = "(pulumi config set would replace the whole list)"
JOB = {
    "name": "train",
    "chief": {"machineType": "n1-standard-4", "args": ["--workload", "horses_or_humans"]},
}


def _problems(**keys: Any) -> list[str]:
    raw = {
        "gcp:project": "my-project-1",
        f"{NS}:environment": "dev",
        f"{NS}:region": "us-central1",
        f"{NS}:jobs": [JOB],
        f"{NS}:models": [{"name": "m", "job": "train"}],
        **{f"{NS}:{k}": v for k, v in keys.items()},
    }
    with pytest.raises(ConfigError) as caught:
        parse_stack_config("scratch", raw)
    return [f"{render(p, 'stack')}. Fix: {fix(p, 'scratch')}" for p in caught.value.findings]


def _endpoint(name: str = "e", **deployment: Any) -> dict[str, Any]:
    return {"name": name, "deployments": {"primary": {"model": "m", **deployment}}}


def test_hardware_problems_are_named_at_the_deployment_key() -> None:
    problems = _problems(
        endpoints=[
            _endpoint(machineType="n1-standard-3", minReplicaCount=0),
            _endpoint("f", acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=3),
        ]
    )
    assert problems == [
        f"{NS}:endpoints[0].deployments.primary.machineType: 'n1-standard-3' is not a "
        "prediction machine type (catalog as of 2026-11-26) (Vertex field "
        "DeployedModel.dedicatedResources.machineSpec.machineType); valid: "
        + problems[0].split("; valid: ")[1],
        f"{NS}:endpoints[0].deployments.primary.minReplicaCount: 0 (Vertex field "
        "DeployedModel.dedicatedResources.minReplicaCount); valid: 1 or more (a dedicated "
        "deployment keeps at least one replica). Fix: edit "
        f"endpoints[0].deployments.primary.minReplicaCount in stacks/Pulumi.scratch.yaml {WHOLE}",
        f"{NS}:endpoints[1].deployments.primary.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not "
        "allowed (Vertex field DeployedModel.dedicatedResources.machineSpec.acceleratorCount); "
        "valid: 1, 2, 4. Fix: edit endpoints[1].deployments.primary.acceleratorCount in "
        f"stacks/Pulumi.scratch.yaml {WHOLE}",
    ]
    assert problems[0].endswith(
        "Fix: edit endpoints[0].deployments.primary.machineType in stacks/Pulumi.scratch.yaml "
        + WHOLE
    )


def test_a_gpu_the_stack_region_does_not_serve_is_named_at_the_key() -> None:
    endpoint = _endpoint(acceleratorType="NVIDIA_TESLA_P4")
    problems = _problems(region="us-east1", workbenchEnabled=False, endpoints=[endpoint])
    assert [p.split("; valid: ")[0] for p in problems] == [
        f"{NS}:endpoints[0].deployments.primary.acceleratorType: NVIDIA_TESLA_P4 serves no "
        "predictions in us-east1 (Vertex field "
        "DeployedModel.dedicatedResources.machineSpec.acceleratorType)"
    ]
    # The local stack serves on this machine: the region is not judged there.
    local = {
        f"{NS}:environment": "local",
        f"{NS}:region": "us-east1",
        f"{NS}:workbenchEnabled": False,
        f"{NS}:jobs": [JOB],
        f"{NS}:models": [{"name": "m", "job": "train"}],
        f"{NS}:endpoints": [endpoint],
    }
    assert parse_stack_config("local", local).serving.endpoints[0].name == "e"


def test_traffic_and_every_other_problem_at_once_with_the_jobs() -> None:
    problems = _problems(
        jobs=[{**JOB, "scheduling": {"maxWaitSeconds": 60}}],
        endpoints=[
            {
                "name": "e",
                "deployments": {
                    "blue": {"model": "m"},
                    "green": {
                        "model": "m",
                        "machineType": "a2-highgpu-1g",
                        "acceleratorType": "NVIDIA_TESLA_T4",
                    },
                },
                "traffic": {"blue": 50, "green": 30, "red": 20},
            }
        ],
    )
    keys = [p.split(": ")[0] for p in problems]
    assert keys == [
        f"{NS}:jobs[0].scheduling.maxWaitSeconds",
        f"{NS}:endpoints[0].deployments.green",
        f"{NS}:endpoints[0].traffic",
    ]
    assert "a2-highgpu-1g comes with 1 x NVIDIA_TESLA_A100" in problems[1]
    assert "red is not a deployment of this endpoint" in problems[2]


def test_a_model_image_by_tag_is_refused_at_its_key_in_prod() -> None:
    problems = _problems(
        environment="prod",
        models=[{"name": "m", "job": "train", "image": "us-docker.pkg.dev/p/r/serving:1"}],
    )
    assert [p for p in problems if p.startswith(f"{NS}:models")] == [
        f"{NS}:models[0].image: 'us-docker.pkg.dev/p/r/serving:1' is not an image by digest "
        "(a tag can move under a served model in prod) (Vertex field "
        "Model.containerSpec.imageUri); valid: "
        "REGISTRY/PATH@sha256:<64 hex digits>. Fix: edit models[0].image in "
        f"stacks/Pulumi.scratch.yaml {WHOLE}"
    ]


@pytest.mark.parametrize(
    ("value", "word"),
    [([1], "got a list"), (None, "got null"), ("x", "got 'x'"), (3, "got the number 3")],
)
def test_shapes_are_named_in_yaml_words(value: Any, word: str) -> None:
    problems = _problems(endpoints=[value] if value is not None else [None])
    assert problems == [
        f"{NS}:endpoints[0]: {word}; valid: a mapping. Fix: edit endpoints[0] in "
        f"stacks/Pulumi.scratch.yaml {WHOLE}"
    ]
    (listed,) = _problems(endpoints={"name": "e"})
    assert listed.startswith(f"{NS}:endpoints: got a mapping; valid: a YAML list")


def test_a_name_repeated_in_a_list_is_refused() -> None:
    # Two resources of one kind and name would collide in the engine, after others exist.
    problems = _problems(models=[{"name": "m", "job": "train"}, {"name": "m", "job": "train"}])
    assert problems == [
        f"{NS}:models[1].name: 'm' repeats; valid: unique names. Fix: edit models[1].name in "
        f"stacks/Pulumi.scratch.yaml {WHOLE}"
    ]
