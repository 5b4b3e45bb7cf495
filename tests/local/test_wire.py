"""The local Vertex AI's wire, driven by the real clients: GAPIC over gRPC and REST, the
Vertex SDK and gcloud, against stub handlers."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api import httpbody_pb2
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.endpoint_service.transports import (
    EndpointServiceGrpcTransport,
)
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport
from google.cloud.aiplatform_v1.services.model_service.transports import ModelServiceGrpcTransport
from google.cloud.aiplatform_v1.services.prediction_service.transports import (
    PredictionServiceGrpcTransport,
)
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2, field_mask_pb2

from vertex_training.local import wire
from vertex_training.local.wire import ServiceError

PARENT = "projects/p/locations/us-central1"
S = v1.JobState


class StubJobs:
    """CustomJobs in a dict; delete is a long-running operation that the stub operations
    finish on the first poll."""

    def __init__(self) -> None:
        self.jobs: dict[str, v1.CustomJob] = {}
        self.operations: dict[str, operations_pb2.Operation] = {}
        self._lock = threading.Lock()

    def _job(self, name: str) -> v1.CustomJob:
        if name not in self.jobs:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"CustomJob {name} not found (name)")
        return self.jobs[name]

    def create_custom_job(self, request: v1.CreateCustomJobRequest) -> v1.CustomJob:
        with self._lock:
            job = v1.CustomJob(request.custom_job)
            job.name = f"{request.parent}/customJobs/{len(self.jobs) + 1}"
            job.state = S.JOB_STATE_QUEUED
            self.jobs[job.name] = job
            return job

    def get_custom_job(self, request: v1.GetCustomJobRequest) -> v1.CustomJob:
        return self._job(request.name)

    def list_custom_jobs(self, request: v1.ListCustomJobsRequest) -> v1.ListCustomJobsResponse:
        jobs = [j for j in self.jobs.values() if j.name.startswith(request.parent + "/")]
        start = int(request.page_token or 0)
        end = start + (request.page_size or 100)
        token = str(end) if end < len(jobs) else ""
        return v1.ListCustomJobsResponse(custom_jobs=jobs[start:end], next_page_token=token)

    def cancel_custom_job(self, request: v1.CancelCustomJobRequest) -> None:
        job = self._job(request.name)
        if job.state == S.JOB_STATE_SUCCEEDED:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, f"CustomJob {request.name} is already done"
            )
        job.state = S.JOB_STATE_CANCELLED

    def delete_custom_job(self, request: v1.DeleteCustomJobRequest) -> operations_pb2.Operation:
        self._job(request.name)
        metadata = any_pb2.Any()
        metadata.Pack(v1.DeleteOperationMetadata.pb(v1.DeleteOperationMetadata()))
        with self._lock:
            operation = operations_pb2.Operation(
                name=f"{PARENT}/operations/{len(self.operations) + 1}", metadata=metadata
            )
            self.operations[operation.name] = operation
            del self.jobs[request.name]
        return operation

    def get_hyperparameter_tuning_job(self, request: Any) -> Any:
        raise RuntimeError("a bug in a handler")


class StubOperations:
    def __init__(self, jobs: StubJobs) -> None:
        self.jobs = jobs

    def get_operation(
        self, request: operations_pb2.GetOperationRequest
    ) -> operations_pb2.Operation:
        operation = self.jobs.operations.get(request.name)
        if operation is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"Operation {request.name} not found")
        operation.done = True
        operation.response.Pack(empty_pb2.Empty())
        return operation


class StubPrediction:
    def raw_predict(self, request: v1.RawPredictRequest) -> httpbody_pb2.HttpBody:
        body = request.http_body
        return httpbody_pb2.HttpBody(
            content_type="text/plain", data=body.content_type.encode() + b" " + body.data
        )


class StubEndpoints:
    def update_endpoint(self, request: v1.UpdateEndpointRequest) -> v1.Endpoint:
        mask = ",".join(request.update_mask.paths)
        return v1.Endpoint(request.endpoint, display_name=mask)


class StubModels:
    def get_model(self, request: v1.GetModelRequest) -> v1.Model:
        return v1.Model(name=request.name)


def admin(
    method: str, path: str, query: Mapping[str, list[str]], body: bytes
) -> tuple[int, str, bytes]:
    return 200, "text/plain", f"{method} {path} {dict(query)} {body.decode()}".encode()


@pytest.fixture(scope="module")
def stub() -> StubJobs:
    return StubJobs()


@pytest.fixture(scope="module")
def address(stub: StubJobs) -> Iterator[str]:
    handlers = {
        "JobService": stub,
        "Operations": StubOperations(stub),
        "PredictionService": StubPrediction(),
        "EndpointService": StubEndpoints(),
        "ModelService": StubModels(),
    }
    server = wire.serve(handlers, admin=admin)
    yield server.address
    server.stop()


def grpc_client(address: str) -> v1.JobServiceClient:
    return v1.JobServiceClient(
        transport=JobServiceGrpcTransport(channel=grpc.insecure_channel(address))
    )


def rest_client(address: str) -> v1.JobServiceClient:
    return v1.JobServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": "http://" + address},
    )


def rest(address: str, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://{address}{path}", data=body, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def job(display_name: str) -> v1.CustomJob:
    spec = v1.WorkerPoolSpec(
        machine_spec=v1.MachineSpec(machine_type="n1-standard-4"),
        replica_count=1,
        container_spec=v1.ContainerSpec(image_uri="python:3.11-slim", args=["--steps", "1"]),
    )
    return v1.CustomJob(
        display_name=display_name, job_spec=v1.CustomJobSpec(worker_pool_specs=[spec])
    )


# ------------------------------------------------------------------ the pinned tables

USED = """
JobService CreateCustomJob POST /v1/{parent=@}/customJobs
JobService GetCustomJob GET /v1/{name=@/customJobs/*}
JobService ListCustomJobs GET /v1/{parent=@}/customJobs
JobService CancelCustomJob POST /v1/{name=@/customJobs/*}:cancel
JobService DeleteCustomJob DELETE /v1/{name=@/customJobs/*}
JobService CreateHyperparameterTuningJob POST /v1/{parent=@}/hyperparameterTuningJobs
JobService GetHyperparameterTuningJob GET /v1/{name=@/hyperparameterTuningJobs/*}
JobService ListHyperparameterTuningJobs GET /v1/{parent=@}/hyperparameterTuningJobs
JobService CancelHyperparameterTuningJob POST /v1/{name=@/hyperparameterTuningJobs/*}:cancel
JobService DeleteHyperparameterTuningJob DELETE /v1/{name=@/hyperparameterTuningJobs/*}
ModelService UploadModel POST /v1/{parent=@}/models:upload
ModelService GetModel GET /v1/{name=@/models/*}
ModelService ListModelVersions GET /v1/{name=@/models/*}:listVersions
ModelService MergeVersionAliases POST /v1/{name=@/models/*}:mergeVersionAliases
ModelService DeleteModel DELETE /v1/{name=@/models/*}
EndpointService CreateEndpoint POST /v1/{parent=@}/endpoints
EndpointService GetEndpoint GET /v1/{name=@/endpoints/*}
EndpointService UpdateEndpoint PATCH /v1/{endpoint.name=@/endpoints/*}
EndpointService DeleteEndpoint DELETE /v1/{name=@/endpoints/*}
EndpointService DeployModel POST /v1/{endpoint=@/endpoints/*}:deployModel
EndpointService UndeployModel POST /v1/{endpoint=@/endpoints/*}:undeployModel
EndpointService MutateDeployedModel POST /v1/{endpoint=@/endpoints/*}:mutateDeployedModel
PredictionService Predict POST /v1/{endpoint=@/endpoints/*}:predict
PredictionService Predict POST /v1/{endpoint=@/publishers/*/models/*}:predict
PredictionService RawPredict POST /v1/{endpoint=@/endpoints/*}:rawPredict
PredictionService RawPredict POST /v1/{endpoint=@/publishers/*/models/*}:rawPredict
PersistentResourceService CreatePersistentResource POST /v1/{parent=@}/persistentResources
PersistentResourceService GetPersistentResource GET /v1/{name=@/persistentResources/*}
PersistentResourceService ListPersistentResources GET /v1/{parent=@}/persistentResources
PersistentResourceService DeletePersistentResource DELETE /v1/{name=@/persistentResources/*}
"""
"""Service, gRPC method, and one REST rule a line (``@`` is ``projects/*/locations/*``): the
methods the project uses, with every rule each has in the pinned google-cloud-aiplatform."""
SERVED = {
    "JobService": 35,
    "ModelService": 19,
    "EndpointService": 9,
    "PredictionService": 7,
    "PersistentResourceService": 6,
    "Operations": 5,
}
"""How many unary methods each service has in the pinned google-cloud-aiplatform."""


def test_the_pinned_package_gives_the_methods_paths_and_rules_the_project_uses() -> None:
    table = wire.methods()
    assert {service: len(table[service]) for service in wire.SERVICES} == SERVED
    used: dict[tuple[str, str], list[str]] = {}
    for line in USED.strip().splitlines():
        service, rpc, rule = line.split(" ", 2)
        used.setdefault((service, rpc), []).append(rule.replace("@", "projects/*/locations/*"))
    for (service, rpc), rules in used.items():
        method = table[service][re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()]
        assert method.path == f"/google.cloud.aiplatform.v1.{service}/{rpc}"
        assert [f"{r['method'].upper()} {r['uri']}" for r in method.http_rules] == rules
        assert method.request_type is getattr(v1, f"{rpc}Request")
    assert table["JobService"]["delete_custom_job"].response_type is operations_pb2.Operation
    assert table["PredictionService"]["raw_predict"].response_type is httpbody_pb2.HttpBody
    operations = table["Operations"]
    assert sorted(operations) == [
        "cancel_operation", "delete_operation", "get_operation", "list_operations", "wait_operation"
    ]  # fmt: skip
    assert operations["wait_operation"].response_type is operations_pb2.Operation
    assert operations["delete_operation"].response_type is empty_pb2.Empty
    uris = [rule["uri"] for rule in operations["get_operation"].http_rules]
    assert len(uris) == 101
    for uri in ("/v1/{name=projects/*/locations/*/operations/*}",
                "/v1/{name=projects/*/locations/*/customJobs/*/operations/*}",
                "/ui/{name=projects/*/locations/*/operations/*}"):  # fmt: skip
        assert uri in uris


# ------------------------------------------------------------------ the clients


@pytest.mark.parametrize("client", [grpc_client, rest_client])
def test_a_gapic_client_creates_gets_lists_cancels_and_deletes(address: str, client: Any) -> None:
    jobs = client(address)
    parent = f"projects/{client.__name__}/locations/us-central1"
    created = [jobs.create_custom_job(parent=parent, custom_job=job(f"job-{i}")) for i in range(3)]
    assert created[0].job_spec.worker_pool_specs[0].container_spec.args == ["--steps", "1"]
    got = jobs.get_custom_job(name=created[1].name)
    assert (got.display_name, got.state) == ("job-1", S.JOB_STATE_QUEUED)

    pager = jobs.list_custom_jobs(request=v1.ListCustomJobsRequest(parent=parent, page_size=2))
    assert [j.display_name for j in pager] == ["job-0", "job-1", "job-2"]

    jobs.cancel_custom_job(name=created[0].name)
    assert jobs.get_custom_job(name=created[0].name).state == S.JOB_STATE_CANCELLED

    operation = jobs.delete_custom_job(name=created[2].name)
    assert operation.result(timeout=30) == empty_pb2.Empty()
    assert isinstance(operation.metadata, v1.DeleteOperationMetadata)
    with pytest.raises(exceptions.NotFound, match=rf"CustomJob {created[2].name} not found"):
        jobs.get_custom_job(name=created[2].name)


@pytest.mark.parametrize("client", [grpc_client, rest_client])
def test_a_gapic_client_reads_errors_unimplemented_and_internal(
    address: str, client: Any, stub: StubJobs
) -> None:
    jobs = client(address)
    name = jobs.create_custom_job(parent=PARENT, custom_job=job("done")).name
    stub.jobs[name].state = S.JOB_STATE_SUCCEEDED
    # FAILED_PRECONDITION is HTTP 400, which a REST client reads as a bad request.
    error = exceptions.FailedPrecondition if client is grpc_client else exceptions.BadRequest
    with pytest.raises(error, match="is already done"):
        jobs.cancel_custom_job(name=name)
    with pytest.raises(
        exceptions.MethodNotImplemented, match=r"JobService\.GetNasJob is not implemented"
    ):
        jobs.get_nas_job(name=f"{PARENT}/nasJobs/1")
    with pytest.raises(exceptions.InternalServerError, match="a bug in a handler"):
        jobs.get_hyperparameter_tuning_job(name=f"{PARENT}/hyperparameterTuningJobs/1")
    assert jobs.get_custom_job(name=name).display_name == "done"


def test_the_vertex_sdk_gets_and_lists_over_rest(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.cloud import aiplatform
    from google.cloud.aiplatform import initializer

    for key, value in vars(initializer.global_config).items():  # restored after the test
        monkeypatch.setattr(initializer.global_config, key, value)
    parent = "projects/sdk/locations/us-central1"
    name = rest_client(address).create_custom_job(parent=parent, custom_job=job("from-sdk")).name
    aiplatform.init(
        api_endpoint="http://" + address,
        api_transport="rest",
        credentials=AnonymousCredentials(),
        project="sdk",
        location="us-central1",
    )
    assert aiplatform.CustomJob.get(name).display_name == "from-sdk"
    assert [j.resource_name for j in aiplatform.CustomJob.list()] == [name]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not installed here")
def test_gcloud_lists_custom_jobs(address: str, tmp_path: Path) -> None:
    parent = "projects/gcloud/locations/us-central1"
    name = rest_client(address).create_custom_job(parent=parent, custom_job=job("from-gcloud")).name
    env = {
        **os.environ,
        "CLOUDSDK_CONFIG": str(tmp_path),
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": f"http://{address}/",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
    }
    command = [
        "gcloud",
        "ai",
        "custom-jobs",
        "list",
        "--region=us-central1",
        "--project=gcloud",
        "--format=json",
    ]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    [listed] = json.loads(done.stdout)
    assert (listed["name"], listed["displayName"], listed["state"]) == (
        name,
        "from-gcloud",
        "JOB_STATE_QUEUED",
    )


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_nested_path_field_a_body_field_and_a_field_mask(address: str, transport: str) -> None:
    client = v1.EndpointServiceClient(
        transport=EndpointServiceGrpcTransport(channel=grpc.insecure_channel(address))
        if transport == "grpc"
        else "rest",
        credentials=None if transport == "grpc" else AnonymousCredentials(),
        client_options={"api_endpoint": "http://" + address},
    )
    endpoint = v1.Endpoint(name=f"{PARENT}/endpoints/7", traffic_split={"m1": 30, "m2": 70})
    mask = field_mask_pb2.FieldMask(paths=["traffic_split", "display_name"])
    updated = client.update_endpoint(endpoint=endpoint, update_mask=mask)
    assert (updated.name, updated.display_name) == (endpoint.name, "traffic_split,display_name")
    assert dict(updated.traffic_split) == {"m1": 30, "m2": 70}


# ------------------------------------------------------------------ REST details


def test_path_variables_arrive_percent_encoded(address: str) -> None:
    status, answer = rest(address, "GET", f"/v1/{PARENT}/models/m%402")
    assert (status, json.loads(answer)["name"]) == (200, f"{PARENT}/models/m@2")
    got = v1.ModelServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": "http://" + address},
    ).get_model(name=f"{PARENT}/models/m@3")
    assert got.name == f"{PARENT}/models/m@3"


def test_rest_answers_enums_as_asked_and_int64_as_strings(address: str) -> None:
    name = rest_client(address).create_custom_job(parent=PARENT, custom_job=job("enums")).name
    _, by_name = rest(address, "GET", f"/v1/{name}?alt=json")
    _, by_number = rest(address, "GET", f"/v1/{name}?%24alt=json%3Benum-encoding%3Dint")
    assert json.loads(by_name)["state"] == "JOB_STATE_QUEUED"
    assert json.loads(by_name)["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] == "1"  # int64
    assert json.loads(by_number)["state"] == S.JOB_STATE_QUEUED.value
    status, body = rest(
        address, "GET", f"/v1/{PARENT}/customJobs?pageSize=1&filter=labels.a%3D%22b%22"
    )
    assert status == 200 and json.loads(body)["nextPageToken"] == "1"
    status, body = rest(address, "GET", f"/v1/{PARENT}/customJobs?readMask=displayName&bogus=1")
    assert (status, json.loads(body)["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert (
        "bogus: ListCustomJobsRequest has no field 'bogus'" in json.loads(body)["error"]["message"]
    )


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"displayName": "x", "bogus": 1}', "custom_job.bogus: CustomJob has no field 'bogus'"),
        (b'{"jobSpec": {"workerPoolSpecs": [{"replicaCount": "many"}]}}', "replicaCount"),
        (b'{"displayName": ', "Invalid JSON payload"),
    ],
)
def test_a_malformed_body_is_invalid_argument_naming_the_field(
    address: str, body: bytes, named: str
) -> None:
    status, answer = rest(address, "POST", f"/v1/{PARENT}/customJobs", body)
    error = json.loads(answer)["error"]
    assert (status, error["code"], error["status"]) == (400, 400, "INVALID_ARGUMENT")
    assert named in error["message"]
    assert rest(address, "GET", f"/v1/{PARENT}/customJobs")[0] == 200


def test_rest_not_found_and_an_unknown_route(address: str) -> None:
    status, answer = rest(address, "GET", f"/v1/{PARENT}/customJobs/nope")
    assert (status, json.loads(answer)["error"]["status"]) == (404, "NOT_FOUND")
    status, answer = rest(address, "GET", "/v2/elsewhere")
    assert (status, json.loads(answer)["error"]["status"]) == (404, "NOT_FOUND")


def test_raw_predict_takes_and_gives_raw_bytes(address: str) -> None:
    endpoint = f"{PARENT}/endpoints/7"
    status, answer = rest(address, "POST", f"/v1/{endpoint}:rawPredict", b'{"instances": [1]}')
    assert (status, answer) == (200, b'application/json {"instances": [1]}')
    # Over gRPC the HttpBody is a message. (GAPIC's REST client reads the answer as the JSON
    # of an HttpBody, which Vertex does not send: it answers the model's bytes, as here.)
    channel = grpc.insecure_channel(address)
    client = v1.PredictionServiceClient(transport=PredictionServiceGrpcTransport(channel=channel))
    body = httpbody_pb2.HttpBody(content_type="text/csv", data=b"1,2")
    assert client.raw_predict(endpoint=endpoint, http_body=body).data == b"text/csv 1,2"


def test_admin_answers_under_local(address: str) -> None:
    status, answer = rest(address, "POST", "/local/hold?job=1", b"x")
    assert (status, answer) == (200, b"POST /local/hold {'job': ['1']} x")


def test_stop_closes_the_port_and_every_open_connection() -> None:
    server = wire.serve({"ModelService": StubModels()})
    host, port = server.address.split(":")
    kept = http.client.HTTPConnection(host, int(port), timeout=30)
    kept.request("GET", f"/v1/{PARENT}/models/1")
    assert kept.getresponse().read()
    channel = grpc.insecure_channel(server.address)
    models = v1.ModelServiceClient(transport=ModelServiceGrpcTransport(channel=channel))
    assert models.get_model(name=f"{PARENT}/models/2").name.endswith("/2")
    server.stop()
    with pytest.raises((http.client.HTTPException, OSError)):
        kept.request("GET", f"/v1/{PARENT}/models/1")
        kept.getresponse()
    with pytest.raises(exceptions.ServiceUnavailable):
        models.get_model(name=f"{PARENT}/models/2", timeout=10)


def test_a_rule_template_binds_nested_fields_and_any_depth() -> None:
    pattern, fields = wire._pattern("/v1/{endpoint.name=projects/*/endpoints/*}/{rest=**}:go")
    match = pattern.fullmatch("/v1/projects/p/endpoints/e/a/b/c:go")
    assert match and dict(zip(fields, match.groups(), strict=True)) == {
        "endpoint.name": "projects/p/endpoints/e",
        "rest": "a/b/c",
    }
    assert not pattern.fullmatch("/v1/projects/p/x/endpoints/e/a:go")
