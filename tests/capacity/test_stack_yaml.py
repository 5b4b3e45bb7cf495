"""``persistentResources`` in a stack file, and jobs naming one by its stack-file name:
read into the same Args, judged on the stack's platform, every problem at its YAML key
before anything is registered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_program, stack_file_config
from vertex_training.findings import render
from vertex_training.stack.config import ConfigError, parse_stack_config

DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
RESOURCES = "vertex-training:persistentResources"
JOBS = "vertex-training:jobs"


def _dev(edit: Any) -> dict[str, Any]:
    flat: dict[str, Any] = dict(stack_file_config(DEV))
    values = {key: json.loads(flat[key]) for key in (RESOURCES, JOBS)}
    edit(values[RESOURCES], {job["name"]: job for job in values[JOBS]})
    return {**flat, **{key: json.dumps(value) for key, value in values.items()}}


def _problems(edit: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config("dev", _dev(edit))
    return [render(f, "stack") for f in caught.value.findings]


def test_the_dev_stack_places_its_cpu_job_on_its_resource() -> None:
    run = run_program("dev", stack_file_config(DEV))
    job = run.named("cassava-mwms-cpu")
    resource = run.named("warm-cpu-resource")
    assert job.inputs["spec"]["jobSpec"]["persistentResourceId"] == "warm-cpu"
    assert resource.urn in job.dependencies
    assert resource.inputs["name"] == "warm-cpu"
    assert resource.inputs["labels"]["team"] == "ml-platform"


def test_a_job_that_fits_no_pool_is_refused_at_its_key() -> None:
    def edit(_: Any, jobs: dict[str, Any]) -> None:
        jobs["cassava-mwms-cpu"]["workers"]["machineType"] = "n1-standard-16"

    (problem,) = _problems(edit)
    assert problem.startswith("vertex-training:jobs[1].workers: n1-standard-16, pd-ssd 100 GB ")
    assert "matches no pool of persistent resource 'warm-cpu' (pools[0]: n1-standard-8" in problem


def test_a_job_that_wants_too_many_replicas_is_refused_at_its_key() -> None:
    def edit(_: Any, jobs: dict[str, Any]) -> None:
        jobs["cassava-mwms-cpu"]["workers"]["replicaCount"] = 3

    (problem,) = _problems(edit)
    assert problem.startswith("vertex-training:jobs[1].workers.replicaCount: 3 replicas")
    assert "holds at most 2 (replicaCount 2)" in problem
    assert problem.endswith("; valid: at most 2 replicas, or a larger pool on the resource")


def test_a_pool_that_could_never_be_provisioned_is_refused_at_its_key() -> None:
    def edit(resources: list[Any], _: Any) -> None:
        resources[0]["pools"][0]["machineType"] = "n1-standrad-8"

    problems = _problems(edit)
    assert any(
        p.startswith("vertex-training:persistentResources[0].pools[0].machineType:")
        for p in problems
    ), problems
