"""The platform facts the job-rule tests judge jobs on, and a message's REST JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_training.jobs.api import LATER, PlatformFacts


def platform_facts(
    environment: str = "dev", *, strict: bool = False, labels: Mapping[str, str] | None = None
) -> PlatformFacts:
    """A platform in us-central1 with no key, network or TensorBoard and no acknowledged
    checks; its image comes later, and on Google Cloud its service account too."""
    return PlatformFacts(
        environment=environment,
        region="us-central1",
        strict_hardware_checks=strict,
        labels=labels or {},
        kms_key_name=None,
        network=None,
        tensorboard=None,
        training_service_account=None if environment == "local" else LATER,
        image=LATER,
    )


IMAGE = "r/trainer@sha256:" + "1" * 64
SERVICE_ACCOUNT = "sa@p.iam.gserviceaccount.com"


def handles(labels: Mapping[str, str] | None = None) -> PlatformFacts:
    """A dev platform in us-central1 with an image, a bucket (``gs://b``), a service account
    and ``labels``: a stack job's body is built on it."""
    return PlatformFacts(
        environment="dev",
        region="us-central1",
        labels=labels or {},
        image=IMAGE,
        bucket_url="gs://b",
        training_service_account=SERVICE_ACCOUNT,
    )


def body_of(message: Any) -> dict[str, Any]:
    """The REST JSON of a proto-plus message, as the API reference spells it."""
    from google.protobuf import json_format

    return json_format.MessageToDict(type(message).pb(message))
