"""A stack job's body is judged once: where the stack is read (YAML paths, every problem
before anything is registered), and its job resource takes that judgement instead of
running the rules again, wherever it finds there what a full judgement would find."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pulumi
import pytest
import yaml

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_program, run_pulumi, stack_file_config
from vertex_training.jobs import api
from vertex_training.jobs.declarations import JobDeclaration, read_job
from vertex_training.jobs.placeholders import (
    PLACEHOLDER_BUCKET,
    PLACEHOLDER_IMAGE,
    PLACEHOLDER_SERVICE_ACCOUNT,
)
from vertex_training.jobs.records import JobKind

STACKS = PROJECT_ROOT / "stacks"
JOB_TYPES = (
    "pulumi-python:dynamic/vertex:CustomJob",
    "pulumi-python:dynamic/vertex:HyperparameterTuningJob",
)
DIGEST = "r/trainer@sha256:" + "2" * 64


def _judgements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The display name of each body the rules judge from now on."""
    judged: list[str] = []
    rules = api.job_findings

    def counting(view: Any, **kwargs: Any) -> Any:
        judged.append(view.display_name)
        return rules(view, **kwargs)

    monkeypatch.setattr(api, "job_findings", counting)
    return judged


KEY = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"


@pytest.mark.parametrize(
    ("stack", "more"),
    [("dev", {}), ("local", {}), ("dev", {"vertex-training:kmsKeyName": KEY})],
    ids=["dev", "local", "dev-with-a-key"],
)
def test_a_stack_job_is_judged_once(
    stack: str, more: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    judged = _judgements(monkeypatch)
    run = run_program(stack, stack_file_config(STACKS / f"Pulumi.{stack}.yaml") | more)
    names = sorted(
        r.inputs["spec"]["displayName"] for r in run.registrations if r.type in JOB_TYPES
    )
    assert names, "the stack declares jobs"
    assert sorted(judged) == names


def test_a_python_job_is_judged_where_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    judged = _judgements(monkeypatch)

    def program() -> None:
        vt.CustomJob(
            "py-job",
            vt.CustomJobArgs(
                project="p",
                region="us-central1",
                chief=vt.WorkerPool(machine_type="n1-standard-4", image=DIGEST),
            ),
        )

    run_pulumi(program)
    assert judged == ["py-job"]


def test_a_python_job_is_refused_where_it_is_built() -> None:
    def program() -> None:
        vt.CustomJob(
            "py-job",
            vt.CustomJobArgs(
                project="p",
                region="us-east4",
                chief=vt.WorkerPool(
                    machine_type="n1-standard-4",
                    image=DIGEST,
                    accelerator=vt.Accelerator("NVIDIA_TESLA_V100", 1),
                ),
            ),
        )

    with pytest.raises(vt.InvalidArgumentsError, match="NVIDIA_TESLA_V100"):
        run_pulumi(program)


# ----------------------------------------------------------------- the same findings


def _dev_jobs() -> list[dict[str, Any]]:
    document = yaml.safe_load((STACKS / "Pulumi.dev.yaml").read_text())
    return list(document["config"]["vertex-training:jobs"])


CHIEF = {"machineType": "n1-standard-4"}
JOBS: list[dict[str, Any]] = [
    *_dev_jobs(),
    {"name": "plain", "chief": CHIEF},
    {"name": "own-image", "chief": {**CHIEF, "image": "r/trainer:latest"}},
    {"name": "own-output", "chief": CHIEF, "baseOutputDirectory": "gs://mine/out"},
    {"name": "own-account", "chief": CHIEF, "serviceAccount": "me@p.iam.gserviceaccount.com"},
    {"name": "own-network", "chief": CHIEF, "network": "projects/1/global/networks/n"},
    {"name": "no-network", "chief": CHIEF, "network": False},
    {
        "name": "own-board",
        "chief": CHIEF,
        "tensorboard": "projects/p/locations/us-central1/tensorboards/1",
    },
    {
        "name": "own-key",
        "chief": CHIEF,
        "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
    },
    {
        "name": "psc",
        "chief": CHIEF,
        "pscInterfaceConfig": {"networkAttachment": "projects/p/regions/r/networkAttachments/a"},
    },
    {
        "name": "nfs",
        "chief": {**CHIEF, "nfsMounts": [{"server": "1.2.3.4", "path": "/s", "mountPoint": "m"}]},
    },
    {"name": "extra", "chief": CHIEF, "extraFields": {"labels": {"from-extra": "x"}}},
    {"name": "bad-label", "chief": CHIEF, "labels": {"team": "Has Capitals"}},
    {
        "name": "spot-a100",
        "chief": {
            "machineType": "a2-highgpu-1g",
            "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1},
        },
        "scheduling": {"strategy": "SPOT"},
    },
]


def _declarations() -> list[JobDeclaration]:
    out = []
    for index, item in enumerate(JOBS):
        job, problems = read_job(item, f"jobs[{index}]")
        assert job is not None, problems
        out.append(job)
    return out


def _environments(unknown: Any, local: bool) -> list[dict[str, Any]]:
    """The platform as the stack builds it (first), then each of its values changed."""
    labels = {
        "app": "vertex-training",
        "stack": "dev",
        "environment": "dev",
        "managed-by": "pulumi",
    }
    base: dict[str, Any] = {
        "region": "us-central1",
        "local": local,
        "default_image": unknown,
        "bucket_url": unknown,
        "service_account": None if local else unknown,
        "network": None,
        "tensorboard": None if local else unknown,
        "kms_key_name": None,
        "labels": labels,
        "strict": False,
        "acknowledged": (),
    }
    key = "projects/p/locations/{}/keyRings/r/cryptoKeys/k"
    board = "projects/p/locations/{}/tensorboards/1"
    changes: list[dict[str, Any]] = [
        {},
        {"name": "another-name"},
        {"region": "us-east4"},
        {"region": "mars-central1"},
        {"local": not local},
        {"strict": True},
        {"acknowledged": ("accelerator-region:NVIDIA_TESLA_V100@europe-west4",)},
        {"default_image": DIGEST},
        {"default_image": "r/trainer:latest"},
        {"bucket_url": "gs://b"},
        {"bucket_url": "/a/directory"},
        {"bucket_url": None},
        {"service_account": None},
        {"service_account": unknown},
        {"service_account": "me@p.iam.gserviceaccount.com"},
        {"service_account": "not-an-email"},
        {"network": unknown},
        {"network": "projects/1/global/networks/n"},
        {"network": "not-a-network"},
        {"tensorboard": None},
        {"tensorboard": unknown},
        {"tensorboard": unknown, "bucket_url": None},
        {"tensorboard": board.format("us-central1")},
        {"tensorboard": board.format("europe-west4")},
        {"kms_key_name": unknown},
        {"kms_key_name": key.format("us-central1")},
        {"kms_key_name": key.format("europe-west4")},
        {"kms_key_name": "not-a-key"},
        {"labels": {}},
        {"labels": {"Bad": "x"}},
        {"labels": {"ok": "Not Valid"}},
        {"labels": {f"l{i}": "x" for i in range(70)}},
        {"labels": {**labels, "job": "overridden"}},
        {"labels": {"later": unknown}},
    ]
    return [{**base, **change} for change in changes]


@pytest.mark.parametrize(("region", "remote"), [("us-central1", True), (None, False)])
def test_a_judgement_taken_finds_what_a_full_one_does(region: str | None, remote: bool) -> None:
    taken: list[str] = []

    def check() -> None:
        unknown = pulumi.Output.from_input("not known yet")
        for job in _declarations():
            job.findings(region=region, remote=remote, strict=False)
            args = job.to_args()
            kind = job.job_kind
            for environment in _environments(unknown, local=not remote):
                env = dict(environment)
                context = api.JobContext(
                    kind=kind,
                    name=env.pop("name", job.name),
                    project="p",
                    **env,
                )
                try:
                    body = api.job_body(args, context)
                except vt.InvalidArgumentsError:
                    continue  # no image to default to
                full = api.body_findings(context, body)
                reused = api._judged_where_declared(args, context, body)
                if reused is not None:
                    taken.append(f"{job.name} {environment}")
                    assert reused == full, (job.name, environment)

    run_pulumi(check)
    # The platform the stack builds takes the judgement of every job.
    assert len(taken) >= len(JOBS)


def test_other_args_are_judged_again() -> None:
    (job,) = [d for d in _declarations() if d.name == "plain"]
    job.findings(region="us-central1", remote=True, strict=False)
    args = job.to_args()
    assert isinstance(args, api.CustomJobArgs)
    context = api.JobContext(
        kind=JobKind.CUSTOM_JOB,
        name="plain",
        region="us-central1",
        project="p",
        local=False,
        default_image=PLACEHOLDER_IMAGE,  # the reader's own stand-ins
        bucket_url=PLACEHOLDER_BUCKET,
        service_account=PLACEHOLDER_SERVICE_ACCOUNT,
        labels={"stack": "placeholder"},
    )
    body = api.job_body(args, context)
    assert api._judged_where_declared(args, context, body) is not None
    # Another job (replace builds new Args; a copy with a field changed keeps none of it).
    changed = dataclasses.replace(args, display_name="other")
    assert api._judged_where_declared(changed, context, api.job_body(changed, context)) is None
    edited = copy.copy(args)
    object.__setattr__(edited, "chief", vt.WorkerPool(machine_type="n1-standard-8"))
    assert api._judged_where_declared(edited, context, api.job_body(edited, context)) is None
