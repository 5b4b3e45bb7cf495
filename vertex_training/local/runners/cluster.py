"""Local processes: one started in a session of its own, process groups stopped, and one
CustomJob (or one tuning trial) as the set of its replicas' processes, driven by polling."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.cloud.aiplatform_v1 import CustomJobSpec

from vertex_training._processes import proc_stat, process_alive, process_start_time
from vertex_training._project import project_root
from vertex_training.local.runners.environment import (
    CHIEF,
    WORKER,
    WORKERPOOLS,
    GpuAllocator,
    cluster_job,
    inherited_environment,
    local_bucket_paths,
    output_dirs,
    plan_replicas,
    replica_command,
    replica_environment,
)
from vertex_training.local.runners.store import JobDir, ReplicaState, ReplicaStatus
from vertex_training.local.runners.warm import WarmProcess, run_warm

_log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
"""How often the supervisor polls its replicas (and a study its trials)."""
WORKER_GRACE_SECONDS = 30.0
"""After the chief succeeds, how long MWMS workers get to finish their own (collective)
save before they are stopped; parameter servers and evaluators are stopped at once."""
TERM_GRACE_SECONDS = 5.0
"""Between SIGTERM and SIGKILL when stopping a replica's process group."""
HOLD_FILE = "hold"
"""While ``<root>/hold`` exists (the local Vertex's ``POST /local/hold``), each replica is
stopped (SIGSTOP) as it starts: its job runs and its replicas do nothing until released."""


def start_process(
    command: Sequence[str], log_path: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], str | None]:
    """Start ``command`` in the project (it holds ``trainer/``), its output appended to
    ``log_path``, and its ``/proc`` start time. A new session: a stop reaches whatever it
    spawns (its process group), it outlives its starter (a Pulumi provider process ends
    with its deployment), and a Ctrl-C there does not reach it."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            cwd=project_root(),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, process_start_time(process.pid)


def signal_replica(replica: ReplicaStatus, signum: int) -> bool:
    """Send ``signum`` to the replica's process group (to the process alone when it is a
    warm worker of a pool's group); False when that very process is gone."""
    if replica.state is not ReplicaState.RUNNING or not process_alive(replica.pid, replica.start):
        return False
    try:
        own_group = os.getpgid(replica.pid) == replica.pid
        (os.killpg if own_group else os.kill)(replica.pid, signum)
    except ProcessLookupError:
        return False
    return True


def log_tail(path: Path, lines: int = 20, chars: int = 4000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - chars * 2))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])[-chars:]


def _group_alive(pgid: int) -> bool:
    """A member of the group still runs (zombies, which run nothing, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    pids = (int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return any((stat := proc_stat(pid)) is not None and stat[2] == str(pgid) for pid in pids)


def stop_process_groups(pgids: Sequence[int], grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM every group, wait up to ``grace`` for them to go, then SIGKILL the rest."""
    alive = []
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            os.killpg(pgid, signal.SIGCONT)  # a held replica takes its SIGTERM now
            alive.append(pgid)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _group_alive(p)]
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


