"""The platform facts the job-rule tests judge jobs on."""

from __future__ import annotations

from typing import Any

from vertex_training.jobs.api import LATER, PlatformFacts


def platform_facts(
    environment: str = "dev", *, strict: bool = False, labels: tuple[tuple[str, Any], ...] = ()
) -> PlatformFacts:
    """A platform in us-central1 with no key, network or TensorBoard and no acknowledged
    checks; its image comes later, and on Google Cloud its service account too."""
    return PlatformFacts(
        environment=environment,
        region="us-central1",
        strict_hardware_checks=strict,
        labels=labels,
        kms_key_name=None,
        network=None,
        tensorboard=None,
        training_service_account=None if environment == "local" else LATER,
        image=LATER,
    )
