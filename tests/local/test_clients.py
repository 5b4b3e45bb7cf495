"""Clients nobody here wrote, against ``python -m vertex_training.local serve``: the Vertex
SDK trains, tunes, uploads, deploys and predicts; gcloud creates and describes a job; the
GAPIC clients read over gRPC what they made over REST; bad requests get Vertex's codes;
a job outlives its server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1 as v1

from tests import PROJECT_ROOT
from tests.local.conftest import STANDIN, pid_gone

PROJECT, LOCATION = "clients", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
TINY = ["--workload", "horses_or_humans", "--data", "synthetic", "--synthetic-examples", "16"]
TINY += ["--image-size", "32", "--epochs", "1", "--batch-size-per-replica", "8"]


class Server:
    """``python -m vertex_training.local serve`` in a root of its own, as a user starts it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        (self.root / "vertex.json").unlink(missing_ok=True)
        command = [sys.executable, "-m", "vertex_training.local", "serve", "--root", str(self.root)]
        command += ["--project", PROJECT, "--location", LOCATION]
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TF_USE_LEGACY_KERAS": "1"}
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "serve.log", "ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while not (self.root / "vertex.json").exists():
            assert self.process.poll() is None, (self.root / "serve.log").read_text()
            assert time.monotonic() < deadline, "the local Vertex did not start"
            time.sleep(0.05)
        return self.address

    @property
    def address(self) -> str:
        return str(json.loads((self.root / "vertex.json").read_text())["address"])

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("clients") / "root")
    running.start()
    yield running
    running.stop()


def grpc_client(client_type: Any, address: str) -> Any:
    channel = grpc.insecure_channel(address)
    return client_type(transport=client_type.get_transport_class("grpc")(channel=channel))


def rest_client(client_type: Any, address: str) -> Any:
    options = {"api_endpoint": f"http://{address}"}
    return client_type(transport="rest", credentials=AnonymousCredentials(), client_options=options)


def standin_job(name: str, *args: str) -> v1.CustomJob:
    command = [sys.executable, STANDIN, *args]
    spec = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1"}
    spec["containerSpec"] = {"imageUri": "python:3.11-slim", "command": command}
    return v1.CustomJob.from_json(
        json.dumps({"displayName": name, "jobSpec": {"workerPoolSpecs": [spec]}})
    )


def ended(client: Any, name: str, timeout: float = 120) -> v1.CustomJob:
    deadline = time.monotonic() + timeout
    while (job := client.get_custom_job(name=name)).state.name not in (
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
    ):
        assert time.monotonic() < deadline, job.state.name
        time.sleep(0.1)
    return job


def test_a_job_made_over_rest_reads_the_same_over_grpc(server: Server) -> None:
    rest = rest_client(v1.JobServiceClient, server.address)
    made = rest.create_custom_job(parent=PARENT, custom_job=standin_job("made-over-rest"))
    over_grpc = ended(grpc_client(v1.JobServiceClient, server.address), made.name)
    over_rest = rest.get_custom_job(name=made.name)
    assert over_grpc.state.name == "JOB_STATE_SUCCEEDED"
    assert type(over_grpc).to_dict(over_grpc) == type(over_rest).to_dict(over_rest)
    assert over_grpc.job_spec.worker_pool_specs[0].container_spec.command[1] == STANDIN