@dataclass
class ClusterRun:
    """The replicas of one CustomJobSpec (one job, or one trial of a tuning job)."""

    job: JobDir
    spec: CustomJobSpec
    run_dir: Path
    """Logs and hypertune files go here (``logs/``, ``hypertune/``)."""
    output_dir: str | None
    """The job's ``baseOutputDirectory`` as a local path; None when it has none (then no
    AIP_* directory is set, as on Vertex)."""
    gpus: GpuAllocator
    trial_id: str | None = None
    extra_args: tuple[str, ...] = ()
    """Appended to every pool's args (a trial's ``--param=value`` flags, as Vertex does)."""
    replicas: list[ReplicaStatus] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes] | WarmProcess] = field(default_factory=list)
    held_gpus: list[tuple[str, ...] | None] = field(default_factory=list)
    started_at: float = 0.0
    chief_done_at: float | None = None
    succeeded: bool | None = None
    """None while the cluster runs."""
    error_message: str | None = None

    def start(self) -> None:
        """Start every replica with its command and environment (``environment``)."""
        gcs = self.job.root / "gcs"
        pools = self.spec.worker_pool_specs
        args = [
            [local_bucket_paths(a, gcs) for a in (*pool.container_spec.args, *self.extra_args)]
            for pool in pools
        ]
        job = cluster_job(self.spec, args)
        aip_dirs = map(Path, output_dirs(self.output_dir, self.trial_id).values())
        for directory in (self.run_dir / "logs", self.run_dir / "hypertune", *aip_dirs):
            directory.mkdir(parents=True, exist_ok=True)
        inherited = inherited_environment(os.environ)
        job_name = self.job.read().name  # what CLOUD_ML_* tell a replica
        self.started_at = time.monotonic()
        slots = plan_replicas(self.spec)
        for slot in slots:
            pool = pools[slot.pool]
            gpus = self.gpus.acquire(pool.machine_spec.accelerator_count)
            self.held_gpus.append(gpus)
            env = replica_environment(
                slots=slots,
                me=slot,
                pool=pool,
                job=job,
                job_name=job_name,
                base_output_dir=self.output_dir,
                trial_id=self.trial_id,
                metric_file=str(
                    self.chief_metric_file
                    if slot.pool == CHIEF
                    else self.run_dir / "hypertune" / f"{slot.label}.metrics"
                ),
                cuda_visible_devices=",".join(gpus) if gpus is not None else None,
                root=self.job.root,
            )
            command = replica_command(pool, args[slot.pool])
            log = self.run_dir / "logs" / f"{slot.label}.log"
            # On a persistent resource: a warm worker of its pool runs the replica.
            warm = self.spec.persistent_resource_id and run_warm(
                self.job.root,
                resource_id=self.spec.persistent_resource_id,
                label=slot.label,
                command=command,
                env={**inherited, **env},
                log=log,
            )
            process: subprocess.Popen[bytes] | WarmProcess
            start: str | None
            if warm:
                process, start = warm, warm.start
            else:
                process, start = start_process(command, log, {**inherited, **env})
            self.processes.append(process)
            status = ReplicaStatus(
                pool=slot.pool,
                index=slot.index,
                state=ReplicaState.RUNNING,
                pid=process.pid,
                log=str(log),
                start=start,
            )
            self.replicas.append(status)
            if (self.job.root / HOLD_FILE).exists():
                signal_replica(status, signal.SIGSTOP)
            _log.info("started %s (pid %d): %s", slot.label, process.pid, " ".join(command))

    @property
    def chief_metric_file(self) -> Path:
        """Only the chief's reports count, as on Vertex."""
        return self.run_dir / "hypertune" / "output.metrics"

    def poll(self) -> bool | None:
        """Reap exited replicas and decide the outcome (True: succeeded); None while the
        job still runs."""
        if self.succeeded is not None:
            return self.succeeded
        scheduling = self.spec.scheduling
        limit = scheduling.timeout.total_seconds() if "timeout" in scheduling else None
        if limit is not None and time.monotonic() - self.started_at > limit:
            what = f"trial {self.trial_id}" if self.trial_id else "the job"
            return self._finish(f"{what} ran longer than its timeout of {limit:g}s")
        for replica, process in zip(self.replicas, self.processes, strict=True):
            if replica.state is not ReplicaState.RUNNING or (code := process.poll()) is None:
                continue
            replica.exit_code = code
            replica.state = ReplicaState.SUCCEEDED if code == 0 else ReplicaState.FAILED
            if code != 0:
                # Vertex's words (a signal is its container's status, 128 + the signal),
                # then where the log is and its tail.
                return self._finish(
                    f"The replica {WORKERPOOLS[replica.pool]}-{replica.index} exited with a "
                    f"non-zero status of {code if code > 0 else 128 - code}. "
                    "Termination reason: Error."
                    f"{' (trial ' + self.trial_id + ')' if self.trial_id else ''} "
                    f"Its log: {replica.log}, last lines:\n{log_tail(Path(replica.log))}"
                )
        if self.replicas and self.replicas[0].exit_code == 0:
            now = time.monotonic()
            if self.chief_done_at is None:
                self.chief_done_at = now
            workers = [r for r in self.replicas if r.pool == WORKER]
            if all(r.exit_code is not None for r in workers) or (
                now - self.chief_done_at > WORKER_GRACE_SECONDS
            ):
                return self._finish(None)
        return None

    def _finish(self, error_message: str | None) -> bool:
        self.error_message = error_message
        self.succeeded = error_message is None
        # Parameter servers and evaluators never exit by themselves; stray children of
        # finished replicas would outlive the job otherwise.
        self.terminate()
        return self.succeeded

    def terminate(self) -> None:
        """Stop every replica's process group (used by cancel, failure and success)."""
        running = [r.state is ReplicaState.RUNNING for r in self.replicas]
        stop_process_groups([p.pid for p in self.processes])
        for replica, process, was_running in zip(
            self.replicas, self.processes, running, strict=True
        ):
            if was_running:
                replica.state = ReplicaState.KILLED
                with contextlib.suppress(subprocess.TimeoutExpired):
                    replica.exit_code = process.wait(timeout=TERM_GRACE_SECONDS)
        for gpus in self.held_gpus:
            self.gpus.release(gpus)
        self.held_gpus.clear()
