"""Changes through the real engine on a smaller copy of the ``local`` stack (the same
program, a one-trial study, no serving): a changed job is replaced (create before
delete), and an ``up`` killed while a job runs leaves a job the next ``up`` adopts
instead of submitting it twice.

What is tested is which job runs, not what it learns: the copy's jobs run the stand-in
trainer (tests/engine/standin_trainer.py), which holds while the project's
``trainer_hold`` file exists, so a test interrupts an ``up`` while its job surely runs.

The tests of this module share one stack. Each starts from a stack that is up (the ``up``
fixture brings it up where it is not, e.g. when the test runs alone), states what it
changes and compares with what it saw before, so each runs alone and in any order.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pty
import signal
import subprocess
import sys
import threading
from subprocess import Popen
from typing import Any

import pytest

from tests.engine.conftest import (
    ProjectMaker,
    PulumiProject,
    repo_stack_config,
    wait_for,
)
from tests.engine.local_store import jobs_named, stored_jobs, succeeded
from tests.local.conftest import pid_gone

pytestmark = pytest.mark.slow

CUSTOM_JOB = "cassava-mwms"
TUNING_JOB = "horses-humans-tuning"
# A preview shows a replacement as one step; the update runs it as create-replacement,
# replace, delete-replaced.
REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}


def _jobs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["name"]: job for job in config["config"]["vertex-training:jobs"]}


def _pools(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's worker pools as the stack file declares them (a study's are its trial's)."""
    run = job.get("trial") or job
    return [run[role] for role in ("chief", "workers") if role in run]


def _arg(job: dict[str, Any], flag: str) -> str:
    args = _pools(job)[0]["args"]
    return str(args[args.index(flag) + 1])


def _set_arg(job: dict[str, Any], flag: str, value: str) -> None:
    for pool in _pools(job):
        args = pool["args"] = list(pool["args"])
        args[args.index(flag) + 1] = value


def small_stack_config() -> dict[str, Any]:
    """The repository's local stack with a 1-trial study (the MWMS job still a chief and a
    worker), each job looked at every second."""
    config = copy.deepcopy(repo_stack_config())
    # The jobs' changes alone: what they do to a served model is test_serving.py's.
    for key in ("vertex-training:models", "vertex-training:endpoints"):
        config["config"].pop(key, None)
    tuning = _jobs(config)[TUNING_JOB]
    tuning["maxTrialCount"] = 1
    tuning["parallelTrialCount"] = 1
    for job in _jobs(config).values():
        job["pollIntervalSeconds"] = 1
    return config


@pytest.fixture(scope="module")
def stack_config() -> dict[str, Any]:
    return small_stack_config()


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker, stack_config: dict[str, Any]) -> PulumiProject:
    return new_project("changes", stack_config, standin_trainer=True)


@pytest.fixture
def up(project: PulumiProject) -> PulumiProject:
    """The shared stack, up: brought up where nothing runs (a fresh or destroyed stack)."""
    if not stored_jobs(project.local_root):
        project.up()
    return project


def _toggle_epochs(job: dict[str, Any]) -> None:
    """A change of what the job runs (a replacement), whatever the epochs were."""
    _set_arg(job, "--epochs", "1" if _arg(job, "--epochs") != "1" else "2")


def _ops_by_job(steps: list[dict[str, Any]]) -> dict[str, set[str]]:
    ops: dict[str, set[str]] = {}
    for step in steps:
        if ":dynamic/vertex:" in step["urn"]:
            ops.setdefault(step["urn"].rsplit("::", 1)[-1], set()).add(step["op"])
    return ops


def test_changed_args_replace_exactly_that_job(
    up: PulumiProject, stack_config: dict[str, Any]
) -> None:
    project = up
    [old_tuning] = jobs_named(project.local_root, TUNING_JOB)
    [custom] = jobs_named(project.local_root, CUSTOM_JOB)

    tuning = _jobs(stack_config)[TUNING_JOB]
    examples = _arg(tuning, "--synthetic-examples")
    _set_arg(tuning, "--synthetic-examples", "48" if examples != "48" else "40")
    project.write_config(stack_config)

    steps = project.preview_steps("--diff")
    ops = _ops_by_job(steps)
    # preview --json lists unchanged resources only with --show-sames, which the Automation
    # API does not pass: an unchanged job has no step or a "same" one.
    assert ops.get(CUSTOM_JOB, {"same"}) == {"same"}, ops
    assert ops[TUNING_JOB] <= REPLACE_OPS, ops
    reasons = {
        r for s in steps if s["urn"].endswith(TUNING_JOB) for r in s.get("replaceReasons") or ()
    }
    assert reasons == {"spec"}, reasons

    project.up()

    [new_tuning] = jobs_named(project.local_root, TUNING_JOB)
    assert new_tuning.job_id != old_tuning.job_id
    assert succeeded(new_tuning.state)
    assert jobs_named(project.local_root, CUSTOM_JOB) == [custom]
    assert project.output("jobs")[TUNING_JOB]["name"].endswith(f"/{new_tuning.job_id}")


