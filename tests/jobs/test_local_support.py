"""The local backend's field table against the real protos, and what it refuses or ignores."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1 as v1

from tests.bodies import custom_job, double, job_spec, pool, study, tuning_job
from tests.fakes.faults import ended
from tests.local.conftest import standin
from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.local_support import LOCAL_SUPPORT, Support, SupportTable
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.jobs.resources import JobProvider
from vertex_training.local.runners.jobs import JobRunner

PACKAGE = "google.cloud.aiplatform.v1."
CAPABILITIES_LOGGER = "vertex_training.jobs.local_support"


def _walk(descriptor: Any, table: SupportTable, seen: set[str], out: set[str]) -> None:
    """Every field of ``descriptor``, and down through every field the backend runs (a
    field inside a refused or ignored one is never met: the walk at submit stops there)."""
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        name = f"{descriptor.full_name.removeprefix(PACKAGE)}.{field.name}"
        out.add(name)
        message = field.message_type
        if message is None or message.GetOptions().map_entry:
            continue
        if message.full_name.startswith(("google.protobuf.", "google.rpc.")):
            continue
        support = table.get(name)
        if support is None or support.support in (Support.HONOURED, Support.APPROXIMATED):
            _walk(message, table, seen, out)


def proto_fields(
    roots: tuple[Any, ...] = (v1.CustomJob, v1.HyperparameterTuningJob),
    table: SupportTable = LOCAL_SUPPORT,
) -> set[str]:
    """Every ``<Message>.<field>`` a local backend can meet in the ``roots`` (by default
    the two job messages) by its ``table``."""
    out: set[str] = set()
    seen: set[str] = set()
    for message in roots:
        _walk(message.pb().DESCRIPTOR, table, seen, out)
    return out


def test_the_walk_reaches_nested_messages() -> None:
    fields = proto_fields()
    # Deep ones: a conditional parameter's condition, an env var, a study's stopping spec.
    assert "StudySpec.ParameterSpec.ConditionalParameterSpec.CategoricalValueCondition.values" in (
        fields
    )
    assert "EnvVar.value" in fields
    assert "CustomJob.labels" in fields
    assert "StudySpec.ConvexAutomatedStoppingSpec.min_step_count" in fields
    assert not [f for f in fields if f.startswith(("google.", "LabelsEntry"))]
    # Not inside a refused field (an NFS mount) nor an output-only one (a trial).
    assert "NfsMount.server" not in fields and "Trial.id" not in fields
    assert len(fields) > 100


def test_every_proto_field_is_classified() -> None:
    missing = sorted(proto_fields() - set(LOCAL_SUPPORT))
    assert missing == [], (
        f"classify these in local_support.json (capabilities.LOCAL_SUPPORT): {missing}"
    )


def test_the_table_names_only_real_fields() -> None:
    stale = sorted(set(LOCAL_SUPPORT) - proto_fields())
    assert stale == []


def test_refused_fields_say_why() -> None:
    assert all(s.why for s in LOCAL_SUPPORT.values() if s.support is not Support.HONOURED)


# -- refused ----------------------------------------------------------------------------


def _pool(**extra: Any) -> dict[str, Any]:
    return standin(["--sleep=0"]) | extra


def _tpu_pool(**machine: Any) -> dict[str, Any]:
    body = _pool()
    body["machineSpec"] = {"machineType": "ct5lp-hightpu-4t", **machine}
    return body


def _python_package_pool() -> dict[str, Any]:
    body = _pool()
    del body["containerSpec"]
    body["pythonPackageSpec"] = {
        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
        "packageUris": ["gs://b/trainer-0.1.tar.gz"],
        "pythonModule": "trainer.task",
    }
    return body


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "tpuTopology": (
        custom_job(
            _tpu_pool(acceleratorType="TPU_V5_LITEPOD", acceleratorCount=4, tpuTopology="2x2")
        ),
        r"jobSpec\.workerPoolSpecs\[0\]\.machineSpec\.(tpuTopology|acceleratorType)",
    ),
    "TPU accelerator": (
        custom_job(_tpu_pool(acceleratorType="TPU_V5_LITEPOD", acceleratorCount=4)),
        r"jobSpec\.workerPoolSpecs\[0\]\.machineSpec\.acceleratorType",
    ),
    "nfsMounts": (
        custom_job(_pool(nfsMounts=[{"server": "10.0.0.2", "path": "/s", "mountPoint": "data"}])),
        r"jobSpec\.workerPoolSpecs\[0\]\.nfsMounts",
    ),
    "lustreMounts": (
        custom_job(
            _pool(
                lustreMounts=[
                    {
                        "instanceIp": "10.0.0.3",
                        "volumeHandle": "p/l/i",
                        "filesystem": "fs",
                        "mountPoint": "lustre",
                    }
                ]
            )
        ),
        r"jobSpec\.workerPoolSpecs\[0\]\.lustreMounts",
    ),
    "reservationAffinity": (
        custom_job(
            _pool(
                machineSpec={
                    "machineType": "n1-standard-4",
                    "reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"},
                }
            )
        ),
        r"jobSpec\.workerPoolSpecs\[0\]\.machineSpec\.reservationAffinity",
    ),
    "pythonPackageSpec": (
        custom_job(_python_package_pool()),
        r"jobSpec\.workerPoolSpecs\[0\]\.pythonPackageSpec",
    ),
    "pscInterfaceConfig": (
        custom_job(
            _pool(),
            pscInterfaceConfig={"networkAttachment": "projects/p/regions/r/networkAttachments/a"},
        ),
        r"jobSpec\.pscInterfaceConfig",
    ),
}


@pytest.mark.parametrize("feature", sorted(REFUSED))
def test_vertex_only_features_are_refused_before_any_process_starts(
    feature: str, tmp_path: Path
) -> None:
    body, path = REFUSED[feature]
    backend = JobRunner(str(tmp_path / "root"))
    with pytest.raises(JobRefusedError, match="Vertex only") as refused:
        backend.submit(JobKind.CUSTOM_JOB, body)
    assert re.search(path, str(refused.value)), str(refused.value)
    assert not backend.jobs_dir.exists() or not any(backend.jobs_dir.iterdir())


def test_refused_feature_in_a_study_names_the_trial_job_path(tmp_path: Path) -> None:
    body = tuning_job(
        job_spec(_pool(nfsMounts=[{"server": "10.0.0.2", "path": "/s", "mountPoint": "d"}])),
        study(double("x", 0.0, 1.0)),
    )
    backend = JobRunner(str(tmp_path / "root"))
    with pytest.raises(
        JobRefusedError, match=r"trialJobSpec\.workerPoolSpecs\[0\]\.nfsMounts.*Vertex only"
    ):
        backend.submit(JobKind.HYPERPARAMETER_TUNING_JOB, body)
    assert not backend.jobs_dir.exists() or not any(backend.jobs_dir.iterdir())


# -- ignored ----------------------------------------------------------------------------


IGNORED: dict[str, tuple[str, dict[str, Any]]] = {
    "network": ("jobSpec.network", {"network": "projects/123/global/networks/vpc"}),
    "serviceAccount": (
        "jobSpec.serviceAccount",
        {"serviceAccount": "training@p.iam.gserviceaccount.com"},
    ),
    "reservedIpRanges": (
        "jobSpec.reservedIpRanges",
        {"network": "projects/123/global/networks/vpc", "reservedIpRanges": ["range-a"]},
    ),
    "enableWebAccess": ("jobSpec.enableWebAccess", {"enableWebAccess": True}),
}


def _ignored_body(feature: str) -> dict[str, Any]:
    if feature == "encryptionSpec":
        body = custom_job(_pool(), output=None)
        body["encryptionSpec"] = {
            "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
        }
        return body
    return custom_job(_pool(), output=None, **IGNORED[feature][1])


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("feature", [*sorted(IGNORED), "encryptionSpec"])
def test_cloud_only_fields_run_with_one_info_line(
    feature: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = JobRunner(str(tmp_path / "root"))
    with caplog.at_level(logging.INFO, logger=CAPABILITIES_LOGGER):
        record = backend.submit(JobKind.CUSTOM_JOB, _ignored_body(feature))
    lines = [r for r in caplog.records if r.name == CAPABILITIES_LOGGER]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno == logging.INFO
    path = IGNORED[feature][0] if feature in IGNORED else "encryptionSpec"
    assert path in lines[0].getMessage()
    assert ended(backend, record.name).state is JobState.SUCCEEDED


def test_tracking_fields_say_where_the_logs_go_instead(caplog: pytest.LogCaptureFixture) -> None:
    from vertex_training.jobs.local_support import check_local_support
    from vertex_training.jobs.protos import parse_body

    context = "projects/p/locations/us-central1/metadataStores/default/contexts/horses"
    body = custom_job(
        _pool(),
        tensorboard="projects/p/locations/us-central1/tensorboards/42",
        experiment=context,
        experimentRun=f"{context}-run-1",
    )
    with caplog.at_level(logging.INFO, logger=CAPABILITIES_LOGGER):
        check_local_support(parse_body(JobKind.CUSTOM_JOB, body))
    ignored, approximated = (r.getMessage() for r in caplog.records)
    assert "jobSpec.experiment" in ignored and "jobSpec.experimentRun" in ignored
    assert "jobSpec.tensorboard" in approximated
    assert "make tensorboard STACK=local" in approximated


# -- refused at check (preview), not only at create --------------------------------------


def _check_props(tmp_path: Path, body: dict[str, Any]) -> dict[str, Any]:
    from tests.jobs.test_provider_local import props

    return props(tmp_path, body)


@pytest.mark.parametrize("feature", sorted(REFUSED))
def test_the_providers_check_refuses_what_only_vertex_has(feature: str, tmp_path: Path) -> None:
    body, path = REFUSED[feature]
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, _check_props(tmp_path, body))
    messages = [f.reason for f in result.failures if f.property == "spec"]
    assert any(re.search(path, m) and "it runs on Vertex only" in m for m in messages), messages
    assert not (tmp_path / "root").exists()  # nothing was started or stored


def test_the_providers_check_passes_what_the_local_backend_runs(tmp_path: Path) -> None:
    body = custom_job(_pool(), network="projects/1/global/networks/vpc")
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, _check_props(tmp_path, body))
    assert result.failures == []


def test_nfs_mounts_without_a_network_are_refused_for_both_reasons(tmp_path: Path) -> None:
    """What Vertex would refuse is the provider's check's to say (once, before the backend
    sees the body), and it says it beside what only Vertex has."""
    body = custom_job(_pool(nfsMounts=[{"server": "10.0.0.2", "path": "/s", "mountPoint": "d"}]))
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, _check_props(tmp_path, body))
    messages = " ".join(f.reason for f in result.failures if f.property == "spec")
    assert "NFS shares are reached over a VPC" in messages
    assert "NFS shares are mounted on Vertex VMs; it runs on Vertex only" in messages
    # The backend refuses what only Vertex has, before anything is stored.
    backend = JobRunner(str(tmp_path / "root"))
    with pytest.raises(JobRefusedError, match="NFS shares are mounted on Vertex VMs"):
        backend.submit(JobKind.CUSTOM_JOB, body)
    assert not backend.jobs_dir.exists() or not any(backend.jobs_dir.iterdir())


def test_what_vertex_refuses_is_refused_at_check_and_what_cannot_start_here_at_submit(
    tmp_path: Path,
) -> None:
    chief_with_two = custom_job(standin(replicas=2))
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, _check_props(tmp_path, chief_with_two))
    messages = [f.reason for f in result.failures if f.property == "spec"]
    assert any(re.search(r"workerPoolSpecs\[0\]\.replicaCount", m) for m in messages), messages
    backend = JobRunner(str(tmp_path / "root"))
    foreign_image = custom_job(pool(image="python:3.11"))
    with pytest.raises(JobRefusedError, match=r"container\.command"):
        backend.submit(JobKind.CUSTOM_JOB, foreign_image)
    assert not backend.jobs_dir.exists() or not any(backend.jobs_dir.iterdir())
