"""Each rule runs once per job: counted over a whole program (stack reader, Args, platform,
resources) and the provider's check, for the dev stack's jobs from YAML and the same jobs
declared in Python."""

from __future__ import annotations

import collections
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.pulumi_mocks import PulumiRun, run_program, run_pulumi, stack_file_config
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider
from vertex_training.jobs.rules import hardware
from vertex_training.jobs.rules import job as job_rules

DIGEST = "us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64

RULES = {
    # rule: what it judges, each once
    "pool_findings": "pool",
    "check_machine_spec": "pool",
    "parameter_findings": "parameter",
    "study_findings": "study",
    "_tuning_job": "study",
    "_custom_job_spec": "job",
    "check_region": "job",
    "label_problems": "job",
    "_located": "job",
    "display_name_findings": "job",
}


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """How often each rule ran."""
    counts: collections.Counter[str] = collections.Counter()

    def counting(name: str, rule: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(rule)
        def run(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return rule(*args, **kwargs)

        return run

    for name in RULES:
        home = job_rules if hasattr(job_rules, name) else hardware
        rule = getattr(home, name)
        counted = counting(name, rule)
        monkeypatch.setattr(home, name, counted)
        if home is hardware:
            continue  # a hardware rule: counted where the catalog's job check calls it
        # The rules of a pool, study or parameter also run where each is built (imported).
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("vertex_training.") and getattr(module, name, None) is rule:
                monkeypatch.setattr(module, name, counted)
    yield counts


def _checked(run: PulumiRun) -> None:
    """The provider's check on every job the program registered, as the engine calls it."""
    for registration in run.registrations:
        kind = {
            "pulumi-python:dynamic/vertex:CustomJob": JobKind.CUSTOM_JOB,
            "pulumi-python:dynamic/vertex:HyperparameterTuningJob": (
                JobKind.HYPERPARAMETER_TUNING_JOB
            ),
        }.get(registration.type)
        if kind is not None:
            result = JobProvider(kind).check({}, dict(registration.inputs))
            assert not result.failures


def _expected(pools: int, parameters: int, studies: int, jobs: int) -> dict[str, int]:
    subjects = {"pool": pools, "parameter": parameters, "study": studies, "job": jobs}
    return {rule: subjects[what] for rule, what in RULES.items()}


# The dev stack: cassava-mwms (chief, workers), cassava-mwms-cpu (chief, workers) and
# horses-humans-tuning (a chief per trial; three parameters). The platform gives each job
# values its resources make (the image, the bucket, the service account): not known where
# the job is resolved, they are judged in check, once known, by the rules that read them
# (and only those: the run's and the located names').
DEV = {
    **_expected(pools=5, parameters=3, studies=1, jobs=3),
    "_custom_job_spec": 3 + 3,
    "_located": 3 + 3,
}


def test_each_rule_runs_once_for_the_jobs_of_a_stack_file(
    runs: collections.Counter[str],
) -> None:
    stack_file = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
    run = run_program("dev", stack_file_config(stack_file))
    _checked(run)
    # The labels rule also judges the stack's persistent resource's labels, once.
    assert dict(runs) == {**DEV, "label_problems": DEV["label_problems"] + 1}


def _cassava(pool: vt.WorkerPool, name: str) -> vt.CustomJobArgs:
    return vt.CustomJobArgs(
        display_name=name,
        chief=pool,
        workers=vt.WorkerPool(
            machine_type=pool.machine_type, accelerator=pool.accelerator, args=pool.args
        ),
        scheduling=vt.Scheduling(timeout_seconds=14400),
    )


def test_each_rule_runs_once_for_jobs_declared_in_python(
    runs: collections.Counter[str],
) -> None:
    def program() -> None:
        platform = vt.TrainingPlatform(
            "platform",
            vt.TrainingPlatformArgs(
                environment="dev", project="team-project", images={"trainer": DIGEST}
            ),
        )
        args = ["--workload", "cassava"]
        v100 = vt.Accelerator("NVIDIA_TESLA_V100", 1)
        gpu = vt.WorkerPool(machine_type="n1-standard-8", accelerator=v100, args=args)
        cpu = vt.WorkerPool(machine_type="n1-standard-8", args=args)
        vt.declare_job("cassava-mwms", _cassava(gpu, "multiworker-cassava").on(platform))
        vt.declare_job("cassava-mwms-cpu", _cassava(cpu, "multiworker-cassava-cpu").on(platform))
        study = vt.Study(
            parameters=[
                vt.DoubleParameter("learning_rate", 0.001, 1, "log"),
                vt.DoubleParameter("momentum", 0, 1),
                vt.DiscreteParameter("num_units", [64, 128, 512]),
            ]
        )
        trial = vt.TrialJob(
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                accelerator=vt.Accelerator("NVIDIA_TESLA_V100", 2),
                args=["--workload", "horses_or_humans"],
            )
        )
        tuning = vt.HyperparameterTuningJobArgs(
            platform=platform,
            display_name="horses-humans",
            trial=trial,
            study=study,
            max_trial_count=6,
            parallel_trial_count=2,
        )
        vt.declare_job("horses-humans-tuning", tuning)

    _checked(run_pulumi(program, stack="dev"))
    assert dict(runs) == DEV
