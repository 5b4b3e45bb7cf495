"""Catalog rows checked against Google's published tables (issue 22, items 11-13): what was
wrongly refused, what was wrongly accepted, and what strict mode refuses."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from vertex_training.findings import Finding, render
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.jobs.rules.hardware import (
    acknowledge,
    check_machine_spec,
    check_region,
    check_zone,
)

SPEC = "jobSpec.workerPoolSpecs[0].machineSpec"
POOL = [(SPEC, "NVIDIA_TESLA_T4")]


_spec = partial(check_machine_spec, SPEC)


def _region(region: str, accelerator: str, *, strict: bool = False) -> list[Finding]:
    return check_region(region, [(SPEC, accelerator)], strict=strict)


def _errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


# --- item 11: wrongly refused ----------------------------------------------------------


def test_v5e_2x4_is_a_multi_host_slice_of_4_chip_hosts() -> None:
    # tpu/docs/v5e: 2x4 is 8 chips; GKE's plan-tpus: ct5lp-hightpu-4t hosts it as 2 VMs.
    assert _spec("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "2x4") == []
    assert _spec("ct5lp-hightpu-8t", "TPU_V5_LITEPOD", 8, "2x4") == []


def test_a3_mega_in_us_central1_b_for_workbench() -> None:
    assert (
        check_zone(path="zone", zone="us-central1-b", accelerator_type="NVIDIA_H100_MEGA_80GB")
        == []
    )


@pytest.mark.parametrize("region", ["europe-west4", "australia-southeast1"])
def test_p100_regions(region: str) -> None:
    assert _region(region, "NVIDIA_TESLA_P100", strict=True) == []


def test_strict_does_not_refuse_a_pair_missing_from_a_partial_list() -> None:
    # T4's region list is partial: a known GPU in a known region it does not list is
    # "cannot tell", and strict mode refuses only what is known wrong.
    assert not catalog().accelerators["NVIDIA_TESLA_T4"].regions_complete
    (warning,) = _region("europe-west6", "NVIDIA_TESLA_T4", strict=True)
    assert warning.severity == "warning"
    (warning,) = _region("europe-west2", "NVIDIA_B200", strict=True)
    assert warning.severity == "warning"


# --- item 12: wrongly accepted ---------------------------------------------------------


@pytest.mark.parametrize("target", ["training", "workbench"])
def test_k80_is_retired_and_refused(target: str) -> None:
    (error,) = _spec("n1-standard-8", "NVIDIA_TESLA_K80", 1, target=target)
    assert error.severity == "error"
    assert "end of support" in error.message and "NVIDIA_TESLA_T4" in error.message


@pytest.mark.parametrize(
    ("accelerator", "region"),
    [
        ("NVIDIA_B200", "europe-west4"),
        ("NVIDIA_H100_80GB", "us-south1"),
        ("NVIDIA_H200_141GB", "asia-southeast1"),
    ],
)
def test_known_absent_pairs_are_refused_even_from_partial_lists(
    accelerator: str, region: str
) -> None:
    (error,) = _region(region, accelerator)
    assert error.severity == "error"
    assert f"{accelerator} is not offered in region {region}" in error.message


@pytest.mark.parametrize("accelerator", ["NVIDIA_L4", "NVIDIA_TESLA_P4"])
def test_l4_and_p4_are_not_in_us_central1_f(accelerator: str) -> None:
    (error,) = check_zone(path="zone", zone="us-central1-f", accelerator_type=accelerator)
    assert error.severity == "error"


@pytest.mark.parametrize(
    "machine", ["n2d-standard-6", "c2d-highcpu-3", "c3-standard-8", "n4-standard-8"]
)
def test_a_gpu_on_a_family_it_does_not_attach_to_is_refused(machine: str) -> None:
    findings = _spec(machine, "NVIDIA_TESLA_T4", 1)
    # (c3 and n4 are no Vertex training family either: that is a second error of its own.)
    [error] = [e for e in _errors(findings) if e.path == f"{SPEC}.acceleratorType"]
    assert "NVIDIA_TESLA_T4 attaches only to n1" in error.message


@pytest.mark.parametrize("machine", ["a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g"])
def test_small_a3_high_is_spot_or_flex_start_only(machine: str) -> None:
    count = int(machine[-2])
    for strategy in (None, "STANDARD", "ON_DEMAND"):
        (error,) = _spec(machine, "NVIDIA_H100_80GB", count, scheduling_strategy=strategy)
        assert error.severity == "error"
        assert error.path == "jobSpec.scheduling.strategy"
        assert "SPOT or FLEX_START" in error.message
    for strategy in ("SPOT", "FLEX_START"):
        assert _spec(machine, "NVIDIA_H100_80GB", count, scheduling_strategy=strategy) == []
    assert _spec("a3-highgpu-8g", "NVIDIA_H100_80GB", 8, scheduling_strategy="STANDARD") == []


# --- item 13: what strict refuses; lists marked explicitly; one check overridden -----


def test_every_list_says_whether_it_is_complete() -> None:
    import json

    from vertex_training.jobs.rules.catalog import CATALOG_PATH

    data = json.loads(CATALOG_PATH.read_text())
    for name, item in data["accelerators"]["items"].items():
        assert isinstance(item.get("regions_complete"), bool), name
    for section in ("accelerators", "families", "regions"):
        assert isinstance(data[f"{section}_complete"], bool), section
    for name, family in data["families"].items():
        assert isinstance(family["complete"], bool), name
        for machine, spec in family.get("machines", {}).items():
            if spec.get("topologies"):
                assert isinstance(spec.get("topologies_complete"), bool), machine


def test_strict_refuses_names_the_catalog_has_never_heard_of_and_nothing_more() -> None:
    # Machines judge the same strict or not (tests/jobs/rules/test_job.py holds strict jobs
    # to it): an unheard-of family is an error, a size missing from a partial one a warning.
    assert _spec("c3-standard-8")[0].severity == "error"
    assert _region("mars-north1", "NVIDIA_TESLA_T4", strict=True)[0].severity == "error"
    (warning,) = _spec("c2d-standard-3")
    assert warning.severity == "warning"


def test_every_finding_names_its_check_and_an_acknowledged_one_only_warns() -> None:
    (error,) = _region("europe-west4", "NVIDIA_B200")
    assert error.check == "accelerator-region:NVIDIA_B200@europe-west4"
    assert render(error, "message").endswith(f"(check {error.check})")
    (kept,) = acknowledge([error], ["accelerator-region:NVIDIA_B200@europe-west4"])
    assert kept.severity == "warning"
    assert kept.acknowledged and "acknowledged" in render(kept, "message")
    # Another check id leaves it an error.
    assert acknowledge([error], ["accelerator-region:NVIDIA_B200@us-east4"]) == [error]


B200_HERE = "accelerator-region:NVIDIA_B200@europe-west4"


def _b200_stack(tmp_path: object, *, stack: str = "", job: str = "", pool: str = "") -> Path:
    """A dev stack in europe-west4 (no B200 there, says the catalog) whose one job runs
    B200s; ``stack``, ``job`` and ``pool``: YAML added at each level."""
    stack_file = Path(str(tmp_path)) / "Pulumi.scratch.yaml"
    stack_file.write_text(
        "config:\n" + stack + "  gcp:project: scratch-project\n"
        "  vertex-training:environment: dev\n"
        "  vertex-training:region: europe-west4\n"
        "  vertex-training:workbenchEnabled: false\n"
        "  vertex-training:jobs:\n"
        "    - name: b200\n"
        + job
        + "      chief: {machineType: a4-highgpu-8g, accelerator: {type: NVIDIA_B200,"
        " count: 8}, args: [--workload, cassava]" + pool + "}\n"
        "      scheduling: {timeoutSeconds: 3600}\n"
    )
    return stack_file


def test_a_stack_acknowledges_one_check_end_to_end(tmp_path: object) -> None:
    from vertex_training.stack.config import ConfigError, load_stack_config

    with pytest.raises(ConfigError, match=f"check {B200_HERE}"):
        load_stack_config(_b200_stack(tmp_path))
    acknowledged = f"  vertex-training:acknowledgedHardwareChecks:\n    - {B200_HERE}\n"
    config = load_stack_config(_b200_stack(tmp_path, stack=acknowledged))
    assert any(warning.acknowledged for warning in config.warnings)


@pytest.mark.parametrize("where", ["job", "pool"])
def test_a_stack_job_acknowledges_a_check_in_the_job_or_its_pool(
    tmp_path: object, where: str
) -> None:
    # The job entry is the Args in camelCase: the job's and the pool's
    # acknowledged_hardware_checks are keys there, and the stack reader honours them.
    from vertex_training.stack.config import load_stack_config

    acknowledged = f"acknowledgedHardwareChecks: [{B200_HERE}]"
    if where == "job":
        stack_file = _b200_stack(tmp_path, job=f"      {acknowledged}\n")
    else:
        stack_file = _b200_stack(tmp_path, pool=f", {acknowledged}")
    warnings = load_stack_config(stack_file).warnings
    [warning] = [w for w in warnings if B200_HERE in render(w, "message")]
    assert warning.caller.endswith("jobs[0].chief.accelerator.type")
    assert "[acknowledged hardware check" in render(warning, "message")
