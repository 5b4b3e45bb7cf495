"""A persistent resource and a job on it are, field by field, what the Vertex SDK sends
for the same pools: ``PersistentResource.create(...)`` (its create call intercepted, no
API call) and ``aiplatform.CustomJob(..., persistent_resource_id=...)`` (built offline)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.capacity.resources import KEY, NETWORK, gpu_pool, platform, sdk_where
from tests.jobs.facts import IMAGE, body_of
from tests.pulumi_mocks import run_pulumi
from vertex_training.capacity import (
    PersistentResource,
    PersistentResourceArgs,
    ResourcePool,
)
from vertex_training.jobs.api import CustomJobArgs, resolve
from vertex_training.jobs.pools import Accelerator, WorkerPool

GCP_TYPE = "gcp:vertex/aiPersistentResource:AiPersistentResource"

SDK_POOLS = [
    {
        "machine_spec": {
            "machine_type": "n1-standard-8",
            "accelerator_type": "NVIDIA_TESLA_T4",
            "accelerator_count": 2,
        },
        "replica_count": 1,
        "disk_spec": {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 200},
        "autoscaling_spec": {"min_replica_count": 1, "max_replica_count": 4},
    },
    {"id": "cpu", "machine_spec": {"machine_type": "e2-standard-4"}, "replica_count": 2},
]


def _sdk_request(**kwargs: Any) -> dict[str, Any]:
    """What ``PersistentResource.create(**kwargs)`` hands its API client."""
    from google.cloud.aiplatform.persistent_resource import PersistentResource as Sdk

    sent: dict[str, Any] = {}

    class SentError(Exception):
        pass

    def create(
        cls: Any, *, api_client: Any, parent: str, persistent_resource: Any, **rest: Any
    ) -> None:
        sent.update(parent=parent, body=body_of(persistent_resource), **rest)
        raise SentError

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Sdk, "_create", classmethod(create))
        with pytest.raises(SentError):
            Sdk.create(**kwargs, **sdk_where())
    return sent


def _args() -> PersistentResourceArgs:
    return PersistentResourceArgs(
        platform=platform(),
        pools=[gpu_pool(), ResourcePool(id="cpu", machine_type="e2-standard-4", replica_count=2)],
        labels={"team": "vision"},
        reserved_ip_ranges=["vertex-range"],
    )


def test_the_resource_is_what_the_sdk_sends() -> None:
    run = run_pulumi(lambda: PersistentResource("warm", _args()))
    ours = dict(run.one(GCP_TYPE).inputs)
    sent = _sdk_request(
        persistent_resource_id="warm",
        resource_pools=SDK_POOLS,
        display_name="warm",
        labels={"env": "dev", "team": "vision"},
        network=NETWORK,
        kms_key_name=KEY,
        enable_custom_service_account=True,
        reserved_ip_ranges=["vertex-range"],
    )
    assert sent["persistent_resource_id"] == ours.pop("name") == "warm"
    assert sent["parent"] == f"projects/{ours.pop('project')}/locations/{ours.pop('location')}"
    # What the engine hands pulumi-gcp is the SDK's request body, field by field.
    body = sent["body"]
    body.pop("name")
    assert ours == body


def test_a_job_on_it_is_what_the_sdk_builds() -> None:
    from google.cloud import aiplatform

    resources: list[PersistentResource] = []
    run_pulumi(lambda: resources.append(PersistentResource("warm", _args())))
    chief = WorkerPool(
        machine_type="n1-standard-8",
        accelerator=Accelerator("NVIDIA_TESLA_T4", 2),
        boot_disk_type="pd-ssd",
        boot_disk_size_gb=200,
        image=IMAGE,
    )
    args = CustomJobArgs(platform=platform(), chief=chief, persistent_resource_id=resources[0])
    ours = resolve(args, "train").body
    sdk = aiplatform.CustomJob(
        display_name="train",
        worker_pool_specs=[
            {
                "machine_spec": SDK_POOLS[0]["machine_spec"],
                "replica_count": 1,
                "disk_spec": SDK_POOLS[0]["disk_spec"],
                "container_spec": {"image_uri": IMAGE},
            }
        ],
        base_output_dir="gs://b/jobs/train",
        staging_bucket="gs://b",
        persistent_resource_id="warm",
        labels={"env": "dev"},
        encryption_spec_key_name=KEY,
        **sdk_where(),
    )
    built = body_of(sdk._gca_resource)
    assert ours["jobSpec"]["persistentResourceId"] == "warm"
    # The SDK leaves the service account, network and the output directory's model dir
    # to run(): compare what both set.
    for key in ("serviceAccount", "network"):
        ours["jobSpec"].pop(key)
    assert ours == built