def _post(address: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://{address}{path}", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _admin(address: str, method: str, path: str) -> int:
    request = urllib.request.Request(f"http://{address}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def _held_replica(server: Server, name: str) -> bool:
    """Whether the job's one replica has started, stopped by the hold (``T`` in /proc)."""
    state = server.root / "jobs" / name.rsplit("/", 1)[1] / "state.json"
    replicas = json.loads(state.read_text())["replicas"] if state.exists() else []
    stat = Path(f"/proc/{replicas[0]['pid']}/stat") if replicas else None
    return stat is not None and stat.read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_a_test_holds_runs_and_fails_a_replica_through_the_admin_surface(server: Server) -> None:
    client = grpc_client(v1.JobServiceClient, server.address)
    assert _admin(server.address, "POST", "/local/hold") == 200
    try:
        held, failing = (
            client.create_custom_job(parent=PARENT, custom_job=standin_job(name))
            for name in ("held", "failing")
        )
        deadline = time.monotonic() + 60
        while not (_held_replica(server, held.name) and _held_replica(server, failing.name)):
            assert time.monotonic() < deadline, "the replicas were not held"
            time.sleep(0.05)
        assert client.get_custom_job(name=held.name).state.name == "JOB_STATE_RUNNING"
        failing_id = failing.name.rsplit("/", 1)[1]
        fail = f"/local/fail?job={failing_id}&replica=workerpool0-0"
        assert _admin(server.address, "POST", fail) == 200
        failed = ended(client, failing.name)
        assert failed.state.name == "JOB_STATE_FAILED"
        assert failed.error.message.startswith(
            "The replica workerpool0-0 exited with a non-zero status of 137. "
            "Termination reason: Error."
        )
        assert _admin(server.address, "POST", fail) == 404  # it runs no more
    finally:
        assert _admin(server.address, "DELETE", "/local/hold") == 200
    assert ended(client, held.name).state.name == "JOB_STATE_SUCCEEDED"


@pytest.mark.parametrize(
    ("path", "body", "code", "status", "names"),
    [
        ("", b'{"displayName": ', 400, "INVALID_ARGUMENT", ""),
        ("", b'{"displayName": "x", "jobSpek": {}}', 400, "INVALID_ARGUMENT", "jobSpek"),
        ("", b'{"displayName": "x"}', 400, "INVALID_ARGUMENT", "workerPoolSpecs"),
        ("projects/other", b"{}", 403, "PERMISSION_DENIED", "'other'"),
        ("locations/europe-west4", b"{}", 400, "INVALID_ARGUMENT", "europe-west4"),
        (
            "",
            json.dumps(
                {
                    "displayName": "package",
                    "jobSpec": {
                        "workerPoolSpecs": [
                            {
                                "machineSpec": {"machineType": "n1-standard-4"},
                                "replicaCount": "1",
                                "pythonPackageSpec": {
                                    "executorImageUri": "python:3.11-slim",
                                    "packageUris": ["gs://b/trainer.tar.gz"],
                                    "pythonModule": "trainer.task",
                                },
                            }
                        ]
                    },
                }
            ).encode(),
            501,
            "UNIMPLEMENTED",
            "pythonPackageSpec",
        ),
    ],
    ids=[
        "malformed",
        "unknown field",
        "missing field",
        "other project",
        "other region",
        "unsupported",
    ],
)
def test_a_bad_request_gets_vertexs_code_names_the_field_and_makes_nothing(
    server: Server, path: str, body: bytes, code: int, status: str, names: str
) -> None:
    parent = PARENT
    if path.startswith("projects/"):
        parent = parent.replace(f"projects/{PROJECT}", path)
    elif path.startswith("locations/"):
        parent = parent.replace(f"locations/{LOCATION}", path)
    client = rest_client(v1.JobServiceClient, server.address)
    before = list(client.list_custom_jobs(parent=PARENT))
    answered, error = _post(server.address, f"/v1/{parent}/customJobs", body)
    assert (answered, error["error"]["status"]) == (code, status), error
    assert names in error["error"]["message"]
    assert list(client.list_custom_jobs(parent=PARENT)) == before  # nothing made; it answers


def test_a_request_without_its_parent_is_refused_naming_it(server: Server) -> None:
    client = grpc_client(v1.JobServiceClient, server.address)
    with pytest.raises(exceptions.InvalidArgument, match="parent"):
        client.create_custom_job(parent="", custom_job=standin_job("no-parent"))


@pytest.fixture(scope="module")
def sdk(server: Server) -> Iterator[Any]:
    """The Vertex SDK pointed at the local Vertex, as docs/local.md shows."""
    from google.cloud import aiplatform
    from google.cloud.aiplatform import initializer

    saved = dict(vars(initializer.global_config))
    aiplatform.init(
        api_endpoint=f"http://{server.address}",
        api_transport="rest",
        credentials=AnonymousCredentials(),
        project=PROJECT,
        location=LOCATION,
        staging_bucket="gs://clients-bucket",
    )
    yield aiplatform
    vars(initializer.global_config).clear()
    vars(initializer.global_config).update(saved)


def trainer_pools(*args: str) -> list[dict[str, Any]]:
    container = {"image_uri": "trainer:local", "args": [*TINY, *args]}
    return [
        {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1}
        | {"container_spec": container}
    ]


@pytest.fixture(scope="module")
def trained(sdk: Any) -> Any:
    job = sdk.CustomJob(
        display_name="sdk-custom-job",
        worker_pool_specs=trainer_pools(),
        base_output_dir="gs://clients-bucket/sdk-custom-job",
    )
    job.run(sync=True)
    return job


@pytest.mark.slow
def test_the_sdk_runs_a_custom_job_to_the_end(trained: Any, server: Server) -> None:
    assert trained.state.name == "JOB_STATE_SUCCEEDED"
    model = server.root / "gcs" / "clients-bucket" / "sdk-custom-job" / "model"
    assert (model / "saved_model.pb").is_file()


@pytest.mark.slow
def test_the_sdk_runs_a_tuning_job_whose_trials_report_through_hypertune(sdk: Any) -> None:
    from google.cloud.aiplatform import hyperparameter_tuning as hpt

    trial = sdk.CustomJob(
        display_name="sdk-trial",
        worker_pool_specs=trainer_pools(),
        base_output_dir="gs://clients-bucket/sdk-study",
    )
    study = sdk.HyperparameterTuningJob(
        display_name="sdk-study",
        custom_job=trial,
        metric_spec={"accuracy": "maximize"},
        parameter_spec={"learning_rate": hpt.DoubleParameterSpec(min=1e-3, max=0.1, scale="log")},
        max_trial_count=2,
        parallel_trial_count=2,
    )
    study.run(sync=True)
    assert study.state.name == "JOB_STATE_SUCCEEDED"
    assert [t.id for t in study.trials] == ["1", "2"]
    for found in study.trials:
        assert found.state.name == "SUCCEEDED"
        [metric] = found.final_measurement.metrics
        assert metric.metric_id == "accuracy" and 0.0 <= metric.value <= 1.0
        assert found.parameters[0].parameter_id == "learning_rate"


@pytest.mark.slow
def test_the_sdk_uploads_creates_deploys_and_predicts(sdk: Any, trained: Any) -> None:
    model = sdk.Model.upload(
        display_name="sdk-model",
        artifact_uri="gs://clients-bucket/sdk-custom-job/model",
        serving_container_image_uri="serving:local",
    )
    assert model.version_id == "1"
    endpoint = sdk.Endpoint.create(display_name="sdk-endpoint")
    model.deploy(endpoint=endpoint, machine_type="n1-standard-2")
    [deployed] = endpoint.list_models()
    answer = endpoint.predict(instances=[[[[0, 128, 255]]], [[[255, 0, 0]]]])
    assert answer.deployed_model_id == deployed.id
    assert len(answer.predictions) == 2
    assert all(abs(sum(p) - 1) < 1e-4 for p in answer.predictions), answer.predictions
    endpoint.undeploy_all()
    endpoint.delete()
    model.delete()
    assert sdk.Model.list() == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not installed here")
def test_gcloud_creates_a_custom_job_that_succeeds_and_describes_it(
    server: Server, tmp_path: Path
) -> None:
    config = tmp_path / "job.yaml"
    spec = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}
    spec["containerSpec"] = {"imageUri": "python:3.11-slim", "command": [sys.executable, STANDIN]}
    config.write_text(json.dumps({"workerPoolSpecs": [spec]}))
    env = {
        **os.environ,
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": f"http://{server.address}/",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
    }
    where = [f"--project={PROJECT}", f"--region={LOCATION}", "--format=json"]

    def gcloud(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            ["gcloud", "ai", "custom-jobs", *args, *where],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        return found

    created = gcloud("create", "--display-name=from-gcloud", f"--config={config}")
    ended(grpc_client(v1.JobServiceClient, server.address), created["name"])
    described = gcloud("describe", created["name"].rsplit("/", 1)[1])
    assert (described["displayName"], described["state"]) == ("from-gcloud", "JOB_STATE_SUCCEEDED")


@pytest.mark.slow
def test_a_job_goes_on_while_its_server_is_down_and_a_restarted_one_reports_it(
    tmp_path: Path,
) -> None:
    hold = tmp_path / "hold"
    hold.touch()
    restarted = Server(tmp_path / "root")
    client = grpc_client(v1.JobServiceClient, restarted.start())
    job = client.create_custom_job(
        parent=PARENT, custom_job=standin_job("outlives", f"--hold-while={hold}")
    )
    while client.get_custom_job(name=job.name).state.name != "JOB_STATE_RUNNING":
        time.sleep(0.05)
    restarted.kill()
    state = json.loads(
        (tmp_path / "root" / "jobs" / job.name.rsplit("/", 1)[1] / "state.json").read_text()
    )
    assert not pid_gone(state["supervisor_pid"]), "the job runs on without its server"
    hold.unlink()
    try:
        client = grpc_client(v1.JobServiceClient, restarted.start())
        assert ended(client, job.name).state.name == "JOB_STATE_SUCCEEDED"
        with pytest.raises(exceptions.FailedPrecondition):
            client.cancel_custom_job(name=job.name)  # it has ended
    finally:
        restarted.stop()
