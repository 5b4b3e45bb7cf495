"""The job providers served by the real dynamic-provider host, against the local Vertex
(faults injected around it); the jobs run the stand-in trainer."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from pulumi.runtime.proto import provider_pb2
from pulumi.runtime.rpc import UNKNOWN

from tests import bodies
from tests.bodies import cassava, horses_or_humans, standin
from tests.fakes.faults import FaultyVertex
from tests.fakes.settings import vertex_settings
from tests.jobs.provider_host import Engine, ProviderHost
from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import ADOPTION_LABEL, PROVIDER_VERSION

pytestmark = pytest.mark.slow

BACKEND = vertex_settings(retry_timeout_seconds=10)


@pytest.fixture(scope="module")
def host(vertex_server: FaultyVertex) -> Iterator[ProviderHost]:
    provider_host = ProviderHost(vertex_server.address)
    yield provider_host
    provider_host.close()


@pytest.fixture(autouse=True)
def clean(vertex: FaultyVertex) -> None:
    """Every test starts with an empty local Vertex."""


def job(*args: str, workers: int = 1) -> dict[str, Any]:
    """The cassava job, its replicas the stand-in trainer with ``args``."""
    return standin(cassava(accelerator=None, workers=workers), *args)


RUNNING = ("--sleep", "60")


def props(spec: Any, name: str = "cassava", **extra: Any) -> dict[str, Any]:
    return {
        "spec": spec,
        "backend": BACKEND.to_props(),
        "identity": f"vertex/dev/{name}",
        "wait": True,
        "wait_timeout_seconds": 30,
        "poll_interval_seconds": 0.01,
        "delete_timeout_seconds": 30,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


def calls(vertex: FaultyVertex) -> dict[str, int]:
    return {k: v for k, v in vertex.calls.items() if v}


def test_lifecycle_create_read_diff_delete(host: ProviderHost, vertex: FaultyVertex) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, failures = engine.check(props(job(*RUNNING), wait=False))
    assert failures == []

    job_id, outs = engine.create(inputs)
    assert calls(vertex) == {"ListCustomJobs": 1, "CreateCustomJob": 1}
    assert job_id == outs["job_name"] == vertex.job_names()[0]
    assert outs["state"] in ("QUEUED", "PENDING", "RUNNING")
    assert outs["console_url"].startswith("https://console.cloud.google.com/vertex-ai/")
    assert outs["model_dir"] == "gs://p-bucket/jobs/cassava/model"
    labels = vertex.vertex.runner.job_body(job_id)["labels"]
    assert labels["codelab"] == "cassava" and labels["pulumi-stack"] == "dev"
    assert labels[ADOPTION_LABEL].startswith("cassava-")

    # An unchanged `up`: check + diff are local.
    vertex.calls.clear()
    again, failures = engine.check(props(job(*RUNNING), wait=False), olds=outs)
    diff = engine.diff(job_id, outs, again)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_NONE
    assert calls(vertex) == {}

    # Refresh: one get, state from the service, inputs kept.
    vertex.until_running(job_id)
    vertex.calls.clear()
    read_id, refreshed = engine.read(job_id, outs, inputs)
    assert read_id == job_id
    assert calls(vertex) == {"GetCustomJob": 1}
    assert refreshed["state"] == "RUNNING"
    assert refreshed["spec"] == outs["spec"]

    # What runs changed -> replace; how long to wait changed -> in-place update, no call.
    changed, _ = engine.check(props(job(*RUNNING, workers=3), wait=False))
    assert list(engine.diff(job_id, refreshed, changed).replaces) == ["spec"]
    settle, _ = engine.check(props(job(*RUNNING), wait=False, wait_timeout_seconds=99))
    diff = engine.diff(job_id, refreshed, settle)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and not diff.replaces
    bumped, _ = engine.check(props(job(*RUNNING), wait=False, provider_version="99"))
    diff = engine.diff(job_id, refreshed, bumped)
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and not diff.replaces
    vertex.calls.clear()
    updated = engine.update(job_id, refreshed, settle)
    assert updated["wait_timeout_seconds"] == 99 and updated["job_name"] == job_id
    assert calls(vertex) == {}

    engine.delete(job_id, refreshed)  # a running job: cancelled, then deleted
    assert vertex.job_names() == []
    assert vertex.calls["CancelCustomJob"] == 1 and vertex.calls["DeleteCustomJob"] == 1

    # Deleted already: fine, and a refresh drops it from state.
    engine.delete(job_id, refreshed)
    gone_id, _ = engine.read(job_id, outs, inputs)
    assert gone_id == ""


def created_cassava(host: ProviderHost) -> tuple[Engine, str, dict[str, Any]]:
    """An engine for custom jobs, and the cassava job it created (not waited on)."""
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job(), wait=False))
    job_id, outs = engine.create(inputs)
    return engine, job_id, outs


def relabelled(spec: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {**spec, "labels": labels, "displayName": "cassava, renamed"}


def test_label_and_display_name_edits_update_in_place_and_start_no_run(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine, job_id, outs = created_cassava(host)
    edited, failures = engine.check(
        props(relabelled(job(), codelab="cassava", team="vision"), wait=False), olds=outs
    )
    assert failures == []
    vertex.calls.clear()
    diff = engine.diff(job_id, outs, edited)
    # An update (what preview shows as `~ update`), not a replacement.
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME
    assert list(diff.replaces) == []
    updated = engine.update(job_id, outs, edited)
    # Vertex has no update RPC for CustomJob labels: the new ones are recorded in state.
    assert calls(vertex) == {}
    assert updated["job_name"] == job_id and len(vertex.job_names()) == 1
    assert updated["spec"]["labels"] == {"codelab": "cassava", "team": "vision"}
    assert updated["spec"]["displayName"] == "cassava, renamed"
    # The next `up` sees nothing to do.
    again, _ = engine.check(
        props(relabelled(job(), codelab="cassava", team="vision"), wait=False), olds=updated
    )
    assert engine.diff(job_id, updated, again).changes == provider_pb2.DiffResponse.DIFF_NONE


def test_a_run_field_changed_with_the_labels_still_replaces(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine, job_id, outs = created_cassava(host)
    both, _ = engine.check(props(relabelled(job(workers=3), team="vision"), wait=False))
    assert list(engine.diff(job_id, outs, both).replaces) == ["spec"]


def test_a_crashed_create_is_adopted_after_a_label_edit(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job(), wait=False))
    vertex.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    with pytest.raises(grpc.RpcError):
        engine.create(inputs)
    edited, _ = engine.check(props(relabelled(job(), team="vision"), wait=False))
    job_id, _ = engine.create(edited)
    assert vertex.job_names() == [job_id]


def test_create_waits_for_the_end_and_reports_trials(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine = Engine(host, JobKind.HYPERPARAMETER_TUNING_JOB, "horses")
    body = standin(horses_or_humans(max_trials=4), "--steps", "2")
    inputs, failures = engine.check(props(body, name="horses"))
    assert failures == []
    _, outs = engine.create(inputs)
    assert outs["state"] == "SUCCEEDED"
    assert outs["end_time"] and outs["start_time"]
    assert len(outs["trials"]) == 4
    best = outs["best_trial"]
    scores = [t["final_metrics"][HYPERTUNE_METRIC_TAG] for t in outs["trials"]]
    assert best["final_metrics"][HYPERTUNE_METRIC_TAG] == max(scores)
    assert set(best["parameters"]) == {"learning_rate", "momentum", "num_units"}
    assert outs["model_dir"] == f"gs://p-bucket/jobs/horses-humans/{best['trial_id']}/model"
    assert vertex.calls["ListHyperparameterTuningJobs"] == 1
    assert vertex.calls["CreateHyperparameterTuningJob"] == 1


def test_failed_job_fails_create_with_error_and_console_url(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job("--exit-code", "3")))
    with pytest.raises(grpc.RpcError) as caught:
        engine.create(inputs)
    details = caught.value.details()
    assert "ended FAILED" in details
    # The chief and its worker both exit 3: whichever the supervisor sees first is named.
    assert re.search(r"workerpool[01]-0 exited with a non-zero status of 3", details)
    assert "failing on purpose: boom" in details
    assert "https://console.cloud.google.com/vertex-ai/training/custom-jobs/" in details


def test_crash_after_submit_then_retry_adopts(host: ProviderHost, vertex: FaultyVertex) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job(), wait=False))
    # The job is made but the answer is lost, as when the process dies right after submit.
    vertex.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, after_effect=True)
    with pytest.raises(grpc.RpcError):
        engine.create(inputs)
    assert len(vertex.job_names()) == 1

    job_id, outs = engine.create(inputs)
    assert vertex.job_names() == [job_id]
    assert vertex.calls["CreateCustomJob"] == 1  # never blindly retried
    assert outs["job_name"] == job_id


def test_replacement_does_not_adopt_the_job_it_replaces(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine, old_id, _ = created_cassava(host)
    second, _ = engine.check(props(job(workers=2), wait=False))
    new_id, _ = engine.create(second)
    assert new_id != old_id and len(vertex.job_names()) == 2


def test_transient_faults_are_survived(host: ProviderHost, vertex: FaultyVertex) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job()))
    vertex.inject("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED)
    vertex.inject("GetCustomJob", grpc.StatusCode.UNAVAILABLE, times=2)
    vertex.inject("GetCustomJob", grpc.StatusCode.DEADLINE_EXCEEDED)
    job_id, outs = engine.create(inputs)
    assert outs["state"] == "SUCCEEDED"
    assert vertex.calls["ListCustomJobs"] == 2 and vertex.calls["CreateCustomJob"] == 1
    vertex.inject("DeleteCustomJob", grpc.StatusCode.UNAVAILABLE)
    vertex.inject("GetCustomJob", grpc.StatusCode.UNAVAILABLE)
    engine.delete(job_id, outs)
    assert vertex.job_names() == []


def test_create_is_not_retried_on_a_transient_error(
    host: ProviderHost, vertex: FaultyVertex
) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job(), wait=False))
    vertex.inject("CreateCustomJob", grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(grpc.RpcError):
        engine.create(inputs)
    assert vertex.calls["CreateCustomJob"] == 1 and vertex.job_names() == []


def test_wait_is_bounded(host: ProviderHost, vertex: FaultyVertex, tmp_path: Path) -> None:
    held = tmp_path / "hold"
    held.touch()
    engine = Engine(host, JobKind.CUSTOM_JOB)
    inputs, _ = engine.check(props(job("--hold-while", str(held)), wait_timeout_seconds=0.3))
    with pytest.raises(grpc.RpcError) as caught:
        engine.create(inputs)
    assert re.search("still (QUEUED|PENDING|RUNNING)", caught.value.details())
    assert "keeps running" in caught.value.details()
    # The next `up` adopts the running job instead of starting a second one.
    held.unlink()
    longer, _ = engine.check(props(job("--hold-while", str(held)), wait_timeout_seconds=30))
    job_id, outs = engine.create(longer)
    assert vertex.job_names() == [job_id] and outs["state"] == "SUCCEEDED"


def test_check_reports_validation_failures_by_field(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    spec = cassava()
    spec["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["acceleratorCount"] = 3
    spec["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "2"
    _, failures = engine.check(props(spec))
    reasons = [reason for prop, reason in failures if prop == "spec"]
    count = "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_V100"
    assert any(r.startswith(count) for r in reasons), reasons
    chief = "jobSpec.workerPoolSpecs[0].replicaCount: the first pool (the chief)"
    assert any(r.startswith(chief) for r in reasons), reasons


def test_check_refuses_an_unknown_field_by_its_api_path(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    spec = cassava()
    machine = spec["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    machine["acceleratorTyp"] = machine.pop("acceleratorType")
    _, failures = engine.check(props(spec))
    [(prop, reason)] = failures
    assert prop == "spec"
    assert "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorTyp" in reason
    assert "did you mean 'acceleratorType'?" in reason


def test_check_refuses_non_positive_waits(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    _, failures = engine.check(props(cassava(), poll_interval_seconds=0))
    assert [prop for prop, _ in failures] == ["poll_interval_seconds"]


def test_check_tolerates_unknowns_in_preview(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    _, failures = engine.check(props(UNKNOWN))
    assert failures == []


def with_unknown_image(spec: dict[str, Any]) -> dict[str, Any]:
    """The body as preview hands it over: the image digest not known yet."""
    for pool in spec["jobSpec"]["workerPoolSpecs"]:
        pool["containerSpec"]["imageUri"] = UNKNOWN
    return spec


def test_preview_checks_the_known_rest_of_a_body(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    _, failures = engine.check(props(with_unknown_image(cassava())))
    assert failures == []
    # extra_fields with a typo: refused at preview although the image is unknown.
    spec = with_unknown_image(cassava())
    spec["jobSpec"]["enableDashbordAccess"] = True
    [(prop, reason)] = engine.check(props(spec))[1]
    assert prop == "spec"
    assert "jobSpec.enableDashbordAccess" in reason and "enableDashboardAccess" in reason
    # A rule on a known field too: 3 GPUs do not fit, whatever the image.
    spec = with_unknown_image(cassava())
    spec["jobSpec"]["workerPoolSpecs"][1]["machineSpec"]["acceleratorCount"] = 3
    [(prop, reason)] = engine.check(props(spec))[1]
    assert "workerPoolSpecs[1].machineSpec.acceleratorCount" in reason


def test_an_image_by_tag_is_refused_once_resolved(host: ProviderHost) -> None:
    """The image came from an Output (built by the stack): unknown at program time, so
    only the provider's check, on the resolved value, can hold it to a digest."""
    engine = Engine(host, JobKind.CUSTOM_JOB)
    spec = cassava()
    spec["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["imageUri"] = "gcr.io/p/trainer:latest"
    [(prop, reason)] = engine.check(props(spec))[1]
    assert prop == "spec"
    assert reason.startswith("jobSpec.workerPoolSpecs[1].containerSpec.imageUri: ")
    assert "'gcr.io/p/trainer:latest' is not an image by digest" in reason
    assert "valid: REGISTRY/PATH@sha256:<64 hex digits>" in reason


def test_an_image_another_resource_gives_is_judged_by_check_once_known() -> None:
    """A pool's image from an Output is unknown when the program judges the job: its props
    name that path as not known yet and check holds the resolved value to a digest; a job whose
    values were all known is not judged again."""
    import pulumi

    import vertex_training as vt
    from tests.pulumi_mocks import run_pulumi
    from vertex_training.jobs.resources import JobProvider

    def job(name: str, image: Any) -> None:
        pool = vt.WorkerPool(machine_type="n1-standard-4", image=image)
        vt.CustomJob(
            name,
            vt.CustomJobArgs(
                project="my-project-123",
                region="us-central1",
                chief=pool,
                base_output_directory="gs://b/out",
                service_account="sa@p.iam.gserviceaccount.com",
            ),
        )

    def program() -> None:
        job("from-output", pulumi.Output.from_input("gcr.io/p/trainer:latest"))
        job("by-tag", "gcr.io/p/trainer:latest")
        job("by-digest", "gcr.io/p/trainer@sha256:" + "1" * 64)

    refused = re.escape("'gcr.io/p/trainer:latest' is not an image by digest")
    with pytest.raises(vt.InvalidArgumentsError, match=refused):
        run_pulumi(program, stack="dev", config={})  # the known tag: refused by the program

    def fine() -> None:
        job("from-output", pulumi.Output.from_input("gcr.io/p/trainer:latest"))
        job("by-digest", "gcr.io/p/trainer@sha256:" + "1" * 64)

    run = run_pulumi(fine, stack="dev", config={})
    checked = {}
    for registration in run.registrations:
        if registration.type.endswith("vertex:CustomJob"):
            inputs = dict(registration.inputs)
            result = JobProvider(JobKind.CUSTOM_JOB).check({}, inputs)
            checked[registration.name] = (inputs["unknown_paths"], result.failures)
    image_path = "jobSpec.workerPoolSpecs[0].containerSpec.imageUri"
    unjudged, failures = checked["from-output"]
    assert unjudged == [image_path]
    [failure] = failures
    assert failure.reason.startswith(f"{image_path}: 'gcr.io/p/trainer:latest' is not an image")
    assert checked["by-digest"] == ([], [])


def test_no_credentials_in_props_or_pickled_provider(host: ProviderHost) -> None:
    engine = Engine(host, JobKind.CUSTOM_JOB)
    pickled = base64.b64decode(engine.serialized)
    assert len(pickled) < 4096  # the class by reference and one string, nothing else
    for word in (b"credential", b"token", b"Client", b"channel", b"private_key"):
        assert word not in pickled
    inputs, _ = engine.check(props(cassava()))
    flat = repr(inputs).lower()
    assert "credential" not in flat and "token" not in flat


def test_adoption_label_is_stable_across_number_encodings() -> None:
    from vertex_training.jobs.resources import JobProvider

    spec = cassava()
    as_floats = json.loads(
        json.dumps(spec).replace('"acceleratorCount": 1', '"acceleratorCount": 1.0')
    )
    assert json.dumps(as_floats) != json.dumps(spec)  # what the engine hands back
    provider = JobProvider(JobKind.CUSTOM_JOB)
    one = provider.adoption_labels(props(spec))
    other = provider.adoption_labels(props(as_floats))
    assert one == other
    assert provider.adoption_labels(props(cassava(workers=2))) != one
    (value,) = one.values()
    assert len(value) <= 63 and value.startswith("cassava-")


# ------------------------------------------------ fidelity: the body reaches Vertex whole

OUTPUT_ONLY = ("name", "state", "createTime", "updateTime", "startTime", "endTime", "trials")


def maximal_custom_job() -> dict[str, Any]:
    """Every field an earlier spec-based provider dropped on the way to the service."""
    tpu = bodies.pool(
        "ct5lp-hightpu-4t",
        "TPU_V5_LITEPOD",
        4,
        nfsMounts=[{"server": "10.0.0.2", "path": "/share", "mountPoint": "data"}],
        lustreMounts=[
            {
                "instanceIp": "10.0.0.3",
                "volumeHandle": "p/us-central1-a/lustre",
                "filesystem": "fs",
                "mountPoint": "lustre",
            }
        ],
    )
    tpu["machineSpec"].update(
        tpuTopology="2x2",
        reservationAffinity={
            "reservationAffinityType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["projects/p/zones/us-central1-a/reservations/r"],
        },
    )
    partitioned = bodies.pool("a3-highgpu-1g", "NVIDIA_H100_80GB", 1, replicas=2)
    partitioned["machineSpec"]["gpuPartitionSize"] = "1g.10gb"
    return bodies.custom_job(
        tpu,
        partitioned,
        display_name="maximal",
        labels={"team": "ml"},
        network="projects/1/global/networks/vpc",
        reservedIpRanges=["vertex-range"],
        protectedArtifactLocationId="us-central1",
        enableDashboardAccess=True,
        enableWebAccess=True,
        experiment="projects/p/locations/us-central1/metadataStores/default/contexts/e",
        experimentRun="projects/p/locations/us-central1/metadataStores/default/contexts/e-r",
        models=["projects/p/locations/us-central1/models/m"],
        scheduling={
            "timeout": "1.5s",
            "maxWaitDuration": "0s",
            "disableRetries": True,
            "restartJobOnWorkerRestart": True,
            "strategy": "FLEX_START",
        },
    )


def maximal_tuning_job() -> dict[str, Any]:
    lr = bodies.double("lr", 0.001, 1, "UNIT_LOG_SCALE")
    lr["doubleValueSpec"]["defaultValue"] = 0.1
    study = bodies.study(
        lr,
        {
            "parameterId": "layers",
            "integerValueSpec": {"minValue": "1", "maxValue": "4", "defaultValue": "2"},
        },
        {"parameterId": "units", "discreteValueSpec": {"values": [64, 128], "defaultValue": 64}},
        {
            "parameterId": "opt",
            "categoricalValueSpec": {"values": ["sgd", "adam"], "defaultValue": "adam"},
        },
        metrics=(("accuracy", "MAXIMIZE"), ("latency", "MINIMIZE")),
        observationNoise="HIGH",
        measurementSelectionType="LAST_MEASUREMENT",
        convexAutomatedStoppingSpec={
            "maxStepCount": "100",
            "minStepCount": "10",
            "minMeasurementCount": "3",
            "learningRateParameterName": "lr",
            "useElapsedDuration": True,
            "updateAllStoppedTrials": True,
        },
        studyStoppingConfig={
            "shouldStopAsap": False,
            "minimumRuntimeConstraint": {"maxDuration": "60s"},
            "maximumRuntimeConstraint": {"endTime": "2030-01-01T00:00:00Z"},
            "minNumTrials": 2,
            "maxNumTrials": 8,
            "maxNumTrialsNoProgress": 3,
            "maxDurationNoProgress": "3600s",
        },
    )
    study["metrics"][1]["safetyConfig"] = {
        "safetyThreshold": 0.5,
        "desiredMinSafeTrialsFraction": 0.9,
    }
    trial = bodies.job_spec(
        bodies.pool("n1-standard-4", "NVIDIA_TESLA_T4", 1, diskSpec={"bootDiskType": "pd-ssd"}),
        scheduling={"timeout": "1.5s", "disableRetries": True},
        # A PSC interface and a peered network exclude each other: the trials take this one.
        pscInterfaceConfig={
            "networkAttachment": "projects/p/regions/us-central1/networkAttachments/na",
            "dnsPeeringConfigs": [
                {"domain": "corp.example.", "targetProject": "p", "targetNetwork": "vpc"}
            ],
        },
    )
    return bodies.tuning_job(
        trial,
        study,
        max_trials=8,
        parallel=2,
        maxFailedTrialCount=1,
        encryptionSpec={"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    )


def as_received(message: Any) -> dict[str, Any]:
    body: dict[str, Any] = json_format.MessageToDict(type(message).pb(message))
    for key in OUTPUT_ONLY:
        body.pop(key, None)
    labels = body.pop("labels", {})
    assert set(labels) >= {ADOPTION_LABEL, "pulumi-stack"}
    user = {k: v for k, v in labels.items() if k not in (ADOPTION_LABEL, "pulumi-stack")}
    return {**body, "labels": user} if user else body


@pytest.mark.parametrize(
    ("kind", "build"),
    [
        (JobKind.CUSTOM_JOB, maximal_custom_job),
        (JobKind.HYPERPARAMETER_TUNING_JOB, maximal_tuning_job),
    ],
)
def test_every_field_of_the_body_reaches_the_service(
    host: ProviderHost, vertex: FaultyVertex, kind: JobKind, build: Any
) -> None:
    """What the service receives (refused there: this machine runs no TPU)."""
    body = build()
    engine = Engine(host, kind, "maximal")
    inputs, failures = engine.check(props(body, name="maximal", wait=False))
    assert failures == []
    create = "CreateCustomJob" if kind is JobKind.CUSTOM_JOB else "CreateHyperparameterTuningJob"
    vertex.inject(create, grpc.StatusCode.INVALID_ARGUMENT)
    with pytest.raises(grpc.RpcError, match="injected"):
        engine.create(inputs)
    (request,) = vertex.requests[create]
    received = getattr(
        request, "custom_job" if kind is JobKind.CUSTOM_JOB else "hyperparameter_tuning_job"
    )
    sent = parse_body(kind, body)
    expected = json_format.MessageToDict(type(sent).pb(sent))
    assert as_received(received) == expected
    # What the old spec types changed on the way: a disk spec made up, a partitioned GPU
    # dropped, durations rounded to whole seconds, a zero wait dropped.
    if kind is JobKind.CUSTOM_JOB:
        pools = expected["jobSpec"]["workerPoolSpecs"]
        assert all("diskSpec" not in p for p in pools)
        assert pools[1]["machineSpec"]["acceleratorType"] == "NVIDIA_H100_80GB"
        assert expected["jobSpec"]["scheduling"]["maxWaitDuration"] == "0s"
        assert expected["jobSpec"]["scheduling"]["timeout"] == "1.500s"
