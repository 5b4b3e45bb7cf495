"""Model and Endpoint as a program declares them: the bodies registered, and bad input
refused before anything is registered, naming the field and what is valid."""

from __future__ import annotations

from typing import Any

import pytest

import vertex_training as vt
from tests import modules_loaded_by
from tests.pulumi_mocks import run_pulumi
from vertex_training.serving.rules import deployment_findings, image_findings, traffic_findings

DIGEST = "us-docker.pkg.dev/p/r/serving@sha256:" + "a" * 64
TRAINER = "us-docker.pkg.dev/p/r/trainer@sha256:" + "b" * 64


def job(**extra: Any) -> vt.CustomJob:
    """A job with no platform, in us-central1."""
    chief = vt.WorkerPool(machine_type="n1-standard-4", image=TRAINER)
    return vt.CustomJob(
        "train", vt.CustomJobArgs(project="p", region="us-central1", chief=chief, **extra)
    )


def test_a_model_from_a_job_and_an_endpoint_serving_it() -> None:
    def program() -> None:
        model = vt.Model(
            "horses",
            vt.ModelArgs(
                project="p",
                region="us-central1",
                job=job(base_output_directory="gs://b/out"),
                image=DIGEST,
                version_aliases=["production"],
                labels={"team": "ml"},
            ),
        )
        vt.Endpoint(
            "horses-endpoint",
            vt.EndpointArgs(
                project="p",
                region="us-central1",
                deployments={"blue": vt.DeploymentArgs(model=model, machine_type="n1-standard-4")},
            ),
        )

    run = run_pulumi(program, stack="dev")
    model = run.named("horses").inputs
    assert run.named("horses").type == "pulumi-python:dynamic/vertex:Model"
    assert model["body"]["containerSpec"] == {"imageUri": DIGEST}
    assert model["body"]["labels"] == {"team": "ml"}
    assert model["version_aliases"] == ["production"]
    assert model["model_id"].startswith("horses-")
    endpoint = run.named("horses-endpoint").inputs
    assert endpoint["traffic"] == {"blue": 100}  # one deployment: all of it
    assert endpoint["deployments"]["blue"]["dedicatedResources"] == {
        "machineSpec": {"machineType": "n1-standard-4"},
        "minReplicaCount": 1,
        "maxReplicaCount": 1,
    }
    assert endpoint["endpoint_id"].isdigit() and len(endpoint["endpoint_id"]) == 9


def test_a_model_from_a_job_that_writes_no_model_is_refused() -> None:
    with pytest.raises(vt.InvalidArgumentsError) as refused:
        run_pulumi(
            lambda: vt.Model(
                "horses", vt.ModelArgs(project="p", region="us-central1", job=job(), image=DIGEST)
            ),
            stack="dev",
        )
    assert str(refused.value) == (
        "Model 'horses'.job: the job writes no model: its body has no baseOutputDirectory, "
        "so Vertex gives it no AIP_MODEL_DIR; valid: a job with base_output_directory set "
        "(a platform sets one)"
    )


@pytest.mark.parametrize(
    ("resource", "args", "message"),
    [
        (
            vt.Model,
            vt.EndpointArgs(project="p", region="us-central1"),
            "Model('m'): args must be a ModelArgs, got EndpointArgs",
        ),
        (
            vt.Endpoint,
            vt.ModelArgs(project="p", region="us-central1", image=DIGEST),
            "Endpoint('m'): args must be an EndpointArgs, got ModelArgs",
        ),
    ],
)
def test_args_of_another_resource_are_refused(resource: Any, args: object, message: str) -> None:
    with pytest.raises(vt.InvalidArgumentsError) as refused:
        run_pulumi(lambda: resource("m", args), stack="dev")
    assert str(refused.value) == message


def test_an_endpoint_with_a_bad_split_and_machine_is_refused_with_every_problem() -> None:
    args = vt.EndpointArgs(
        project="p",
        region="us-central1",
        deployments={
            "blue": vt.DeploymentArgs(model="projects/p/locations/us-central1/models/m@1"),
            "green": vt.DeploymentArgs(
                model="projects/p/locations/us-central1/models/m@2", machine_type="n1-standard-3"
            ),
        },
        traffic={"blue": 50, "green": 40},
    )
    with pytest.raises(vt.InvalidArgumentsError) as refused:
        run_pulumi(lambda: vt.Endpoint("e", args), stack="dev")
    lines = str(refused.value).splitlines()
    assert lines[0].startswith(
        "Endpoint 'e'.deployments['green'].machine_type: 'n1-standard-3' is not a prediction "
        "machine type (catalog as of "
    )
    assert "(Vertex field DeployedModel.dedicatedResources.machineSpec.machineType)" in lines[0]
    assert lines[1] == (
        "Endpoint 'e'.traffic: sums to 90 (blue: 50, green: 40); valid: percents summing to 100"
    )


