"""The detached process that runs one local job: ``python -m ...supervisor <job dir>``.

Started by ``LocalBackend.submit`` in a new session, so it outlives the process that
submitted it (a Pulumi provider process ends with its deployment). It alone moves the job
through PENDING -> RUNNING -> SUCCEEDED / FAILED, and to CANCELLED when ``cancel`` asks
(SIGTERM or the cancel file). Every replica runs in its own process group, which is what
cancel, failure and success stop. The job's state and its clusters are ``job_run.JobRun``;
a tuning job's study loop is ``tuner.Tuner``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from vertex_training.jobs.backends.local._store import now_rfc3339
from vertex_training.jobs.backends.local.cluster import POLL_SECONDS, ClusterOutcome
from vertex_training.jobs.backends.local.environment import job_spec_body
from vertex_training.jobs.backends.local.job_run import JobCancelledError, JobRun
from vertex_training.jobs.backends.local.tuner import Tuner
from vertex_training.jobs.records import JobKind, JobState
from vertex_training.jobs.view import CustomJobView, TuningJobView, view_of

_log = logging.getLogger("vertex_training.jobs.backends.local.supervisor")


class Supervisor(JobRun):
    """The job's process: its signals, and which loop runs it."""

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.cancel_requested = True

    def run(self) -> int:
        try:
            body = self.job.read_body()
            view = view_of(self.job.read().record.kind, body)
            self.check_cancel()
            self.set_state(JobState.PENDING)
            if isinstance(view, CustomJobView):
                self.run_custom_job(view, body)
            else:
                self.run_tuning_job(view, body)
        except JobCancelledError:
            self.finish(JobState.CANCELLED, error_message="CANCELED: the job was cancelled")
        except Exception as exc:
            _log.exception("supervisor failed")
            self.finish(JobState.FAILED, error_message=f"local supervisor error: {exc!r}")
            return 1
        return 0

    # -- CustomJob -------------------------------------------------------------------

    def run_custom_job(self, view: CustomJobView, body: dict[str, Any]) -> None:
        spec = view.job
        run = self.cluster(spec, job_spec_body(JobKind.CUSTOM_JOB, body), self.job.path)
        run.prepare()
        try:
            run.start()
            # Replicas first: whoever reads RUNNING finds the processes that run it.
            self.save_replicas([run])
            self.set_state(JobState.RUNNING, start_time=now_rfc3339(), model_dir=run.model_dir)
            seen = [s.state for s in run.statuses()]
            while True:
                self.check_cancel()
                if run.timed_out():
                    run.fail(f"the job ran longer than its timeout of {spec.timeout_seconds:g}s")
                outcome = run.poll()
                now_states = [s.state for s in run.statuses()]
                if now_states != seen:
                    seen = now_states
                    self.save_replicas([run])
                if outcome is not None:
                    break
                time.sleep(POLL_SECONDS)
        finally:
            run.terminate()
            self.save_replicas([run])
        if outcome is ClusterOutcome.SUCCEEDED:
            self.finish(JobState.SUCCEEDED)
        else:
            self.finish(JobState.FAILED, error_message=run.error_message)

    # -- HyperparameterTuningJob -----------------------------------------------------

    def run_tuning_job(self, spec: TuningJobView, body: dict[str, Any]) -> None:
        tuner = Tuner(self, spec, job_spec_body(JobKind.HYPERPARAMETER_TUNING_JOB, body))
        try:
            tuner.run()
        finally:
            # Cancelled or crashed: stop the trials, keep what they found.
            if not tuner.saved_final:
                tuner.stop_all()
                tuner.save(final=True)


def _install_handlers(sup: Supervisor) -> None:
    signal.signal(signal.SIGTERM, sup.on_sigterm)
    signal.signal(signal.SIGINT, sup.on_sigterm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("job_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    sup = Supervisor(args.job_dir)
    _install_handlers(sup)
    return sup.run()


if __name__ == "__main__":
    sys.exit(main())
