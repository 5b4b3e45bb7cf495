"""A local study survives its supervisor: the Optuna study is a journal in the job
directory, and running the job again resumes it (finished trials count, interrupted ones
run again with their parameters) instead of starting over."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.bodies import double, job_spec, study, tuning_job
from tests.fakes.faults import ended
from tests.fakes.settings import PARENT, local_settings
from tests.local.conftest import PoolFactory, pid_gone
from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.local.runners.jobs import JobRunner
from vertex_training.local.runners.store import SUPERVISOR_LOG
from vertex_training.local.runners.study import STUDY_JOURNAL, journal_storage
from vertex_training.local.runners.supervisor import VERTEX_TRIAL_ID

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TUNING = JobKind.HYPERPARAMETER_TUNING_JOB
TRIALS = 4


def _wait_for(condition: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _hold_trials(tmp_path: Path, trial_ids: range) -> list[Path]:
    """Hold files for the stand-in's ``--hold-while``: those trials run until they go."""
    holds = [tmp_path / f"hold-{trial_id}" for trial_id in trial_ids]
    for hold in holds:
        hold.touch()
    return holds


def _settled(backend: JobRunner, name: str, states: list[str]) -> bool:
    """The study's trials are in ``states``."""
    return [t["state"] for t in backend.get(name).trials] == states


def test_a_study_whose_supervisor_died_resumes_its_remaining_trials(
    backend: JobRunner, standin_pool: PoolFactory, tmp_path: Path
) -> None:
    import optuna

    # Trials 1 and 2 finish; 3 and 4 run until the supervisor is killed (they hold).
    holds = _hold_trials(tmp_path, range(3, TRIALS + 1))
    hold_while = f"--hold-while={tmp_path}/hold-{{trial}}"
    body = tuning_job(
        job_spec(standin_pool(["--steps=1", hold_while]), output="gs://bucket/hp"),
        study(double("x", 0.01, 1.0)),
        max_trials=TRIALS,
        parallel=2,
        display_name="resumable-study",
    )
    record = backend.submit(TUNING, body)

    _wait_for(
        lambda: _settled(backend, record.name, ["SUCCEEDED", "SUCCEEDED", "ACTIVE", "ACTIVE"])
    )
    details = backend.get(record.name)
    running = [t for t in details.trials if t["state"] == "ACTIVE"]
    before = {t["id"]: t for t in details.trials if t["state"] == "SUCCEEDED"}
    assert sorted(before) == ["1", "2"]
    supervisor = details.supervisor_pid
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    _wait_for(lambda: pid_gone(supervisor))

    # The job is taken up where it stopped, the next time anyone looks at it.
    for hold in holds:
        hold.unlink()
    resumed = backend.get(record.name)
    assert resumed.state is JobState.QUEUED
    assert resumed.supervisor_pid not in (None, supervisor)
    # The dead supervisor's trial processes were stopped with it.
    assert all(pid_gone(r.pid) for r in details.replicas if r.pid is not None)
    final = ended(backend, record.name, timeout=120)
    assert final.state is JobState.SUCCEEDED, final.error_message
    trials = final.trials
    assert [t["id"] for t in trials] == [str(i) for i in range(1, TRIALS + 1)]
    metrics = [t["finalMeasurement"]["metrics"] for t in trials]
    assert all(t["state"] == "SUCCEEDED" for t in trials)
    assert all([m["metricId"] for m in found] == [HYPERTUNE_METRIC_TAG] for found in metrics)
    # What had finished kept its parameters and result: it was not run again.
    for trial_id, trial in before.items():
        assert trials[int(trial_id) - 1] == trial
    # Interrupted trials ran again with their parameters; their first attempt is kept.
    by_id = {t["id"]: t for t in trials}
    rerun = [t for t in running if t["id"] not in before]
    assert rerun
    job_dir = backend.jobs_dir / record.name.rsplit("/", 1)[-1]
    for trial in rerun:
        assert by_id[trial["id"]]["parameters"] == trial["parameters"]
        assert (job_dir / "trials" / f"{trial['id']}.interrupted").is_dir()

    # The study loads from its journal, as optuna-dashboard opens it: every trial id
    # completed once; the interrupted attempts are there as FAIL.
    journal = job_dir / STUDY_JOURNAL
    loaded = optuna.load_study(study_name="resumable-study", storage=journal_storage(journal))
    complete = [t for t in loaded.trials if t.state is optuna.trial.TrialState.COMPLETE]
    assert sorted(t.user_attrs[VERTEX_TRIAL_ID] for t in complete) == sorted(by_id)
    assert {t.value for t in complete} == {found[0]["value"] for found in metrics}
    failed = [t for t in loaded.trials if t.state is optuna.trial.TrialState.FAIL]
    assert len(failed) == len(loaded.trials) - TRIALS >= len(rerun)
    assert not [t for t in loaded.trials if t.state is optuna.trial.TrialState.RUNNING]


