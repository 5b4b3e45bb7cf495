"""The training bucket: staging, checkpoints, model exports and job dirs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp.storage as gcp_storage

from vertex_training.platform._component import PlatformComponent

__all__ = ["STAGING_PREFIX", "TrainingBucket", "TrainingBucketArgs"]

STAGING_PREFIX = "staging/"
"""Where job packages and temporary files go; the only prefix that expires."""

_SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class TrainingBucketArgs:
    project: pulumi.Input[str]
    region: str
    """Same region as the jobs: training reads and writes here, cross-region costs egress."""
    bucket_name: pulumi.Input[str]
    labels: Mapping[str, str] = field(default_factory=dict)
    staging_retention_days: int = 7
    """Objects under ``staging/`` are deleted after this many days."""
    force_destroy: bool = False
    """dev: ``pulumi destroy`` empties and deletes the bucket."""
    versioning: bool = False
    """prod: overwritten models stay recoverable as noncurrent versions."""
    noncurrent_versions_kept: int = 3
    """With versioning: how many older versions of one object are kept."""
    soft_delete_retention_days: int = 0
    """Days deleted objects stay restorable; 0 turns soft delete (and its cost) off."""
    kms_key_name: pulumi.Input[str] | None = None
    """CMEK: the bucket's default key (Cloud Storage's service agent needs
    ``roles/cloudkms.cryptoKeyEncrypterDecrypter`` on it)."""
    protect: bool = False
    """prod: the engine refuses to delete the bucket, and would leave it in place anyway."""


class TrainingBucket(PlatformComponent[TrainingBucketArgs]):
    """A regional bucket with uniform access, public access prevention and lifecycle rules."""

    bucket: gcp_storage.Bucket
    name: pulumi.Output[str]
    url: pulumi.Output[str]
    """``gs://<name>``."""

    def _build(self, name: str, args: TrainingBucketArgs) -> dict[str, Any]:
        lifecycle_rules = [
            gcp_storage.BucketLifecycleRuleArgs(
                action=gcp_storage.BucketLifecycleRuleActionArgs(type="Delete"),
                condition=gcp_storage.BucketLifecycleRuleConditionArgs(
                    age=args.staging_retention_days, matches_prefixes=[STAGING_PREFIX]
                ),
            )
        ]
        if args.versioning:
            # Versioning without a bound grows the bill with every checkpoint overwrite.
            lifecycle_rules.append(
                gcp_storage.BucketLifecycleRuleArgs(
                    action=gcp_storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp_storage.BucketLifecycleRuleConditionArgs(
                        num_newer_versions=args.noncurrent_versions_kept, with_state="ARCHIVED"
                    ),
                )
            )
        self.bucket = gcp_storage.Bucket(
            f"{name}-bucket",
            name=args.bucket_name,
            project=args.project,
            # The API stores locations upper-case; matching it avoids a diff on every up.
            location=args.region.upper(),
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            labels=dict(args.labels),
            force_destroy=args.force_destroy,
            versioning=gcp_storage.BucketVersioningArgs(enabled=args.versioning),
            soft_delete_policy=gcp_storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=args.soft_delete_retention_days * _SECONDS_PER_DAY
            ),
            lifecycle_rules=lifecycle_rules,
            encryption=(
                gcp_storage.BucketEncryptionArgs(default_kms_key_name=args.kms_key_name)
                if args.kms_key_name is not None
                else None
            ),
            opts=self._child(protect=args.protect, retain_on_delete=args.protect),
        )
        self.name = self.bucket.name
        self.url = self.bucket.name.apply(lambda bucket: f"gs://{bucket}")
        return {"name": self.name, "url": self.url}
