"""Workbench: idle shutdown, terminal, shielded VM, the Workbench account, no perma-diff."""

from __future__ import annotations

import dataclasses

import pytest

from tests.pulumi_mocks import PulumiRun, Registration, run_pulumi
from vertex_training.platform.workbench import (
    SERVER_INJECTED_LABELS,
    SERVER_INJECTED_METADATA,
    TrainingWorkbench,
    TrainingWorkbenchArgs,
)

INSTANCE = "gcp:workbench/instance:Instance"
ARGS = TrainingWorkbenchArgs(
    project="p-1",
    zone="us-central1-b",
    instance_name="vertex-workbench-dev",
    service_account_email="wb@p-1.iam.gserviceaccount.com",
    machine_type="n1-standard-8",
    labels={"app": "vertex-training"},
)


def build(args: TrainingWorkbenchArgs = ARGS) -> PulumiRun:
    return run_pulumi(lambda: TrainingWorkbench("workbench", args).url)


def instance(args: TrainingWorkbenchArgs = ARGS) -> Registration:
    return build(args).one(INSTANCE)


def test_codelab_settings() -> None:
    found = instance()
    setup = found.inputs["gceSetup"]
    assert found.name == "workbench-instance"
    assert found.inputs["location"] == "us-central1-b"
    assert found.inputs["name"] == "vertex-workbench-dev"
    assert setup["metadata"]["idle-timeout-seconds"] == "3600"
    assert setup["metadata"]["notebook-disable-terminal"] == "false"
    assert setup["machineType"] == "n1-standard-8"
    assert setup["serviceAccounts"] == [{"email": "wb@p-1.iam.gserviceaccount.com"}]
    assert setup["bootDisk"] == {"diskSizeGb": "150", "diskType": "PD_BALANCED"}
    assert setup["disablePublicIp"] is False
    assert "acceleratorConfigs" not in setup
    assert "containerImage" not in setup


def test_shielded_vm() -> None:
    assert instance().inputs["gceSetup"]["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }


def test_gpu_installs_the_driver_and_drops_secure_boot() -> None:
    setup = instance(dataclasses.replace(ARGS, gpu_type="NVIDIA_TESLA_T4", gpu_count=2)).inputs[
        "gceSetup"
    ]
    assert setup["acceleratorConfigs"] == [{"type": "NVIDIA_TESLA_T4", "coreCount": "2"}]
    assert setup["metadata"]["install-nvidia-driver"] == "True"
    assert setup["shieldedInstanceConfig"]["enableSecureBoot"] is False
    assert setup["shieldedInstanceConfig"]["enableVtpm"] is True


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "us-docker.pkg.dev/p/r/nb:2.17",
            {"repository": "us-docker.pkg.dev/p/r/nb", "tag": "2.17"},
        ),
        ("localhost:5000/nb", {"repository": "localhost:5000/nb"}),
    ],
)
def test_custom_container(reference: str, expected: dict[str, str]) -> None:
    setup = instance(dataclasses.replace(ARGS, container_image=reference)).inputs["gceSetup"]
    assert setup["containerImage"] == expected


def test_prod_has_no_public_ip_and_a_custom_idle_timeout() -> None:
    setup = instance(dataclasses.replace(ARGS, public_ip=False, idle_timeout_minutes=30)).inputs[
        "gceSetup"
    ]
    assert setup["disablePublicIp"] is True
    assert setup["metadata"]["idle-timeout-seconds"] == "1800"


def test_server_injected_metadata_is_ignored_so_a_second_up_has_no_diff() -> None:
    found = instance()
    ignored = set(found.ignore_changes)
    for key in ("proxy-mode", "proxy-url", "notebooks-api", "shutdown-script", "framework"):
        assert f'gceSetup.metadata["{key}"]' in ignored
    assert {f'gceSetup.metadata["{k}"]' for k in SERVER_INJECTED_METADATA} <= ignored
    assert {f'labels["{k}"]' for k in SERVER_INJECTED_LABELS} <= ignored
    assert "gceSetup.tags" in ignored
    # What we set ourselves must still show a diff when we change it.
    for ours in found.inputs["gceSetup"]["metadata"]:
        assert f'gceSetup.metadata["{ours}"]' not in ignored


def test_url_points_at_the_proxy() -> None:
    urls: list[str] = []
    run_pulumi(lambda: TrainingWorkbench("workbench", ARGS).url.apply(urls.append))
    assert urls == ["https://vertex-workbench-dev-dot-us-central1.notebooks.example"]


def test_instance_is_a_child_of_the_component() -> None:
    run = build()
    component = run.one("vertex-training:platform:TrainingWorkbench")
    assert run.children_of(component) == [run.one(INSTANCE)]


def test_a_platform_hands_its_workbench_machine_to_the_instance_and_prices_it() -> None:
    import vertex_training as vt

    platforms: list[vt.TrainingPlatform] = []

    def program() -> None:
        workbench = vt.Workbench(
            machine_type="n1-standard-8",
            accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 1),
            disk_size_gb=200,
            idle_timeout_minutes=30,
        )
        args = vt.TrainingPlatformArgs(
            environment="dev", project="team-project-1", workbench=workbench
        )
        platforms.append(vt.TrainingPlatform("platform", args))

    setup = run_pulumi(program, stack="dev").one(INSTANCE).inputs["gceSetup"]
    assert setup["machineType"] == "n1-standard-8"
    assert setup["acceleratorConfigs"] == [{"type": "NVIDIA_TESLA_T4", "coreCount": "1"}]
    assert setup["bootDisk"]["diskSizeGb"] == "200"
    assert setup["metadata"]["idle-timeout-seconds"] == "1800"
    estimate = platforms[0].cost_estimate
    assert estimate is not None and estimate.usd_per_hour > 0
