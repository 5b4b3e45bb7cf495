"""The Google APIs every other resource of the platform needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp.projects as gcp_projects

from vertex_training.platform._component import PlatformComponent

__all__ = ["PLATFORM_SERVICES", "ProjectServices", "ProjectServicesArgs"]

PLATFORM_SERVICES: tuple[str, ...] = (
    "compute.googleapis.com",  # Workbench VMs and training machines
    "aiplatform.googleapis.com",  # Vertex AI training and tuning jobs
    "notebooks.googleapis.com",  # Vertex AI Workbench instances
    "artifactregistry.googleapis.com",  # the trainer image repository
    "storage.googleapis.com",  # the training bucket
    "iam.googleapis.com",  # the platform's service accounts
    "iamcredentials.googleapis.com",  # short-lived tokens: image push, act-as for jobs
    "cloudresourcemanager.googleapis.com",  # project-level IAM grants read and write policies
)
"""APIs enabled by the platform (the image is built locally, so no Cloud Build)."""


@dataclass(frozen=True)
class ProjectServicesArgs:
    project: pulumi.Input[str]


class ProjectServices(PlatformComponent[ProjectServicesArgs]):
    """Enables the platform's APIs; everything else ``depends_on`` this component."""

    services: dict[str, gcp_projects.Service]
    """API service name -> the resource that enables it."""

    def _build(self, name: str, args: ProjectServicesArgs) -> dict[str, Any]:
        self.services = {
            service: gcp_projects.Service(
                f"{name}-{service.split('.', 1)[0]}",
                project=args.project,
                service=service,
                # Other stacks and people may use these APIs: destroying us must not cut them off.
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=self._child(),
            )
            for service in PLATFORM_SERVICES
        }
        return {"services": list(self.services)}
