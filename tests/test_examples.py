"""Every program under ``examples/`` evaluated under mocks as its own Pulumi project; the
local study also runs for real, on the local backend, through the job provider."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import PROJECT_ROOT
from tests.pulumi_mocks import PulumiRun, run_pulumi, stack_file_config
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider

EXAMPLES = PROJECT_ROOT / "examples"
# The Python programs; the YAML, TypeScript and Go ones run in tests/engine/test_languages.py.
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "__main__.py").is_file())
TUNING = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"


def evaluate(name: str) -> PulumiRun:
    directory = EXAMPLES / name
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())["name"]
    stacks = sorted(directory.glob("Pulumi.*.yaml"))
    config = stack_file_config(stacks[0]) if stacks else {}
    return run_pulumi(
        lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
        stack=stacks[0].name.split(".")[1] if stacks else "local",
        config=config,
        project=project,
    )


def test_there_are_the_three_examples() -> None:
    assert NAMES == ["byo-gpu-job", "local-study", "tuning-study"]
    for name in NAMES:
        directory = EXAMPLES / name
        assert (directory / "README.md").is_file()
        # Each depends on this package by path, like a platform team's program would.
        assert "../.." in (directory / "requirements.txt").read_text().split()


@pytest.mark.parametrize("name", NAMES)
def test_each_example_evaluates_and_its_jobs_are_valid_bodies(name: str) -> None:
    run = evaluate(name)
    jobs = [r for r in run.registrations if ":dynamic/vertex:" in r.type]
    assert jobs, name
    for job in jobs:
        kind = JobKind.HYPERPARAMETER_TUNING_JOB if job.type == TUNING else JobKind.CUSTOM_JOB
        parse_body(kind, dict(job.inputs["spec"]))


def test_bring_your_own_creates_nothing_but_the_job() -> None:
    run = evaluate("byo-gpu-job")
    assert [r.type for r in run.registrations if r.custom] == [
        "pulumi-python:dynamic/vertex:CustomJob"
    ]
    job = run.named("resnet").inputs["spec"]["jobSpec"]
    assert [p["replicaCount"] for p in job["workerPoolSpecs"]] == ["1", "3"]
    assert job["baseOutputDirectory"]["outputUriPrefix"] == "gs://team-ml-training/jobs/resnet"


@pytest.fixture(scope="module")
def tuning_study() -> PulumiRun:
    return evaluate("tuning-study")


def test_the_tuning_example_has_spot_trials_and_a_conditional_parameter(
    tuning_study: PulumiRun,
) -> None:
    body = tuning_study.named("horses").inputs["spec"]
    assert body["trialJobSpec"]["scheduling"]["strategy"] == "SPOT"
    study = body["studySpec"]
    assert study["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    assert "algorithm" not in study  # unset is Vertex's Bayesian search
    assert study["medianAutomatedStoppingSpec"] == {}
    assert study["parameters"][1]["conditionalParameterSpecs"] == [
        {
            "parentCategoricalValues": {"values": ["sgd"]},
            "parameterSpec": {
                "parameterId": "momentum",
                "doubleValueSpec": {"minValue": 0, "maxValue": 1},
                # no scale declared: none sent (the service's default)
            },
        }
    ]
    assert (body["maxTrialCount"], body["parallelTrialCount"]) == (12, 3)
    assert tuning_study.outputs.get("bestTrial") is None  # a tuning job's output, None under mocks
    image = tuning_study.one("docker-build:index:Image")
    assert image.urn in tuning_study.named("horses").dependencies  # the study waits for it


def test_the_tuning_example_runs_the_trainer_with_flags_it_reads(tuning_study: PulumiRun) -> None:
    from trainer.config import build_parser

    (pool,) = tuning_study.named("horses").inputs["spec"]["trialJobSpec"]["workerPoolSpecs"]
    # Vertex appends one --<parameter_id>=<value> per parameter of the trial.
    trial = ["--learning_rate=0.01", "--optimizer=sgd", "--momentum=0.5", "--num_units=128"]
    parsed = build_parser().parse_args([*pool["containerSpec"]["args"], *trial])
    assert (parsed.optimizer, parsed.momentum, parsed.num_units) == ("sgd", 0.5, 128)


@pytest.mark.slow
def test_the_local_study_runs_on_this_machine(tmp_path: Path) -> None:
    # A copy, so that the run's state stays out of the checkout.
    directory = tmp_path / "local-study"
    shutil.copytree(EXAMPLES / "local-study", directory)
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())["name"]
    run = run_pulumi(
        lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
        stack="local",
        project=project,
    )
    registration = run.named("objective")
    assert registration.inputs["backend"]["kind"] == "local"
    props: dict[str, Any] = dict(registration.inputs)
    provider = JobProvider(JobKind.HYPERPARAMETER_TUNING_JOB)
    result = provider.create(props)  # what `pulumi up` does: submit and wait
    try:
        outs = result.outs
        assert outs["state"] == "SUCCEEDED", outs["error_message"]
        assert len(outs["trials"]) == 4
        best = outs["best_trial"]
        assert best["final_metrics"]["score"] == max(
            t["final_metrics"]["score"] for t in outs["trials"]
        )
        for trial in outs["trials"]:
            parameters = trial["parameters"]
            assert ("y" in parameters) == (parameters["shape"] == "bowl")
    finally:
        provider.delete(result.id, result.outs)


@pytest.fixture(scope="module")
def mypy_on_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One mypy run over every example (each run costs its start and import graph): each
    ``__main__.py`` through a link named after its example, since mypy refuses two modules
    both named ``__main__``. What it says of each example, under the example's own path."""
    links = tmp_path_factory.mktemp("examples")
    files = {name: f"example_{name.replace('-', '_')}.py" for name in NAMES}
    for name, file in files.items():
        (links / file).symlink_to(EXAMPLES / name / "__main__.py")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            *(str(links / f) for f in files.values()),
        ],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    output = result.stdout + result.stderr
    # mypy's cache may replay a module's errors under the path of an earlier run's link.
    lines = [line.split(":", 1) for line in output.splitlines() if ":" in line]
    found = {
        name: "\n".join(
            f"examples/{name}/__main__.py:{rest}" for path, rest in lines if Path(path).name == file
        )
        for name, file in files.items()
    }
    # A failure without a line naming an example (mypy itself failed) fails every example.
    if result.returncode != 0 and not any(found.values()):
        found = dict.fromkeys(NAMES, output)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_example_type_checks(name: str, mypy_on_examples: dict[str, str]) -> None:
    assert not mypy_on_examples[name], mypy_on_examples[name]