def test_traffic_names_deployed_models() -> None:
    assert list(map(str, traffic_findings({"blue": 100, "red": 0}, ["blue"]))) == [
        "red is not a deployment of this endpoint; valid: blue"
    ]
    assert list(map(str, traffic_findings({"blue": 101}, ["blue"]))) == [
        "blue: 101; valid: a whole percent from 0 to 100"
    ]
    assert traffic_findings({"blue": 60, "green": 40.0}, ["blue", "green"]) == []


@pytest.mark.parametrize(
    ("machine", "accelerator", "count", "region", "problem"),
    [
        (
            "n1-standard-4",
            "NVIDIA_TESLA_V100",
            1,
            "europe-west1",
            "dedicatedResources.machineSpec.acceleratorType: NVIDIA_TESLA_V100 serves no "
            "predictions in europe-west1; valid: one of the regions asia-east1, europe-west4, "
            "us-central1, us-west1",
        ),
        (
            "n1-standard-4",
            "NVIDIA_TESLA_T4",
            3,
            "us-central1",
            "dedicatedResources.machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not "
            "allowed; valid: 1, 2, 4",
        ),
        (
            "e2-standard-4",
            "NVIDIA_TESLA_T4",
            1,
            "us-central1",
            "dedicatedResources.machineSpec.machineType: NVIDIA_TESLA_T4 attaches only to "
            "n1-highcpu, n1-highmem, n1-standard machines, not e2-standard-4",
        ),
        (
            "g2-standard-8",
            "NVIDIA_TESLA_T4",
            None,
            "us-central1",
            "dedicatedResources.machineSpec: g2-standard-8 comes with 1 x NVIDIA_L4; valid: "
            "acceleratorType 'NVIDIA_L4' with acceleratorCount 1, or neither",
        ),
    ],
)
def test_prediction_hardware_by_region(
    machine: str, accelerator: str, count: int | None, region: str, problem: str
) -> None:
    spec = {"machineType": machine, "acceleratorType": accelerator, "acceleratorCount": count}
    body = {"dedicatedResources": {"machineSpec": {k: v for k, v in spec.items() if v}}}
    found = deployment_findings(body, region)
    assert [str(f) for f in found if f.severity == "error"] == [problem]


def test_replica_counts() -> None:
    body = {
        "dedicatedResources": {
            "machineSpec": {"machineType": "n1-standard-2"},
            "minReplicaCount": 0,
            "maxReplicaCount": -1,
        }
    }
    found = deployment_findings(body, "us-central1")
    assert list(map(str, found)) == [
        "dedicatedResources.minReplicaCount: 0; valid: 1 or more (a dedicated deployment "
        "keeps at least one replica)",
        "dedicatedResources.maxReplicaCount: -1 is below minReplicaCount 0; valid: 0 or more",
    ]


def test_serving_images() -> None:
    found = image_findings("us-docker.pkg.dev/p/r/serving:latest", environment="prod")
    assert list(map(str, found)) == [
        "'us-docker.pkg.dev/p/r/serving:latest' is not an image by digest (a tag can move "
        "under a served model in prod); valid: REGISTRY/PATH@sha256:<64 hex digits>"
    ]
    prebuilt = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
    (warning,) = image_findings(prebuilt, environment="dev")
    assert warning.severity == "warning"
    assert "stop at 2.15 and this one serves TF 2.15, while the trainer saves with" in str(warning)


def test_the_program_side_loads_no_vertex_client() -> None:
    # Program evaluation is paid on every `pulumi up`: aiplatform_v1 (~1 s) loads only in
    # the provider process, where a backend is built.
    code = (
        "import vertex_training as vt; vt.Model; vt.Endpoint; import vertex_training.stack.serving"
    )
    assert modules_loaded_by(code, ("google.cloud.aiplatform",)) == []
