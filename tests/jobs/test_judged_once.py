"""A job is judged once, where its name and platform are first known: a stack's job by the
stack reader, which shows its findings at the stack's keys; its resource, on the same
facts, shows none of them again; on other facts it is judged there."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pulumi
import pytest

import vertex_training as vt
from tests.pulumi_mocks import run_program, run_pulumi, stack_file_config
from vertex_training._checks import Judgement
from vertex_training.jobs.api import facts_of, resolve

DIGEST = "us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64
B200_HERE = "accelerator-region:NVIDIA_B200@europe-west4"


def _warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None: warned.append(message))
    return warned


def test_a_stack_jobs_acknowledged_check_is_shown_once_at_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_file = tmp_path / "Pulumi.scratch.yaml"
    stack_file.write_text(
        "config:\n"
        "  gcp:project: scratch-project\n"
        "  vertex-training:environment: dev\n"
        "  vertex-training:region: europe-west4\n"
        "  vertex-training:workbenchEnabled: false\n"
        f"  vertex-training:acknowledgedHardwareChecks: [{B200_HERE}]\n"
        "  vertex-training:jobs:\n"
        "    - name: b200\n"
        "      chief: {machineType: a4-highgpu-8g, accelerator: {type: NVIDIA_B200, count: 8},"
        " args: [--workload, cassava]}\n"
    )
    warned = _warnings(monkeypatch)
    run_program("scratch", stack_file_config(stack_file))
    [warning] = [w for w in warned if B200_HERE in w]
    assert warning.startswith("vertex-training:jobs[0].chief.accelerator.type: NVIDIA_B200 is")
    assert warning.endswith(
        f"(check {B200_HERE}) [acknowledged hardware check: a warning, not refused] "
        "(Vertex field jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType)"
    )


def _b200(**fields: object) -> vt.CustomJobArgs:
    pool = vt.WorkerPool(
        machine_type="a4-highgpu-8g", accelerator=vt.Accelerator("NVIDIA_B200", 8), image=DIGEST
    )
    return vt.CustomJobArgs(project="p", chief=pool, **fields)  # type: ignore[arg-type]


def test_a_python_jobs_acknowledged_check_is_shown_once_by_its_resource(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warned = _warnings(monkeypatch)
    args = _b200(region="europe-west4", acknowledged_hardware_checks=[B200_HERE])
    run_pulumi(lambda: vt.declare_job("b200", args), stack="dev")
    [warning] = [w for w in warned if B200_HERE in w]
    assert warning.startswith("CustomJobArgs.chief.accelerator.type: NVIDIA_B200 is not offered")


def test_a_judgement_holds_on_the_same_facts_only() -> None:
    args = _b200(region="europe-west4")
    refused = resolve(args, "b200")
    assert [f.check for f in refused.findings] == [B200_HERE]
    facts = facts_of(refused.platform)
    judged = dataclasses.replace(args, judged=Judgement(("b200", facts)))
    assert resolve(judged, "b200").findings == ()  # shown where it was judged
    assert (
        dataclasses.replace(judged, labels={"team": "a"}).judged == judged.judged
    )  # copies keep it
    assert resolve(judged, "other-name").findings == refused.findings
    elsewhere = dataclasses.replace(judged, region="us-central1")
    assert resolve(elsewhere, "b200").findings == ()  # offered there: judged again, and fine
    assert [
        f.check for f in resolve(dataclasses.replace(judged, region="asia-east1"), "b200").findings
    ]
