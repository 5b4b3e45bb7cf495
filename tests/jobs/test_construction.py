"""Args refuse where they are built what is wrong whatever job, platform and region they
meet (issue 21 item 4), judged by the job rules themselves on the fragment, and name the
caller's own field; what depends on the region or the job waits for the job."""

from __future__ import annotations

import logging

import pulumi
import pytest

import vertex_training as vt
from tests.jobs.facts import platform_facts
from tests.pulumi_mocks import run_pulumi
from vertex_training.findings import render
from vertex_training.jobs.api import resolve
from vertex_training.jobs.body import to_body
from vertex_training.jobs.declarations import read_job
from vertex_training.jobs.rules.catalog import catalog

FACTS = platform_facts()
DIGEST = "us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64


def refused(build: object) -> str:
    assert callable(build)
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        build()
    assert isinstance(caught.value, pulumi.RunError)  # shown without a traceback
    return str(caught.value)


def on_a_job(pool: vt.WorkerPool) -> None:
    """``pool`` as the chief of a job declared in a program (where it meets its region)."""
    args = vt.CustomJobArgs(
        project="p", region="us-central1", chief=pool, base_output_directory="gs://b/out"
    )
    run_pulumi(lambda: vt.CustomJob("j", args), stack="dev")


def test_gpus_that_fit_no_machine_fail_where_the_pool_is_built() -> None:
    # 3 x T4 on n1-standard-16 is valid in no job and no region: refused where the pool is
    # built, before any resource exists (issue 33), as a value naming the caller's field.
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.WorkerPool(
            machine_type="n1-standard-16", accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3)
        )
    assert str(caught.value) == (
        "WorkerPool.accelerator.count: 3 x NVIDIA_TESLA_T4 on n1-standard-16 is not valid; "
        "valid counts: 1, 2, 4 (check accelerator-count:NVIDIA_TESLA_T4x3@n1-standard-16) "
        "(Vertex field machineSpec.acceleratorCount); where the hardware catalog (as of "
        f"{catalog().as_of}) is out of date: WorkerPool(..., acknowledged_hardware_checks="
        "['accelerator-count:NVIDIA_TESLA_T4x3@n1-standard-16']) only warns"
    )
    [finding] = caught.value.findings
    assert (finding.path, finding.caller, finding.severity) == (
        "machineSpec.acceleratorCount",
        "accelerator.count",
        "error",
    )


T4_X3 = "accelerator-count:NVIDIA_TESLA_T4x3@n1-standard-16"


def t4_x3(**fields: object) -> vt.WorkerPool:
    return vt.WorkerPool(
        machine_type="n1-standard-16",
        accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3),
        image=DIGEST,
        **fields,  # type: ignore[arg-type]
    )


def test_a_catalog_error_the_pool_acknowledges_only_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The fix the message names, taken literally: the pool is built, its body is the
    # Vertex body alone, and the job that runs it warns (the catalog may be out of date)
    # instead of refusing it.
    pool = t4_x3(acknowledged_hardware_checks=[T4_X3])
    assert "acknowledgedHardwareChecks" not in str(to_body(pool))
    assert to_body(pool)["machineSpec"]["acceleratorCount"] == 3
    args = vt.CustomJobArgs(
        project="p", region="us-central1", chief=pool, base_output_directory="gs://b/out"
    )
    with caplog.at_level(logging.WARNING):
        run = run_pulumi(lambda: vt.CustomJob("t4", args), stack="dev")
    spec = run.named("t4").inputs["spec"]["jobSpec"]["workerPoolSpecs"][0]
    assert spec["machineSpec"]["acceleratorCount"] == 3
    assert "CustomJobArgs.chief.accelerator.count: 3 x NVIDIA_TESLA_T4" in caplog.text
    assert "acknowledged" in caplog.text and T4_X3 in caplog.text


