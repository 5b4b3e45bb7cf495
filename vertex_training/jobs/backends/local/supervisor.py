"""The detached process that runs one local job: ``python -m ...supervisor <job dir>``.

Started by ``LocalBackend.submit`` in a new session, so it outlives the process that
submitted it (a Pulumi provider process ends with its deployment). It alone moves the job
through PENDING -> RUNNING -> SUCCEEDED / FAILED, and to CANCELLED when ``cancel`` asks
(SIGTERM or the cancel file). Every replica runs in its own process group, which is what
cancel, failure and success stop. The job's state and its clusters are ``job_run.JobRun``;
a tuning job's study is ``study.Tuner``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from google.cloud.aiplatform_v1 import CustomJob, HyperparameterTuningJob

from vertex_training.jobs.backends.local._store import now_rfc3339
from vertex_training.jobs.backends.local.cluster import POLL_SECONDS
from vertex_training.jobs.backends.local.job_run import JobCancelledError, JobRun
from vertex_training.jobs.backends.local.study import Tuner
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobState

_log = logging.getLogger("vertex_training.jobs.backends.local.supervisor")


class Supervisor(JobRun):
    """The job's process: its signals, and which loop runs it."""

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.cancel_requested = True

    def run(self) -> int:
        try:
            job = parse_body(self.job.read().record.kind, self.job.read_body())
            self.check_cancel()
            self.set_state(JobState.PENDING)
            if isinstance(job, HyperparameterTuningJob):
                seed = self.job.seed_file
                Tuner(self, job, int(seed.read_text()) if seed.exists() else None).run()
            else:
                self.run_custom_job(job)
        except JobCancelledError:
            self.finish(JobState.CANCELLED, error_message="CANCELED: the job was cancelled")
        except Exception as exc:
            _log.exception("supervisor failed")
            self.finish(JobState.FAILED, error_message=f"local supervisor error: {exc!r}")
            return 1
        return 0

    def run_custom_job(self, job: CustomJob) -> None:
        run = self.cluster(job.job_spec, self.job.path)
        try:
            run.start()
            # Replicas first: whoever reads RUNNING finds the processes that run it.
            self.save_replicas([run])
            self.set_state(JobState.RUNNING, start_time=now_rfc3339(), model_dir=run.model_dir)
            seen = [s.state for s in run.statuses()]
            while (succeeded := run.poll()) is None:
                self.check_cancel()
                if (states := [s.state for s in run.statuses()]) != seen:
                    seen = states
                    self.save_replicas([run])
                time.sleep(POLL_SECONDS)
        finally:
            run.terminate()
            self.save_replicas([run])
        if succeeded:
            self.finish(JobState.SUCCEEDED)
        else:
            self.finish(JobState.FAILED, error_message=run.error_message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("job_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    supervisor = Supervisor(args.job_dir)
    signal.signal(signal.SIGTERM, supervisor.on_sigterm)
    signal.signal(signal.SIGINT, supervisor.on_sigterm)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
