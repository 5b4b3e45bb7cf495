"""One CustomJob (or one tuning trial) as a set of local processes, driven by polling.

Non-blocking on purpose: the supervisor of a tuning job polls several trials' clusters
from one loop, and checks for cancellation between polls.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_training._project import project_root
from vertex_training.jobs.backends.local._store import ReplicaStatus, process_start_time
from vertex_training.jobs.backends.local.environment import (
    GpuAllocator,
    ReplicaSlot,
    active_pools,
    job_spec_json,
    local_bucket_paths,
    plan_replicas,
    replica_command,
    replica_environment,
)
from vertex_training.jobs.view import CustomJobSpec, PoolRole

_log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
"""How often the supervisor polls its replicas (and a study its trials)."""
WORKER_GRACE_SECONDS = 30.0
"""After the chief succeeds, how long MWMS workers get to finish their own (collective)
save before they are stopped; parameter servers and evaluators are stopped at once."""
TERM_GRACE_SECONDS = 5.0
"""Between SIGTERM and SIGKILL when stopping a replica's process group."""
LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 4000


class ClusterOutcome(enum.Enum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - chars * 2))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    tail = "\n".join(text.splitlines()[-lines:])
    return tail[-chars:]


def kill_process_group(pgid: int, sig: int) -> bool:
    """Signal a whole process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        _log.warning("not allowed to signal process group %d", pgid)
        return False
    return True


def stop_process_groups(pgids: Sequence[int], grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM every group, wait up to ``grace`` for them to go, then SIGKILL the rest."""
    alive = [p for p in pgids if kill_process_group(p, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _group_exists(p)]
    for pgid in alive:
        kill_process_group(pgid, signal.SIGKILL)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A group whose only members are zombies still "exists"; those are reaped by their
    # parent (us, via Popen.poll) so treat a reaped leader with no others as gone.
    return _group_has_live_member(pgid)


def _group_has_live_member(pgid: int) -> bool:
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        after = stat.rsplit(")", 1)[1].split()
        # after[0] is the state, after[2] the process group id.
        if after[2] == str(pgid) and after[0] not in ("Z", "X"):
            return True
    return False


VERTEX_OWNED_PREFIXES = ("AIP_", "CLOUD_ML_")
VERTEX_OWNED_NAMES = frozenset({"TF_CONFIG", "CLUSTER_SPEC"})


def inherited_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """This machine's environment (PATH, PYTHONPATH, ...) without the variables Vertex
    owns: a replica must never see a TF_CONFIG or trial id leaked from whoever submitted
    the job, only the ones we set for it."""
    return {
        k: v
        for k, v in environ.items()
        if k not in VERTEX_OWNED_NAMES and not k.startswith(VERTEX_OWNED_PREFIXES)
    }


@dataclass
class _Replica:
    slot: ReplicaSlot
    command: list[str]
    env: dict[str, str]
    log_path: Path
    gpus: tuple[str, ...] | None
    process: subprocess.Popen[bytes] | None = None
    start: str | None = None
    exit_code: int | None = None
    killed: bool = False


@dataclass
class ClusterRun:
    """The replicas of one CustomJobSpec (one job, or one trial of a tuning job)."""

    spec: CustomJobSpec
    job_body: Mapping[str, Any]
    """The same CustomJobSpec as submitted (REST JSON): TF_CONFIG's ``job``."""
    job_id: str
    run_dir: Path
    """Logs and hypertune files go here (``logs/``, ``hypertune/``)."""
    base_output_dir: str | None
    """The job's ``baseOutputDirectory`` as a local path; None when it has none (then no
    AIP_* directory is set, as on Vertex)."""
    gpus: GpuAllocator
    trial_id: str | None = None
    extra_args: tuple[str, ...] = ()
    """Appended to every pool's args (a trial's ``--param=value`` flags, as Vertex does)."""
    gcs_root: Path | None = None
    """``<root>/gcs``: where ``gs://b/...`` and ``/gcs/b/...`` in args and env point."""
    decoded_cache: Path | None = None
    """``<root>/decoded-cache``: the trainer's disk cache, shared by the root's replicas."""
    project: str = "local"
    region: str = "local"
    replicas: list[_Replica] = field(default_factory=list)
    started_at: float | None = None
    chief_done_at: float | None = None
    outcome: ClusterOutcome | None = None
    error_message: str | None = None

    def prepare(self) -> None:
        """Resolve every replica's command and environment; raises before any process runs."""
        slots = plan_replicas(self.spec)
        args_by_pool = {
            i: [
                local_bucket_paths(arg, self.gcs_root)
                for arg in (*pool.container.args, *self.extra_args)
            ]
            for i, pool in enumerate(self.spec.worker_pools)
            if pool is not None and pool.container is not None
        }
        job = job_spec_json(self.job_body, args_by_pool)
        pools = dict(active_pools(self.spec))
        (self.run_dir / "logs").mkdir(parents=True, exist_ok=True)
        (self.run_dir / "hypertune").mkdir(parents=True, exist_ok=True)
        for slot in slots:
            pool = pools[slot.pool]
            gpus = self.gpus.acquire(pool.machine.accelerator_count)
            env = replica_environment(
                slots=slots,
                me=slot,
                pool=pool,
                job=job,
                job_id=self.job_id,
                base_output_dir=self.base_output_dir,
                trial_id=self.trial_id,
                metric_file=str(self.metric_file_for(slot)),
                cuda_visible_devices=",".join(gpus) if gpus is not None else None,
                project=self.project,
                region=self.region,
                gcs_root=self.gcs_root,
                decoded_cache=self.decoded_cache,
            )
            self.replicas.append(
                _Replica(
                    slot=slot,
                    command=replica_command(pool, args_by_pool[int(slot.pool)]),
                    env=env,
                    log_path=self.run_dir / "logs" / f"{slot.label}.log",
                    gpus=gpus,
                )
            )
        for key in ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR"):
            if key in self.replicas[0].env:
                Path(self.replicas[0].env[key]).mkdir(parents=True, exist_ok=True)

    def metric_file_for(self, slot: ReplicaSlot) -> Path:
        if slot.pool is PoolRole.CHIEF:
            return self.chief_metric_file
        return self.run_dir / "hypertune" / f"{slot.label}.metrics"

    @property
    def chief_metric_file(self) -> Path:
        """Only the chief's reports count, as on Vertex."""
        return self.run_dir / "hypertune" / "output.metrics"

    @property
    def model_dir(self) -> str | None:
        """AIP_MODEL_DIR as the Vertex backend reports it (no trailing slash); None without
        a base output directory."""
        if not self.replicas or "AIP_MODEL_DIR" not in self.replicas[0].env:
            return None
        return self.replicas[0].env["AIP_MODEL_DIR"].rstrip("/")

    def start(self) -> None:
        if not self.replicas:
            self.prepare()
        self.started_at = time.monotonic()
        base_env = inherited_environment(os.environ)
        for replica in self.replicas:
            with open(replica.log_path, "ab") as log:
                replica.process = subprocess.Popen(
                    replica.command,
                    # The project (it holds trainer/): what the supervisor runs in.
                    cwd=project_root(),
                    env={**base_env, **replica.env},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    # Its own process group, so cancel kills whatever the replica spawned.
                    start_new_session=True,
                )
            replica.start = process_start_time(replica.process.pid)
            _log.info(
                "started %s (pid %d): %s",
                replica.slot.label,
                replica.process.pid,
                " ".join(replica.command),
            )

    def poll(self) -> ClusterOutcome | None:
        """Reap exited replicas and decide the outcome; None while the job still runs."""
        if self.outcome is not None:
            return self.outcome
        for replica in self.replicas:
            if replica.process is None or replica.exit_code is not None:
                continue
            code = replica.process.poll()
            if code is None:
                continue
            replica.exit_code = code
            if code != 0 and not replica.killed:
                tail = log_tail(replica.log_path)
                self.error_message = (
                    f"replica {replica.slot.label} exited with code {code}"
                    f"{' (trial ' + self.trial_id + ')' if self.trial_id else ''}; "
                    f"log {replica.log_path}, last lines:\n{tail}"
                )
                self._finish(ClusterOutcome.FAILED)
                return self.outcome
        chief = self.replicas[0]
        if chief.exit_code == 0:
            now = time.monotonic()
            if self.chief_done_at is None:
                self.chief_done_at = now
            workers_done = all(
                r.exit_code is not None for r in self.replicas if r.slot.pool is PoolRole.WORKER
            )
            if workers_done or now - self.chief_done_at > WORKER_GRACE_SECONDS:
                self._finish(ClusterOutcome.SUCCEEDED)
        return self.outcome

    def timed_out(self) -> bool:
        limit = self.spec.timeout_seconds
        return (
            limit is not None
            and self.started_at is not None
            and time.monotonic() - self.started_at > limit
        )

    def fail(self, message: str) -> None:
        self.error_message = message
        self._finish(ClusterOutcome.FAILED)

    def terminate(self) -> None:
        """Stop every replica's process group (used by cancel, failure and success)."""
        for replica in self.replicas:
            if replica.exit_code is None:
                replica.killed = True
        pgids = [r.process.pid for r in self.replicas if r.process is not None]
        stop_process_groups(pgids)
        for replica in self.replicas:
            if replica.process is not None and replica.exit_code is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    replica.exit_code = replica.process.wait(timeout=TERM_GRACE_SECONDS)
            self.gpus.release(replica.gpus)
            replica.gpus = None

    def _finish(self, outcome: ClusterOutcome) -> None:
        self.outcome = outcome
        # Parameter servers and evaluators never exit by themselves; stray children of
        # finished replicas would outlive the job otherwise.
        self.terminate()

    def statuses(self) -> list[ReplicaStatus]:
        out = []
        for replica in self.replicas:
            if replica.process is None:
                state = "PENDING"
            elif replica.exit_code is None:
                state = "RUNNING"
            elif replica.killed:
                state = "KILLED"
            else:
                state = "SUCCEEDED" if replica.exit_code == 0 else "FAILED"
            out.append(
                ReplicaStatus(
                    pool=int(replica.slot.pool),
                    index=replica.slot.index,
                    state=state,
                    pid=replica.process.pid if replica.process else None,
                    exit_code=replica.exit_code,
                    log=str(replica.log_path),
                    trial_id=self.trial_id,
                    start=replica.start,
                )
            )
        return out