def test_interrupted_up_is_adopted_not_duplicated(
    up: PulumiProject, stack_config: dict[str, Any]
) -> None:
    project = up
    [old_custom] = jobs_named(project.local_root, CUSTOM_JOB)
    _toggle_epochs(_jobs(stack_config)[CUSTOM_JOB])
    project.write_config(stack_config)
    log = project.root / "interrupted-up.log"

    project.trainer_hold.touch()  # the replacement job runs until the up is gone
    with log.open("w") as out:
        up = subprocess.Popen(
            project.stack_command("up"),
            cwd=project.dir,
            env=project.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:

            def new_job_running() -> bool:
                jobs = jobs_named(project.local_root, CUSTOM_JOB)
                return len(jobs) == 2 and jobs[-1].state.removeprefix("JOB_STATE_") == "RUNNING"

            wait_for(new_job_running, 300, "the replacement job to run")
            # Ctrl-C first (the runner asks the engine to cancel: it stops starting steps
            # and waits for the running one), then everything the command started is
            # killed, as a closed terminal or a crash would; the job runs on, detached.
            up.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                up.wait(timeout=3)
        finally:
            project.kill_session(up.pid)
            up.wait(timeout=30)
            # The local Vertex goes down too (the machine restarted, say): the job runs on.
            vertex = json.loads((project.local_root / "vertex.json").read_text())["pid"]
            os.kill(vertex, signal.SIGKILL)
            wait_for(lambda: pid_gone(vertex), 10, "the local Vertex to end")
            project.trainer_hold.unlink()
    interrupted = jobs_named(project.local_root, CUSTOM_JOB)
    assert len(interrupted) == 2, log.read_text()
    submitted = interrupted[-1]

    # What Pulumi documents after an interrupted update: release the stack's lock, then
    # drop the creates the engine never heard back about. The refresh starts a new local
    # Vertex, which reports the job the killed one started.
    project.pulumi("cancel", "--yes")
    project.stack("refresh", "--clear-pending-creates")
    project.up()

    [custom] = jobs_named(project.local_root, CUSTOM_JOB)
    assert custom.job_id == submitted.job_id, "the job left by the interrupted up was adopted"
    assert custom.job_id != old_custom.job_id
    assert succeeded(custom.state)
    assert len(stored_jobs(project.local_root)) == 2
    assert project.output("jobs")[CUSTOM_JOB]["name"].endswith(f"/{custom.job_id}")


# Run as the new session's leader: make stdin (the pty) its controlling terminal, then
# become the command (a preexec_fn would do the same, but is unsafe with threads).
TAKE_THE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def _start_in_terminal(project: PulumiProject, command: list[str]) -> tuple[Popen[bytes], int]:
    """``command`` in a session of its own whose controlling terminal is a new pty, as in
    a user's terminal window: a Ctrl-C typed there reaches its whole foreground group."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", TAKE_THE_TERMINAL, *command],
        cwd=project.dir,
        env=project.env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    return process, master


def _read_all(master: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every process holding the terminal has gone
            return
        if not chunk:
            return
        into.append(chunk)


@pytest.mark.parametrize("how", ["typed in a terminal", "SIGINT to the runner alone"])
def test_ctrl_c_cancels_cleanly_and_the_next_up_finishes_the_change(
    up: PulumiProject, stack_config: dict[str, Any], how: str
) -> None:
    project = up
    [before] = jobs_named(project.local_root, CUSTOM_JOB)
    _toggle_epochs(_jobs(stack_config)[CUSTOM_JOB])
    project.write_config(stack_config)

    chunks: list[bytes] = []
    # The replacement's create waits for its job, which runs until the cancel is asked.
    project.trainer_hold.touch()
    if how == "typed in a terminal":
        up, output_fd = _start_in_terminal(project, project.stack_command("up"))
    else:
        up = subprocess.Popen(
            project.stack_command("up"),
            cwd=project.dir,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert up.stdout is not None
        output_fd = up.stdout.fileno()
    reader = threading.Thread(target=_read_all, args=(output_fd, chunks), daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: len(jobs_named(project.local_root, CUSTOM_JOB)) == 2,
            300,
            "the replacement job to be submitted",
        )
        if how == "typed in a terminal":
            os.write(output_fd, b"\x03")  # the terminal sends SIGINT to runner and CLI alike
        else:
            # No terminal: the runner passes the request on to the CLI.
            up.send_signal(signal.SIGINT)
        wait_for(lambda: b"Cancelling" in b"".join(chunks), 60, "the runner to cancel")
        project.trainer_hold.unlink()
        up.wait(timeout=600)
        reader.join(timeout=30)
    finally:
        project.trainer_hold.unlink(missing_ok=True)
        project.kill_session(up.pid)
        if how == "typed in a terminal":
            os.close(output_fd)
    output = b"".join(chunks).decode(errors="replace")

    # The engine finished the step it was running (the replacement's create) and started
    # nothing after it: the old job is still there; no CLI or provider process is left.
    assert up.returncode != 0, output
    assert "Cancelling" in output, output
    assert "Traceback" not in output, output
    assert [p for p in project.processes() if "pulumi" in p] == []
    jobs = jobs_named(project.local_root, CUSTOM_JOB)
    assert [j.job_id for j in jobs][:1] == [before.job_id], jobs
    submitted = jobs[-1]

    project.up()

    [after] = jobs_named(project.local_root, CUSTOM_JOB)
    assert after.job_id == submitted.job_id, "the next up finished the change, no new submit"
    assert succeeded(after.state)


def test_destroy_leaves_no_job_and_no_process(up: PulumiProject) -> None:
    project = up
    assert len(stored_jobs(project.local_root)) == 2

    project.stack("destroy")

    assert stored_jobs(project.local_root) == {}
    assert project.processes() == []
