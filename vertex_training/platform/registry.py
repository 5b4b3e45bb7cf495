"""The Artifact Registry Docker repository for trainer images."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp.artifactregistry as gcp_artifactregistry

from vertex_training.platform._component import PlatformComponent

__all__ = ["TrainerRepository", "TrainerRepositoryArgs"]


@dataclass(frozen=True)
class TrainerRepositoryArgs:
    project: pulumi.Input[str]
    region: str
    """Same region as the jobs, so pulls stay in-region."""
    repository_id: str
    keep_count: int = 10
    """The cleanup policy keeps this many most recent versions of each image."""
    delete_after_days: int = 7
    """Versions beyond ``keep_count`` are deleted once older than this: a job queued with
    an older digest still finds its image."""
    labels: Mapping[str, str] = field(default_factory=dict)


class TrainerRepository(PlatformComponent[TrainerRepositoryArgs]):
    """A Docker repository with a keep-N-most-recent cleanup policy."""

    repository: gcp_artifactregistry.Repository
    url: pulumi.Output[str]
    """``REGION-docker.pkg.dev/PROJECT/REPOSITORY``: prefix of every image in it."""
    host: str
    """``REGION-docker.pkg.dev``: the registry address to authenticate against."""

    def _build(self, name: str, args: TrainerRepositoryArgs) -> dict[str, Any]:
        self.repository = gcp_artifactregistry.Repository(
            f"{name}-repository",
            project=args.project,
            location=args.region,
            repository_id=args.repository_id,
            format="DOCKER",
            description="Trainer images, tagged by content and consumed by digest",
            labels=dict(args.labels),
            cleanup_policy_dry_run=False,
            cleanup_policies=[
                # KEEP wins over DELETE: everything old goes except the newest keep_count.
                gcp_artifactregistry.RepositoryCleanupPolicyArgs(
                    id="delete-old-versions",
                    action="DELETE",
                    condition=gcp_artifactregistry.RepositoryCleanupPolicyConditionArgs(
                        tag_state="ANY", older_than=f"{args.delete_after_days * 86_400}s"
                    ),
                ),
                gcp_artifactregistry.RepositoryCleanupPolicyArgs(
                    id="keep-most-recent",
                    action="KEEP",
                    most_recent_versions=gcp_artifactregistry.RepositoryCleanupPolicyMostRecentVersionsArgs(
                        keep_count=args.keep_count
                    ),
                ),
            ],
            opts=self._child(),
        )
        self.host = f"{args.region}-docker.pkg.dev"
        self.url = pulumi.Output.concat(
            self.host, "/", args.project, "/", self.repository.repository_id
        )
        return {"url": self.url}
