"""Training bucket: private, regional, disposable in dev, protected in prod."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from tests.pulumi_mocks import run_pulumi
from vertex_training.platform.storage import STAGING_PREFIX, TrainingBucket, TrainingBucketArgs

BUCKET = "gcp:storage/bucket:Bucket"
LABELS = {"app": "vertex-training", "stack": "t"}


def bucket_args(
    environment: str, region: str, staging_days: int, **extra: Any
) -> TrainingBucketArgs:
    return TrainingBucketArgs(
        project="p-1",
        region=region,
        bucket_name=f"p-1-{environment}-vertex",
        labels=LABELS,
        staging_retention_days=staging_days,
        **extra,
    )


DEV = bucket_args("dev", "us-central1", 3, force_destroy=True)
PROD = bucket_args(
    "prod", "europe-west4", 7, versioning=True, soft_delete_retention_days=14, protect=True
)


def build(args: TrainingBucketArgs) -> pulumi.Output[str]:
    return TrainingBucket("storage", args).url


@pytest.mark.parametrize("args", [DEV, PROD], ids=["dev", "prod"])
def test_every_bucket_is_private_regional_and_labelled(args: TrainingBucketArgs) -> None:
    run = run_pulumi(lambda: build(args))
    bucket = run.one(BUCKET)
    assert bucket.name == "storage-bucket"
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["publicAccessPrevention"] == "enforced"
    assert bucket.inputs["location"] == args.region.upper()
    assert bucket.inputs["name"] == args.bucket_name
    assert bucket.inputs["labels"] == LABELS
    assert bucket.parent == run.one("vertex-training:platform:TrainingBucket").urn


def test_dev_bucket_is_disposable_and_expires_staging() -> None:
    bucket = run_pulumi(lambda: build(DEV)).one(BUCKET)
    assert bucket.inputs["forceDestroy"] is True
    assert bucket.protect is False and bucket.retain_on_delete is False
    assert bucket.inputs["versioning"] == {"enabled": False}
    assert bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 0}
    assert bucket.inputs["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"age": 3, "matchesPrefixes": [STAGING_PREFIX]}}
    ]


def test_prod_bucket_survives_destroy() -> None:
    bucket = run_pulumi(lambda: build(PROD)).one(BUCKET)
    assert bucket.protect is True
    assert bucket.retain_on_delete is True
    assert bucket.inputs["forceDestroy"] is False
    assert bucket.inputs["versioning"] == {"enabled": True}
    assert bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 14 * 86_400}
    rules = bucket.inputs["lifecycleRules"]
    assert rules[0]["condition"] == {"age": 7, "matchesPrefixes": [STAGING_PREFIX]}
    # Old versions are bounded, models themselves never expire.
    assert rules[1]["condition"] == {"numNewerVersions": 3, "withState": "ARCHIVED"}
    for rule in rules:
        if "age" in rule["condition"]:
            assert rule["condition"]["matchesPrefixes"] == [STAGING_PREFIX]


def test_url_output() -> None:
    urls: list[str] = []
    run_pulumi(lambda: build(DEV).apply(urls.append))
    assert urls == ["gs://p-1-dev-vertex"]


def test_children_wait_for_what_the_component_waits_for() -> None:
    def program() -> None:
        dependency = pulumi.CustomResource("test:index:Api", "api", {})
        TrainingBucket("storage", DEV, pulumi.ResourceOptions(depends_on=[dependency]))

    run = run_pulumi(program)
    api = run.named("api")
    assert api.urn in run.one("vertex-training:platform:TrainingBucket").dependencies
    assert api.urn in run.one(BUCKET).dependencies