def test_a_journal_lock_the_dead_supervisor_held_is_released_before_the_study_resumes(
    backend: JobRunner, standin_pool: PoolFactory, tmp_path: Path
) -> None:
    """A supervisor killed mid-append leaves Optuna's journal lock behind; a resumed
    supervisor would wait out Optuna's grace period (30 s) before forcing it. The lock is
    made here as Optuna makes it, at the moments a supervisor would hold it."""
    from optuna.storages.journal import JournalFileSymlinkLock

    holds = _hold_trials(tmp_path, range(2, 3))  # trial 1 finishes, trial 2 holds
    body = tuning_job(
        job_spec(
            standin_pool(["--steps=1", f"--hold-while={tmp_path}/hold-{{trial}}"]),
            output="gs://bucket/locked",
        ),
        study(double("x", 0.01, 1.0)),
        max_trials=2,
        parallel=1,
        display_name="locked-study",
    )
    record = backend.submit(TUNING, body)
    _wait_for(lambda: _settled(backend, record.name, ["SUCCEEDED", "ACTIVE"]))
    job_dir = backend.jobs_dir / record.name.rsplit("/", 1)[-1]
    journal = job_dir / STUDY_JOURNAL
    lock_file = journal.with_name(journal.name + ".lock")
    supervisor = backend.get(record.name).supervisor_pid
    assert supervisor is not None

    # A live supervisor's lock is never broken (nothing is written while trial 2 holds).
    lock = JournalFileSymlinkLock(str(journal))
    assert lock.acquire()
    assert backend.get(record.name).state is JobState.RUNNING
    assert lock_file.is_symlink()

    # The supervisor dies holding it; the job is taken over.
    os.kill(supervisor, signal.SIGKILL)
    _wait_for(lambda: pid_gone(supervisor))
    for hold in holds:
        hold.unlink()
    assert backend.get(record.name).supervisor_pid != supervisor
    final = ended(backend, record.name, timeout=120)
    assert final.state is JobState.SUCCEEDED, final.error_message
    assert [t["state"] for t in final.trials] == ["SUCCEEDED", "SUCCEEDED"]
    # The resumed supervisor never waited on the lock (Optuna warns when it does).
    assert "lock file" not in (job_dir / SUPERVISOR_LOG).read_text()


def test_a_job_that_ended_is_left_as_it_is(backend: JobRunner, standin_pool: PoolFactory) -> None:
    body = tuning_job(
        job_spec(standin_pool(["--steps=1"]), output="gs://bucket/hp"),
        study(double("x", 0.01, 1.0)),
        max_trials=1,
        parallel=1,
    )
    record = backend.submit(TUNING, body)
    done = ended(backend, record.name, timeout=60)
    assert done.state is JobState.SUCCEEDED
    _wait_for(lambda: pid_gone(done.supervisor_pid))
    assert backend.get(record.name) == done  # its supervisor is gone, as it should be
    # A finished study's journal holds its one trial.
    journal = Path(backend.jobs_dir / record.name.rsplit("/", 1)[-1] / STUDY_JOURNAL)
    import optuna

    [trial] = optuna.load_study(study_name=None, storage=journal_storage(journal)).trials
    assert trial.state is optuna.trial.TrialState.COMPLETE


def test_an_interrupted_up_resumes_the_study_through_the_provider(
    backend: JobRunner, standin_pool: PoolFactory, tmp_path: Path
) -> None:
    """`pulumi up` killed mid-study leaves no state for the job; the next `up` creates it
    again, and the provider finds the job by its adoption label and resumes it."""
    from vertex_training.jobs.resources import PROVIDER_VERSION, JobProvider

    holds = _hold_trials(tmp_path, range(2, 5))  # trial 1 finishes, the others hold
    hold_while = f"--hold-while={tmp_path}/hold-{{trial}}"
    body = tuning_job(
        job_spec(standin_pool(["--steps=1", hold_while]), output="gs://bucket/up"),
        study(double("x", 0.01, 1.0)),
        max_trials=4,
        parallel=2,
        display_name="up-study",
    )
    props = {
        "spec": body,
        "backend": local_settings(str(backend.root)).to_props(),
        "identity": "vertex-training/local/up-study",
        "wait": False,
        "wait_timeout_seconds": 600.0,
        "poll_interval_seconds": 1.0,
        "delete_timeout_seconds": 60.0,
        "provider_version": PROVIDER_VERSION,
    }
    provider = JobProvider(TUNING)
    first = provider.create(props)
    # The runner under the local Vertex, in its names.
    backend = JobRunner(str(backend.root), parent=PARENT)
    _wait_for(lambda: _settled(backend, first.id, ["SUCCEEDED", "ACTIVE", "ACTIVE"]))
    supervisor = backend.get(first.id).supervisor_pid
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    _wait_for(lambda: pid_gone(supervisor))
    done_before = [t for t in backend.get(first.id).trials if t["state"] == "SUCCEEDED"]
    assert [t["id"] for t in done_before] == ["1"]
    for hold in holds:
        hold.unlink()

    again = provider.create({**props, "wait": True, "poll_interval_seconds": 0.1})
    assert again.id == first.id  # the same job, resumed: not a new study
    assert again.outs is not None
    assert again.outs["state"] == "SUCCEEDED"
    trials = again.outs["trials"]
    assert [t["trial_id"] for t in trials] == ["1", "2", "3", "4"]
    finished = {t["trial_id"]: t for t in trials}
    for trial in done_before:
        parameters = {p["parameterId"]: p["value"] for p in trial["parameters"]}
        assert finished[trial["id"]]["parameters"] == parameters
