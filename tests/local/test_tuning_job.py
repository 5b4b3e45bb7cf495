"""HyperparameterTuningJob on the local backend: trials are stand-in processes that report
through cloudml-hypertune, exactly as the horses_or_humans trainer does."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bodies import categorical, discrete, double, integer, job_spec, study, tuning_job
from tests.fakes.faults import ended
from tests.local.conftest import PoolFactory, read_back
from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.records import JobKind, JobRecord, JobState, TrialRecord, best_trial
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.study import (
    Goal,
    Measurement,
    ParameterSpec,
    Scale,
    Selection,
    final_metric,
    parameter_args,
    read_measurements,
)

pytestmark = pytest.mark.timeout(180)

TUNING = JobKind.HYPERPARAMETER_TUNING_JOB
METRIC = HYPERTUNE_METRIC_TAG
X = double("x", 0.01, 1.0)


def _tuning(
    standin_pool: PoolFactory,
    args: tuple[str, ...] = ("--steps=2",),
    parameters: tuple[dict[str, Any], ...] = (X,),
    trials: int = 6,
    parallel: int = 2,
    max_failed: int = 0,
    output: str | None = "gs://bucket/hp",
    labels: dict[str, str] | None = None,
    pool: dict[str, Any] | None = None,
    **study_fields: Any,
) -> dict[str, Any]:
    """A HyperparameterTuningJob body; ``study_fields`` go into its studySpec
    (``algorithm="GRID_SEARCH"``, ``medianAutomatedStoppingSpec={}``, ...)."""
    body = tuning_job(
        job_spec(pool if pool is not None else standin_pool(args), output=output),
        study(*parameters, **study_fields),
        max_trials=trials,
        parallel=parallel,
        display_name="study",
        labels=labels,
    )
    if max_failed:
        body["maxFailedTrialCount"] = max_failed
    return body


def _run(backend: JobRunner, spec: dict[str, Any]) -> JobRecord:
    """The study run to its end, as a client reads it."""
    record = backend.submit(TUNING, spec)
    assert record.name.startswith("projects/local/locations/local/hyperparameterTuningJobs/")
    return read_back(backend, ended(backend, record.name, timeout=150))


RunStudy = Callable[..., JobRecord]


@pytest.fixture
def run_study(backend: JobRunner, standin_pool: PoolFactory) -> RunStudy:
    """Runs a study of stand-in trials (``_tuning``'s fields) on the local backend to its end."""
    return lambda **fields: _run(backend, _tuning(standin_pool, **fields))


def _metric(trial: TrialRecord) -> float | None:
    return trial.final_metrics.get(METRIC)


@pytest.mark.slow
def test_six_trials_two_parallel_complete_and_report_the_best(
    backend: JobRunner, run_study: RunStudy, tmp_path: Path
) -> None:
    dump = tmp_path / "env"
    record = run_study(args=("--steps=2", "--step-sleep=0.2", f"--dump-env={dump}"))
    assert record.state is JobState.SUCCEEDED, record.error_message
    assert [t.trial_id for t in record.trials] == ["1", "2", "3", "4", "5", "6"]
    assert all(t.state == "SUCCEEDED" for t in record.trials)
    for trial in record.trials:
        x = trial.parameters["x"]
        assert isinstance(x, float) and 0.01 <= x <= 1.0
        assert _metric(trial) == pytest.approx(1.0 - (x - 0.7) ** 2 + 0.1)
    best = max(record.trials, key=lambda t: _metric(t) or -1)
    assert record.best_trial == best
    base = backend.root / "gcs" / "bucket" / "hp"
    assert record.model_dir == f"gs://bucket/hp/{best.trial_id}/model"
    # Each trial ran with its own id, directories and metrics file.
    envs = {p.name: json.loads(p.read_text()) for p in dump.glob("*.json")}
    assert len(envs) == 6
    for trial in record.trials:
        env = envs[f"{trial.trial_id}workerpool0-0.json"]
        assert env["CLOUD_ML_TRIAL_ID"] == trial.trial_id
        assert env["AIP_MODEL_DIR"] == f"{base}/{trial.trial_id}/model/"
        # One replica per trial: not distributed, so no TF_CONFIG (as on Vertex).
        assert env["TF_CONFIG"] is None
        assert json.loads(env["CLUSTER_SPEC"])["task"]["trial"] == trial.trial_id
        assert f"--x={trial.parameters['x']}" in env["argv"]
    assert len({e["CLOUD_ML_HP_METRIC_FILE"] for e in envs.values()}) == 6
    # Never more than two trials at a time: trial 3 starts after one of 1, 2 ended.


@pytest.mark.slow
def test_parallel_trial_count_is_respected(
    backend: JobRunner, run_study: RunStudy, tmp_path: Path
) -> None:
    spans_dir = tmp_path / "spans"
    record = run_study(args=("--steps=1", "--sleep=1.0", f"--span-dir={spans_dir}"), trials=4)
    assert record.state is JobState.SUCCEEDED
    spans = [json.loads(p.read_text()) for p in sorted(spans_dir.glob("*.json"))]
    assert len(spans) == 4
    # Each trial process's own start/end times: at every start, count who is running.
    running_at_starts = [
        sum(1 for other in spans if other["start"] <= span["start"] < other["end"])
        for span in spans
    ]
    assert max(running_at_starts) == 2  # two at a time, never three
    details = backend.get(record.name)
    assert details.replicas == []  # nothing left running


@pytest.mark.slow
def test_grid_search_covers_the_grid_and_stops_when_it_is_exhausted(run_study: RunStudy) -> None:
    params = (discrete("x", (0.2, 0.7)), categorical("kind", ("good", "bad")))
    record = run_study(parameters=params, trials=10, parallel=2, algorithm="GRID_SEARCH")
    assert record.state is JobState.SUCCEEDED
    combos = sorted((dict(t.parameters)["x"], t.parameters["kind"]) for t in record.trials)
    assert combos == [(0.2, "bad"), (0.2, "good"), (0.7, "bad"), (0.7, "good")]
    assert record.best_trial is not None
    assert record.best_trial.parameters == {"x": 0.7, "kind": "good"}


@pytest.mark.slow
def test_random_search_is_reproducible_with_the_backend_seed(
    tmp_path: Path, standin_pool: PoolFactory
) -> None:
    params = (
        double("x", 0.01, 1.0, "UNIT_LOG_SCALE"),
        integer("n", 1, 100, "UNIT_REVERSE_LOG_SCALE"),
        double("r", 1.0, 10.0, "UNIT_REVERSE_LOG_SCALE"),
    )
    runs = []
    for i in range(2):
        backend = JobRunner(str(tmp_path / f"root{i}"), seed=7)
        spec = _tuning(
            standin_pool, parameters=params, trials=4, parallel=1, algorithm="RANDOM_SEARCH"
        )
        runs.append(_run(backend, spec))
    assert [t.parameters for t in runs[0].trials] == [t.parameters for t in runs[1].trials]
    for trial in runs[0].trials:
        x, n, r = (trial.parameters[k] for k in ("x", "n", "r"))
        assert isinstance(x, float) and 0.01 <= x <= 1.0
        # Integers come back as whole-number doubles, as Vertex reports them.
        assert isinstance(n, float) and n.is_integer() and 1 <= n <= 100
        assert isinstance(r, float) and 1.0 <= r <= 10.0


@pytest.mark.slow
def test_conditional_parameter_only_when_parent_matches(run_study: RunStudy) -> None:
    kind = categorical("kind", ("good", "bad"), good=[integer("units", 8, 16)])
    record = run_study(parameters=(kind,), trials=6, parallel=2, algorithm="RANDOM_SEARCH")
    assert record.state is JobState.SUCCEEDED
    kinds = set()
    for trial in record.trials:
        values = trial.parameters
        kinds.add(values["kind"])
        assert ("units" in values) == (values["kind"] == "good")
    assert kinds == {"good", "bad"}


@pytest.mark.slow
def test_failed_trials_are_infeasible_and_max_failed_fails_the_job(run_study: RunStudy) -> None:
    record = run_study(args=("--exit-code=4",), trials=6, parallel=1, max_failed=2, output=None)
    assert record.state is JobState.FAILED
    assert [t.state for t in record.trials] == ["INFEASIBLE", "INFEASIBLE"]
    assert "2 trials failed" in (record.error_message or "")
    assert "failing on purpose: boom" in (record.error_message or "")


@pytest.mark.slow
def test_trial_without_metric_is_infeasible_but_the_study_succeeds(run_study: RunStudy) -> None:
    record = run_study(
        args=("--steps=1", "--no-metric-if=kind=bad"),
        parameters=(categorical("kind", ("good", "bad")),),
        trials=2,
        parallel=1,
        algorithm="GRID_SEARCH",
    )
    assert record.state is JobState.SUCCEEDED
    states = {t.parameters["kind"]: t.state for t in record.trials}
    assert states == {"good": "SUCCEEDED", "bad": "INFEASIBLE"}
    assert record.best_trial is not None and record.best_trial.parameters["kind"] == "good"


@pytest.mark.parametrize(
    ("selection", "expected"),
    [(Selection.BEST_MEASUREMENT, 0.9), (Selection.LAST_MEASUREMENT, 0.5)],
)
def test_measurement_selection(tmp_path: Path, selection: Selection, expected: float) -> None:
    path = tmp_path / "output.metrics"
    lines = [
        {HYPERTUNE_METRIC_TAG: "0.2", "global_step": "1"},
        {HYPERTUNE_METRIC_TAG: "0.9", "global_step": "2"},
        {HYPERTUNE_METRIC_TAG: "0.5", "global_step": "3"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"accuracy": "0.')
    measurements = read_measurements(path, HYPERTUNE_METRIC_TAG)
    assert measurements == [Measurement(1, 0.2), Measurement(2, 0.9), Measurement(3, 0.5)]
    assert final_metric(measurements, Goal.MAXIMIZE, selection) == expected
    assert final_metric(measurements, Goal.MINIMIZE, Selection.BEST_MEASUREMENT) == 0.2
    assert final_metric([], Goal.MAXIMIZE, selection) is None


def test_best_trial_respects_goal_and_ignores_infeasible() -> None:
    trials = [
        TrialRecord("1", "SUCCEEDED", {"x": 1.0}, {"m": 0.5}),
        TrialRecord("2", "INFEASIBLE", {"x": 2.0}, {}),
        TrialRecord("3", "SUCCEEDED", {"x": 3.0}, {"m": 0.8}),
        TrialRecord("4", "SUCCEEDED", {"x": 4.0}, {"m": 0.8}),
    ]
    assert best_trial(trials, "m", maximize=True).trial_id == "3"  # type: ignore[union-attr]
    assert best_trial(trials, "m", maximize=False).trial_id == "1"  # type: ignore[union-attr]
    assert best_trial(trials[1:2], "m", maximize=True) is None
    assert best_trial(trials, "other", maximize=True) is None


def test_parameter_args_are_vertex_flags() -> None:
    assert parameter_args([("learning_rate", 0.01), ("num_units", 64.0), ("opt", "sgd")]) == (
        "--learning_rate=0.01",
        "--num_units=64",
        "--opt=sgd",
    )


@pytest.mark.slow
def test_median_stopping_stops_trials_worse_than_the_median(run_study: RunStudy) -> None:
    # Grid order is random but seeded; the good values finish first often enough that
    # later poor trials are compared against them. Steps are slow so stopping shows.
    record = run_study(
        args=("--steps=6", "--step-sleep=0.3"),
        parameters=(discrete("x", (0.04, 0.05, 0.06, 0.69, 0.7, 0.71)),),
        trials=6,
        parallel=1,
        algorithm="GRID_SEARCH",
        medianAutomatedStoppingSpec={},
    )
    assert record.state is JobState.SUCCEEDED
    stopped = [t.trial_id for t in record.trials if t.early_stopped]
    assert stopped, "median stopping stopped nothing"
    by_id = {t.trial_id: t for t in record.trials}
    for trial_id in stopped:
        x = by_id[trial_id].parameters["x"]
        assert isinstance(x, float) and x < 0.1, f"a good trial (x={x}) was stopped"
        assert by_id[trial_id].state == "SUCCEEDED"
        # Stopped before its last step: its metric is below the full-run value.
        full = 1.0 - (x - 0.7) ** 2 + 0.1
        assert by_id[trial_id].final_metrics[METRIC] < full
    assert record.best_trial is not None
    assert not math.isclose(float(record.best_trial.parameters["x"]), 0.05)


@pytest.mark.slow
def test_cancel_stops_running_trials_and_leaves_no_process(
    backend: JobRunner, standin_pool: PoolFactory, tmp_path: Path
) -> None:
    import time

    from tests.local.conftest import pid_gone

    pids_dir = tmp_path / "pids"
    spec = _tuning(
        standin_pool, args=(f"--spawn-child={pids_dir}", "--sleep=300"), trials=4, parallel=2
    )
    record = backend.submit(TUNING, spec)
    deadline = time.monotonic() + 30
    while len(list(pids_dir.glob("*.pids"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    replica_pids = [r.pid for r in backend.get(record.name).replicas if r.pid]
    # Each trial's replica and the child it spawned.
    child_pids = [int(p) for f in pids_dir.glob("*.pids") for p in f.read_text().split()]
    assert len(child_pids) == 4
    backend.cancel(record.name)
    final = ended(backend, record.name)
    assert final.state is JobState.CANCELLED
    assert [t["state"] for t in final.trials] == ["STOPPING", "STOPPING"]
    assert len(replica_pids) == 2
    deadline = time.monotonic() + 10
    everything = [*replica_pids, *child_pids]
    while not all(pid_gone(p) for p in everything) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in everything if not pid_gone(p)] == []


@pytest.mark.parametrize(
    ("scale", "dense_near_max"),
    [(Scale.UNIT_LOG_SCALE, False), (Scale.UNIT_REVERSE_LOG_SCALE, True)],
)
def test_log_scales_put_their_resolution_at_the_right_end(
    scale: Scale, dense_near_max: bool
) -> None:
    import statistics

    import optuna

    from vertex_training.local.runners.study import suggest_parameters

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    params = (
        ParameterSpec(
            parameter_id="lr",
            double_value_spec=ParameterSpec.DoubleValueSpec(min_value=1.0, max_value=1000.0),
            scale_type=scale,
        ),
    )
    values: list[float] = []
    for _ in range(400):
        trial = study.ask()
        (name, value), *_ = suggest_parameters(trial, params, grid=False)
        study.tell(trial, 0.0)
        assert name == "lr" and isinstance(value, float) and 1.0 <= value <= 1000.0
        values.append(value)
    median = statistics.median(values)
    # Log-uniform on [1, 1000] has its median at ~31.6; the mirror image at ~969.
    assert (median > 900) if dense_near_max else (median < 100)


@pytest.mark.slow
def test_parallel_trials_get_distinct_gpus(
    standin_pool: PoolFactory,
    run_study: RunStudy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A two-GPU machine; two trials at a time, one GPU each.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    dump = tmp_path / "env"
    record = run_study(
        pool=standin_pool([f"--dump-env={dump}", "--steps=1", "--sleep=0.5"], accelerators=1),
        trials=2,
        parallel=2,
    )
    assert record.state is JobState.SUCCEEDED
    visible = sorted(json.loads(p.read_text())["CUDA_VISIBLE_DEVICES"] for p in dump.glob("*.json"))
    assert visible == ["0", "1"]
