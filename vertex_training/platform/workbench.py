"""A Vertex AI Workbench instance for interactive work (the codelabs' notebook)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp.workbench as gcp_workbench

from vertex_training.platform._component import PlatformComponent

__all__ = [
    "SERVER_INJECTED_LABELS",
    "SERVER_INJECTED_METADATA",
    "TrainingWorkbench",
    "TrainingWorkbenchArgs",
]

SERVER_INJECTED_METADATA: tuple[str, ...] = (
    "agent-health-check-interval-seconds",
    "agent-health-check-path",
    "container",
    "data-disk-uri",
    "dataproc-allow-custom-clusters",
    "dataproc-cluster-name",
    "dataproc-configs",
    "dataproc-default-subnet",
    "dataproc-locations-list",
    "dataproc-machine-types-list",
    "dataproc-notebooks-url",
    "dataproc-region",
    "dataproc-service-account",
    "disable-check-xsrf",
    "disable-swap-binaries",
    "enable-guest-attributes",
    "enable-oslogin",
    "framework",
    "gcs-data-bucket",
    "generate-diagnostics-bucket",
    "generate-diagnostics-file",
    "generate-diagnostics-options",
    "image-url",
    "install-monitoring-agent",
    "installed-extensions",
    "notebooks-api",
    "notebooks-api-version",
    "notebooks-examples-location",
    "notebooks-location",
    "nvidia-driver-gcs-path",
    "proxy-backend-id",
    "proxy-mode",
    "proxy-registration-url",
    "proxy-status",
    "proxy-url",
    "proxy-user-mail",
    "report-container-health",
    "report-notebook-metrics",
    "report-system-health",
    "report-system-status",
    "restriction",
    "serial-port-logging-enable",
    "shutdown-script",
    "title",
    "use-collaborative",
    "version",
)
"""Metadata keys the Workbench service writes onto the instance. Without ignoring them
every second ``up`` shows a diff (the long-lived Terraform provider bug)."""

SERVER_INJECTED_LABELS: tuple[str, ...] = (
    "consumer-project-id",
    "consumer-project-number",
    "notebooks-product",
    "resource-name",
)


@dataclass(frozen=True)
class TrainingWorkbenchArgs:
    project: pulumi.Input[str]
    zone: str
    instance_name: str
    service_account_email: pulumi.Input[str]
    machine_type: str = "n1-standard-4"
    gpu_type: str | None = None
    gpu_count: int = 0
    disk_size_gb: int = 150
    container_image: str | None = None
    """A custom container to run instead of the standard Workbench image."""
    idle_timeout_minutes: int = 60
    public_ip: bool = True
    """prod: False, the instance is reached through the Workbench proxy only."""
    network: pulumi.Input[str] | None = None
    """A VPC network (``projects/P/global/networks/N``); None: the project's default."""
    subnet: pulumi.Input[str] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


class TrainingWorkbench(PlatformComponent[TrainingWorkbenchArgs]):
    """A shielded Workbench VM with idle shutdown, a terminal and the Workbench account."""

    instance: gcp_workbench.Instance
    url: pulumi.Output[str]
    """The JupyterLab address (through the Workbench proxy)."""

    def _build(self, name: str, args: TrainingWorkbenchArgs) -> dict[str, Any]:
        metadata = {
            # The codelab setting: an idle notebook shuts down after an hour, so it stops costing.
            "idle-timeout-seconds": str(args.idle_timeout_minutes * 60),
            "notebook-disable-terminal": "false",
        }
        accelerators = None
        if args.gpu_type is not None and args.gpu_count > 0:
            metadata["install-nvidia-driver"] = "True"
            accelerators = [
                gcp_workbench.InstanceGceSetupAcceleratorConfigArgs(
                    type=args.gpu_type, core_count=str(args.gpu_count)
                )
            ]
        container = None
        if args.container_image is not None:
            repository, tag = _split_image(args.container_image)
            container = gcp_workbench.InstanceGceSetupContainerImageArgs(
                repository=repository, tag=tag
            )
        self.instance = gcp_workbench.Instance(
            f"{name}-instance",
            name=args.instance_name,
            project=args.project,
            location=args.zone,
            labels=dict(args.labels),
            gce_setup=gcp_workbench.InstanceGceSetupArgs(
                machine_type=args.machine_type,
                accelerator_configs=accelerators,
                container_image=container,
                boot_disk=gcp_workbench.InstanceGceSetupBootDiskArgs(
                    disk_size_gb=str(args.disk_size_gb), disk_type="PD_BALANCED"
                ),
                disable_public_ip=not args.public_ip,
                network_interfaces=(
                    [
                        gcp_workbench.InstanceGceSetupNetworkInterfaceArgs(
                            network=args.network, subnet=args.subnet
                        )
                    ]
                    if args.network is not None or args.subnet is not None
                    else None
                ),
                service_accounts=[
                    gcp_workbench.InstanceGceSetupServiceAccountArgs(
                        email=args.service_account_email
                    )
                ],
                shielded_instance_config=gcp_workbench.InstanceGceSetupShieldedInstanceConfigArgs(
                    # The NVIDIA driver the image installs is unsigned: Secure Boot would
                    # refuse to load it, so GPU instances keep vTPM and integrity only.
                    enable_secure_boot=accelerators is None,
                    enable_vtpm=True,
                    enable_integrity_monitoring=True,
                ),
                metadata=metadata,
            ),
            opts=self._child(
                ignore_changes=[
                    *(f'gceSetup.metadata["{key}"]' for key in SERVER_INJECTED_METADATA),
                    *(f'labels["{key}"]' for key in SERVER_INJECTED_LABELS),
                    # The service tags the VM (deeplearning-vm, notebook-instance); we set none.
                    "gceSetup.tags",
                ],
            ),
        )
        self.url = self.instance.proxy_uri.apply(lambda uri: f"https://{uri}" if uri else "")
        return {"url": self.url}


def _split_image(reference: str) -> tuple[str, str | None]:
    """``repo[:tag]`` -> (repo, tag); a ':' before the last '/' is a registry port."""
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        return reference, None
    return name, tag
