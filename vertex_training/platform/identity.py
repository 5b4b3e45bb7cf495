"""Service accounts for training jobs and for Workbench, each with the least roles that work.

Why each role (and why nothing more):

training (the identity Vertex AI jobs run as)
- ``roles/storage.objectAdmin`` on the training bucket only: read data and staging,
  write and overwrite checkpoints, model exports, TensorBoard logs (objectCreator
  cannot overwrite, and resuming from a checkpoint rewrites files).
- nothing on the registry: Vertex pulls images with its own service agent, which
  has reader access to repositories of the same project.
- nothing on the project: job logs are collected by Vertex from stdout/stderr, and
  hyperparameter metrics from the file cloudml-hypertune writes.

workbench (the identity of the notebook VM, used from its terminal and notebooks)
- ``roles/aiplatform.user`` on the project: submit and watch training and tuning jobs
  (Vertex has no finer scope for creating jobs).
- ``roles/iam.serviceAccountUser`` on the training account only: start jobs that run
  as the training account, and no other.
- ``roles/storage.objectAdmin`` on the training bucket only: stage packages, read models.
- ``roles/artifactregistry.writer`` on the trainer repository only: the codelab builds
  and pushes trainer images from the notebook terminal.
- ``roles/logging.logWriter`` on the project: the VM's agents ship its logs.

No owner, editor or other primitive role anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp.artifactregistry as gcp_artifactregistry
import pulumi_gcp.projects as gcp_projects
import pulumi_gcp.serviceaccount as gcp_serviceaccount
import pulumi_gcp.storage as gcp_storage

from vertex_training.platform._component import PlatformComponent

__all__ = ["PlatformIdentity", "PlatformIdentityArgs"]

_ACCOUNTS = {
    "training": ("Vertex AI training jobs", "training and tuning jobs"),
    "workbench": ("Vertex AI Workbench", "Workbench instance"),
}
"""Each account's display name, and whose identity it is."""


@dataclass(frozen=True)
class PlatformIdentityArgs:
    project: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    """The training bucket: bucket roles are granted on it, not on the project."""
    repository_location: str
    repository_id: pulumi.Input[str] | None
    """None: no repository (every image exists already), no registry grant."""
    training_account_id: str | None
    """6-30 characters, lowercase letters, digits and '-'; None: bring your own
    (``training_email``), and nothing is created or granted for it."""
    workbench_account_id: str | None
    """None when the stack has no Workbench instance (or brings its own): no account."""
    training_email: pulumi.Input[str] | None = None
    """An existing training service account's email (with ``training_account_id`` None)."""


class PlatformIdentity(PlatformComponent[PlatformIdentityArgs]):
    """The training and Workbench service accounts and their grants."""

    training_account: gcp_serviceaccount.Account | None
    training_email: pulumi.Output[str]
    workbench_account: gcp_serviceaccount.Account | None
    workbench_email: pulumi.Output[str] | None

    def _build(self, name: str, args: PlatformIdentityArgs) -> dict[str, Any]:
        self.training_account = None
        if args.training_account_id is None:
            if args.training_email is None:
                raise ValueError("PlatformIdentityArgs: training_account_id or training_email")
            # Brought by the user, with whatever roles they gave it: nothing granted here.
            self.training_email = pulumi.Output.from_input(args.training_email)
            training_account_name: pulumi.Input[str] = pulumi.Output.concat(
                "projects/", args.project, "/serviceAccounts/", self.training_email
            )
        else:
            self.training_account = self._account(name, "training", args.training_account_id, args)
            self.training_email = self.training_account.email
            training_account_name = self.training_account.name
            self._grant(
                f"{name}-training-bucket",
                gcp_storage.BucketIAMMember,
                self.training_account.member,
                "roles/storage.objectAdmin",
                bucket=args.bucket_name,
            )

        self.workbench_account = None
        self.workbench_email = None
        if args.workbench_account_id is not None:
            self.workbench_account = self._account(
                name, "workbench", args.workbench_account_id, args
            )
            self.workbench_email = self.workbench_account.email
            member = self.workbench_account.member
            for role, suffix in (
                ("roles/aiplatform.user", "aiplatform"),
                ("roles/logging.logWriter", "logs"),
            ):
                self._grant(
                    f"{name}-workbench-{suffix}",
                    gcp_projects.IAMMember,
                    member,
                    role,
                    project=args.project,
                )
            self._grant(
                f"{name}-workbench-act-as-training",
                gcp_serviceaccount.IAMMember,
                member,
                "roles/iam.serviceAccountUser",
                service_account_id=training_account_name,
            )
            self._grant(
                f"{name}-workbench-bucket",
                gcp_storage.BucketIAMMember,
                member,
                "roles/storage.objectAdmin",
                bucket=args.bucket_name,
            )
            if args.repository_id is not None:
                self._grant(
                    f"{name}-workbench-registry",
                    gcp_artifactregistry.RepositoryIamMember,
                    member,
                    "roles/artifactregistry.writer",
                    project=args.project,
                    location=args.repository_location,
                    repository=args.repository_id,
                )
        return {"training_email": self.training_email, "workbench_email": self.workbench_email}

    def _account(
        self, name: str, role: str, account_id: str, args: PlatformIdentityArgs
    ) -> gcp_serviceaccount.Account:
        display_name, whose = _ACCOUNTS[role]
        return gcp_serviceaccount.Account(
            f"{name}-{role}",
            project=args.project,
            account_id=account_id,
            display_name=display_name,
            description=f"Identity of the platform's {whose}",
            opts=self._child(),
        )

    def _grant(
        self,
        child_name: str,
        kind: Callable[..., pulumi.CustomResource],
        member: pulumi.Input[str],
        role: str,
        **scope: pulumi.Input[str],
    ) -> None:
        """``role`` for ``member`` on the resource ``scope`` names (an IAM member resource
        of ``kind``)."""
        kind(child_name, role=role, member=member, opts=self._child(), **scope)