def test_a_pool_acknowledges_only_the_checks_it_names() -> None:
    message = refused(lambda: on_a_job(t4_x3(acknowledged_hardware_checks=[T4_X3 + "-not"])))
    assert f"(check {T4_X3})" in message
    # What is wrong whatever the catalog says stays refused beside an acknowledged check.
    message = refused(lambda: t4_x3(acknowledged_hardware_checks=[T4_X3], replica_count=0))
    assert message.startswith("WorkerPool.replica_count: must be at least 1")
    assert "accelerator" not in message


def test_a_pool_reports_every_problem_it_has_in_one_message() -> None:
    message = refused(
        lambda: vt.WorkerPool(
            machine_type="n1-standard-8",
            accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3),
            replica_count=0,
            env={"1BAD": "x"},
            boot_disk_size_gb=10,
        )
    )
    lines = message.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == [
        "WorkerPool.replica_count",
        "WorkerPool.env",
        "WorkerPool.boot_disk_size_gb",
        "WorkerPool.accelerator.count",
    ]


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: vt.Study(parameters=[]), "Study.parameters: needs at least one parameter"),
        (
            lambda: vt.DoubleParameter("lr", 0.0, 1.0, "log"),
            "DoubleParameter.scale: a log scale needs minValue > 0, got 0.0",
        ),
        (
            lambda: vt.IntegerParameter("layers", 4, 2),
            "IntegerParameter.min_value: 4 must be less than maxValue 2",
        ),
        (
            lambda: vt.DiscreteParameter("batch", [64, 32]),
            "DiscreteParameter.values: must be strictly increasing, got [64.0, 32.0]",
        ),
        (
            lambda: vt.CategoricalParameter("opt", ["sgd", "sgd"]),
            "CategoricalParameter.values: categories must be unique",
        ),
        (
            lambda: vt.DoubleParameter("learning rate", 0.1, 1.0),
            "DoubleParameter.parameter_id: 'learning rate' has whitespace",
        ),
        (
            lambda: vt.Study(
                parameters=[vt.DoubleParameter("lr", 0.1, 1.0), vt.IntegerParameter("lr", 1, 2)]
            ),
            "Study.parameters[1].parameter_id: 'lr' is used twice",
        ),
        (
            lambda: vt.Study(parameters=[vt.DoubleParameter("lr", 0.1, 1.0)], algorithm="grid"),
            "Study.parameters[0]: GRID_SEARCH cannot enumerate the double parameter 'lr'",
        ),
        (
            lambda: vt.CustomJobArgs(
                chief=vt.WorkerPool(machine_type="n1-standard-4"), wait_timeout_seconds=0
            ),
            "CustomJobArgs.wait_timeout_seconds: must be a positive number of seconds, got 0",
        ),
    ],
)
def test_studies_and_parameters_wrong_for_every_job_fail_where_they_are_built(
    build: object, expected: str
) -> None:
    assert refused(build).startswith(expected)


def test_what_the_job_or_the_region_decides_waits_for_the_job() -> None:
    # No image yet (the platform's), a machine sold only as Spot or Flex-start (the job's
    # strategy decides), a GPU that only some regions have: all fine where built.
    vt.WorkerPool(machine_type="n1-standard-4", args=["--workload", "cassava"])
    vt.WorkerPool(machine_type="a3-highgpu-1g", accelerator=vt.Accelerator("NVIDIA_H100_80GB", 1))
    b200 = vt.WorkerPool(
        machine_type="a4-highgpu-8g", accelerator=vt.Accelerator("NVIDIA_B200", 8), image=DIGEST
    )
    # A chief of 2 replicas is a good worker pool: its place is the job's.
    two = vt.WorkerPool(machine_type="n1-standard-4", replica_count=2, image=DIGEST)
    args = vt.CustomJobArgs(
        project="p", region="europe-west4", chief=b200, base_output_directory="gs://b/out"
    )
    with pytest.raises(
        vt.InvalidArgumentsError, match="accelerator-region:NVIDIA_B200@europe-west4"
    ):
        run_pulumi(lambda: vt.CustomJob("b200", args), stack="dev")
    args = vt.CustomJobArgs(
        project="p", region="us-central1", chief=two, base_output_directory="gs://b/out"
    )
    with pytest.raises(vt.InvalidArgumentsError, match=r"CustomJobArgs\.chief\.replica_count"):
        run_pulumi(lambda: vt.CustomJob("two", args), stack="dev")


