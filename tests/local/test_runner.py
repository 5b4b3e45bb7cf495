"""``python -m vertex_training.runner``: runs jobs on the local backend and shows their progress."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bodies import custom_job, double, job_spec, study, tuning_job
from tests.local.conftest import PoolFactory
from vertex_training.jobs.records import JobKind
from vertex_training.runner.__main__ import EXIT_FAILED, EXIT_USAGE, main
from vertex_training.runner.jobs import StackJobs, StackJobsError, load_spec_file

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, body: dict[str, Any], name: str) -> Path:
    """A spec file: the job's Vertex REST body as JSON."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def test_spec_file_study_prints_trials_as_they_finish_and_the_best(
    tmp_path: Path, standin_pool: PoolFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tuning_job(
        job_spec(standin_pool(["--steps=1", "--step-sleep=0.6"]), output=None),
        study(double("x", 0.0, 1.0), metrics=(("accuracy", "MAXIMIZE"),)),
        max_trials=3,
        parallel=2,
        display_name="try-me",
    )
    code = main(["run", "--spec", str(_write(tmp_path, spec, "study")), "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    # It says what it is: no engine, no stack state.
    assert lines[0].startswith("Running the jobs on the local backend without the Pulumi engine")
    finished = [line for line in lines if line.startswith("[study] trial ") and "SUCCEEDED" in line]
    assert len(finished) == 3
    assert any("workerpool0-0: RUNNING" in line for line in lines)
    assert any(line.startswith("[study]   best: trial") for line in lines)
    assert "study plot: " in out
    assert "all 1 jobs succeeded" in out


def test_failing_job_exits_non_zero_and_shows_the_log_tail(
    tmp_path: Path, standin_pool: PoolFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = custom_job(standin_pool(["--exit-code=5"]), display_name="bad", output=None)
    code = main(["run", "--spec", str(_write(tmp_path, spec, "bad")), "--root", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == EXIT_FAILED
    assert "failing on purpose: boom" in captured.out
    assert "failed: bad" in captured.err


def test_spec_file_kind_is_read_from_the_body(tmp_path: Path) -> None:
    trial = job_spec({"machineSpec": {"machineType": "n1-standard-4"}})
    tuning = tuning_job(trial, study(double("x", 0.0, 1.0)))
    assert load_spec_file(_write(tmp_path, tuning, "t")).kind is JobKind.HYPERPARAMETER_TUNING_JOB
    without_study = {"displayName": "s", "trialJobSpec": trial}
    assert (
        load_spec_file(_write(tmp_path, without_study, "w")).kind
        is JobKind.HYPERPARAMETER_TUNING_JOB
    )
    assert load_spec_file(_write(tmp_path, custom_job(spec=trial), "c")).kind is JobKind.CUSTOM_JOB


def test_unknown_job_name_is_refused_with_the_declared_ones() -> None:
    jobs = StackJobs("local", Path("/x"), (("cassava", None), ("horses", None)))  # type: ignore[arg-type]
    with pytest.raises(StackJobsError, match=r"--job nope: not declared.*cassava, horses"):
        jobs.select(["nope"])
    assert [n for n, _ in jobs.select(["horses"])] == ["horses"]


def test_missing_stack_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--stack", "nowhere", "--stacks-dir", str(tmp_path)])
    assert code == EXIT_USAGE
    assert "Pulumi.nowhere.yaml" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_local_stack_runs_end_to_end(tmp_path: Path) -> None:
    """The whole local stack (the codelab jobs scaled down), as CI and README run it."""
    stack_file = REPO / "stacks" / "Pulumi.local.yaml"
    if "vertex-training:jobs" not in stack_file.read_text():
        pytest.skip("the local stack declares no jobs yet")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vertex_training.runner",
            "run",
            "--stack",
            "local",
            "--root",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "best: trial" in result.stdout
    jobs = tmp_path / "bucket" / "jobs"
    models = sorted(str(p.relative_to(jobs)) for p in jobs.rglob("saved_model.pb"))
    # One model from the two-replica MWMS job (the worker saves to a temporary dir), one
    # per trial of the study.
    assert models == [
        "cassava-mwms/model/saved_model.pb",
        *(f"horses-humans-tuning/{t}/model/saved_model.pb" for t in range(1, 7)),
    ]
    assert (jobs / "horses-humans-tuning" / "study.png").is_file()
