"""The platform and pools the capacity tests declare."""

from __future__ import annotations

from typing import Any

import pulumi

from vertex_training.capacity import Autoscaling, ResourcePool
from vertex_training.jobs.api import PlatformFacts
from vertex_training.jobs.pools import Accelerator

NETWORK = "projects/123/global/networks/vpc"
KEY = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
SERVICE_ACCOUNT = "sa@p.iam.gserviceaccount.com"


class StandInPlatform:
    """A ``JobPlatform`` of plain values that is not ``PlatformFacts`` (whose jobs wait for
    the stack reader): the Args meet it where they are built, as on a ``TrainingPlatform``."""

    def __init__(self, facts: PlatformFacts) -> None:
        self.__dict__.update(vars(facts))

    def default_image(self) -> Any:
        return self.image

    def resource_options(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions()


def platform(environment: str = "dev", **changes: Any) -> StandInPlatform:
    """A dev platform in us-central1 (project ``p``) with a network, a key and an image."""
    values: dict[str, Any] = {
        "environment": environment,
        "region": "us-central1",
        "project": "p",
        "labels": {"env": environment},
        "network": NETWORK,
        "kms_key_name": KEY,
        "image": "r/trainer@sha256:" + "1" * 64,
        "bucket_url": "gs://b",
        "training_service_account": SERVICE_ACCOUNT,
    }
    return StandInPlatform(PlatformFacts(**{**values, **changes}))


def gpu_pool(**changes: Any) -> ResourcePool:
    """Two T4s on n1-standard-8, a 200 GB SSD, autoscaling from 1 to 4 replicas."""
    values: dict[str, Any] = {
        "machine_type": "n1-standard-8",
        "accelerator": Accelerator("NVIDIA_TESLA_T4", 2),
        "boot_disk_type": "pd-ssd",
        "boot_disk_size_gb": 200,
        "autoscaling": Autoscaling(min_replica_count=1, max_replica_count=4),
    }
    return ResourcePool(**{**values, **changes})


def sdk_where() -> dict[str, Any]:
    from google.auth.credentials import AnonymousCredentials

    return {"project": "p", "location": "us-central1", "credentials": AnonymousCredentials()}
