"""A body changed after the program judged it, through the real engine: a ``transforms``
resource option that gives a pool a GPU count no machine takes fails ``preview`` with the
rule's own message (the provider's ``check`` judges inputs whose digest is not the one the
program judged), and nothing is created."""

from __future__ import annotations

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject
from tests.engine.local_store import stored_jobs

pytestmark = pytest.mark.slow

PROGRAM = '''"""One local job whose chief a transform gives 3 x T4 on n1-standard-16."""

from pathlib import Path

import pulumi

import vertex_training as vt

HERE = Path(__file__).resolve().parent


def three_gpus(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    if "spec" not in args.props:
        return None
    props = dict(args.props)
    spec = dict(props["spec"])
    job = dict(spec["jobSpec"])
    pools = [dict(pool) for pool in job["workerPoolSpecs"]]
    pools[0]["machineSpec"] = {**pools[0]["machineSpec"], "acceleratorCount": 3}
    props["spec"] = {**spec, "jobSpec": {**job, "workerPoolSpecs": pools}}
    return pulumi.ResourceTransformResult(props, args.opts)


platform = vt.TrainingPlatform(
    "laptop", vt.TrainingPlatformArgs(environment="local", local_root=HERE / ".local-vertex")
)
vt.CustomJob(
    "transformed",
    vt.CustomJobArgs(
        platform=platform,
        chief=vt.WorkerPool(
            machine_type="n1-standard-16",
            accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 2),
            image="local/trainer:latest",
            command=["true"],
        ),
        wait=False,
    ),
    pulumi.ResourceOptions(transforms=[three_gpus]),
)
'''

SETTINGS = """name: transformed-job
description: A job a resource transform changes after the program judged it
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: venv
"""


@pytest.fixture
def project(new_project: ProjectMaker) -> PulumiProject:
    return new_project("transform", {}, program={"Pulumi.yaml": SETTINGS, "__main__.py": PROGRAM})


def test_a_transform_that_breaks_a_pool_fails_preview_with_the_rules_message(
    project: PulumiProject,
) -> None:
    output = project.refused("preview")
    assert (
        "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 on "
        "n1-standard-16 is not valid; valid counts: 1, 2, 4" in output
    ), output[-3000:]
    resources = project.export()["deployment"].get("resources") or []
    assert [r["type"] for r in resources if ":dynamic/" in r["type"]] == []
    assert stored_jobs(project.dir / ".local-vertex") == {}