def test_values_not_known_yet_are_judged_later() -> None:
    # 3 x T4 on n1-standard-16 is refused where the pool is built (the first test); a count
    # that is an Output is not known there, so the pool is built and keeps it for the job.
    pools: list[vt.WorkerPool] = []

    def program() -> None:
        count = pulumi.Output.from_input(3)
        pools.append(
            vt.WorkerPool(
                machine_type="n1-standard-16",
                accelerator=vt.Accelerator("NVIDIA_TESLA_T4", count),
            )
        )

    run_pulumi(program)

    (pool,) = pools
    assert pool.accelerator is not None
    assert isinstance(pool.accelerator.count, pulumi.Output)


def test_the_yaml_route_refuses_a_pool_where_it_is_built_at_its_key() -> None:
    # The pool is refused where the reader builds it: its problem, a value, at the YAML key
    # derived from its API path.
    job, problems = read_job(
        {
            "name": "x",
            "chief": {
                "machineType": "n1-standard-16",
                "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 3},
            },
        },
        "jobs[0]",
    )
    assert job is None
    [problem] = problems
    assert problem.caller == "jobs[0].chief.accelerator.count"
    assert problem.message.startswith("3 x NVIDIA_TESLA_T4 on n1-standard-16 is not valid")
    assert render(problem, "stack").endswith(
        "(Vertex field jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount)"
    )


def test_the_yaml_route_judges_the_job_on_its_platform() -> None:
    job, problems = read_job(
        {
            "name": "x",
            "chief": {"machineType": "n1-standard-4"},
            "scheduling": {"maxWaitSeconds": 60},
        },
        "jobs[0]",
    )
    assert problems == [] and job is not None
    findings = resolve(job.args, job.name, FACTS).findings
    assert [f.path for f in findings] == ["jobSpec.scheduling.maxWaitDuration"]


def test_a_stack_job_declared_off_its_platform_says_how_to_put_it_there() -> None:
    # The stack reader judged the job on the facts of the stack's platform; only
    # args.on(platform) gives it that platform's image, bucket and service account.
    job, problems = read_job({"name": "x", "chief": {"machineType": "n1-standard-4"}}, "jobs[0]")
    assert problems == [] and job is not None
    on_facts = job.args.on(FACTS)
    assert resolve(job.args, job.name, FACTS).findings == ()
    message = refused(lambda: run_pulumi(lambda: vt.declare_job("x", on_facts)))
    assert message.endswith("valid: vt.declare_job(name, args.on(platform))")


def test_a_catalog_error_of_the_job_says_how_the_job_acknowledges_it() -> None:
    b200 = vt.WorkerPool(
        machine_type="a4-highgpu-8g", accelerator=vt.Accelerator("NVIDIA_B200", 8), image=DIGEST
    )
    check = "accelerator-region:NVIDIA_B200@europe-west4"

    def job(*acknowledged: str) -> None:
        args = vt.CustomJobArgs(
            project="p",
            region="europe-west4",
            chief=b200,
            base_output_directory="gs://b/out",
            acknowledged_hardware_checks=list(acknowledged),
        )
        vt.CustomJob("b200", args)

    message = refused(lambda: run_pulumi(job, stack="dev"))
    assert message.endswith(
        f"CustomJobArgs(..., acknowledged_hardware_checks=[{check!r}]) only warns"
    )
    run_pulumi(lambda: job(check), stack="dev")
