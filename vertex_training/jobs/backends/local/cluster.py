"""One CustomJob (or one tuning trial) as a set of local processes, driven by polling.

Non-blocking on purpose: the supervisor of a tuning job polls several trials' clusters
from one loop, and checks for cancellation between polls.
"""

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
from google.protobuf import json_format

from vertex_training._project import project_root
from vertex_training.jobs.backends.local._store import (
    ReplicaState,
    ReplicaStatus,
    proc_stat,
    process_start_time,
)
from vertex_training.jobs.backends.local.environment import (
    CHIEF,
    WORKER,
    GpuAllocator,
    ReplicaSlot,
    local_bucket_paths,
    plan_replicas,
    replica_command,
    replica_environment,
)

_log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
"""How often the supervisor polls its replicas (and a study its trials)."""
WORKER_GRACE_SECONDS = 30.0
"""After the chief succeeds, how long MWMS workers get to finish their own (collective)
save before they are stopped; parameter servers and evaluators are stopped at once."""
TERM_GRACE_SECONDS = 5.0
"""Between SIGTERM and SIGKILL when stopping a replica's process group."""
VERTEX_OWNED_PREFIXES = ("AIP_", "CLOUD_ML_")
VERTEX_OWNED_NAMES = frozenset({"TF_CONFIG", "CLUSTER_SPEC"})


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
            alive.append(pgid)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _group_alive(p)]
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


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

    @property
    def state(self) -> ReplicaState:
        if self.process is None:
            return ReplicaState.PENDING
        if self.exit_code is None:
            return ReplicaState.RUNNING
        if self.killed:
            return ReplicaState.KILLED
        return ReplicaState.SUCCEEDED if self.exit_code == 0 else ReplicaState.FAILED


@dataclass
class ClusterRun:
    """The replicas of one CustomJobSpec (one job, or one trial of a tuning job)."""

    spec: CustomJobSpec
    job_id: str
    run_dir: Path
    """Logs and hypertune files go here (``logs/``, ``hypertune/``)."""
    root: Path
    """The backend root: ``gs://b/...`` and ``/gcs/b/...`` in args and env point into
    ``<root>/gcs``, and the trainer's decoded cache is ``<root>/decoded-cache``."""
    base_output_dir: str | None
    """The job's ``baseOutputDirectory`` as a local path; None when it has none (then no
    AIP_* directory is set, as on Vertex)."""
    gpus: GpuAllocator
    trial_id: str | None = None
    extra_args: tuple[str, ...] = ()
    """Appended to every pool's args (a trial's ``--param=value`` flags, as Vertex does)."""
    replicas: list[_Replica] = field(default_factory=list)
    started_at: float | None = None
    chief_done_at: float | None = None
    succeeded: bool | None = None
    """None while the cluster runs."""
    error_message: str | None = None

    def start(self) -> None:
        """Resolve every replica's command and environment, then start them all."""
        gcs = self.root / "gcs"
        pools = self.spec.worker_pool_specs
        args = [
            [local_bucket_paths(a, gcs) for a in (*pool.container_spec.args, *self.extra_args)]
            for pool in pools
        ]
        # TF_CONFIG's ``job``: the CustomJobSpec in proto field names (as Vertex writes
        # it), each pool's args as its replicas get them.
        job = json_format.MessageToDict(
            CustomJobSpec.pb(self.spec), preserving_proto_field_name=True
        )
        for pool_json, pool_args in zip(job.get("worker_pool_specs", ()), args, strict=True):
            if "container_spec" in pool_json:
                pool_json["container_spec"]["args"] = pool_args
        slots = plan_replicas(self.spec)
        for directory in ("logs", "hypertune"):
            (self.run_dir / directory).mkdir(parents=True, exist_ok=True)
        for slot in slots:
            pool = pools[slot.pool]
            gpus = self.gpus.acquire(pool.machine_spec.accelerator_count)
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
                gcs_root=gcs,
                decoded_cache=self.root / "decoded-cache",
            )
            command = replica_command(pool, args[slot.pool])
            log_path = self.run_dir / "logs" / f"{slot.label}.log"
            self.replicas.append(_Replica(slot, command, env, log_path, gpus))
        for key in ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR"):
            if key in self.replicas[0].env:
                Path(self.replicas[0].env[key]).mkdir(parents=True, exist_ok=True)
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

    def metric_file_for(self, slot: ReplicaSlot) -> Path:
        if slot.pool == CHIEF:
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
        model_dir = self.replicas[0].env.get("AIP_MODEL_DIR") if self.replicas else None
        return model_dir.rstrip("/") if model_dir else None

    def poll(self) -> bool | None:
        """Reap exited replicas and decide the outcome (True: succeeded); None while the
        job still runs."""
        if self.succeeded is not None:
            return self.succeeded
        scheduling = self.spec.scheduling
        limit = scheduling.timeout.total_seconds() if "timeout" in scheduling else None
        if limit is not None and time.monotonic() - (self.started_at or 0.0) > limit:
            what = f"trial {self.trial_id}" if self.trial_id else "the job"
            return self.fail(f"{what} ran longer than its timeout of {limit:g}s")
        for replica in self.replicas:
            if replica.process is None or replica.exit_code is not None:
                continue
            code = replica.process.poll()
            if code is None:
                continue
            replica.exit_code = code
            if code != 0 and not replica.killed:
                return self.fail(
                    f"replica {replica.slot.label} exited with code {code}"
                    f"{' (trial ' + self.trial_id + ')' if self.trial_id else ''}; "
                    f"log {replica.log_path}, last lines:\n{log_tail(replica.log_path)}"
                )
        if self.replicas and self.replicas[0].exit_code == 0:
            now = time.monotonic()
            if self.chief_done_at is None:
                self.chief_done_at = now
            workers_done = all(
                r.exit_code is not None for r in self.replicas if r.slot.pool == WORKER
            )
            if workers_done or now - self.chief_done_at > WORKER_GRACE_SECONDS:
                self._finish(True)
        return self.succeeded

    def fail(self, message: str) -> bool:
        self.error_message = message
        return self._finish(False)

    def terminate(self) -> None:
        """Stop every replica's process group (used by cancel, failure and success)."""
        for replica in self.replicas:
            if replica.exit_code is None:
                replica.killed = True
        stop_process_groups([r.process.pid for r in self.replicas if r.process is not None])
        for replica in self.replicas:
            if replica.process is not None and replica.exit_code is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    replica.exit_code = replica.process.wait(timeout=TERM_GRACE_SECONDS)
            self.gpus.release(replica.gpus)
            replica.gpus = None

    def _finish(self, succeeded: bool) -> bool:
        self.succeeded = succeeded
        # Parameter servers and evaluators never exit by themselves; stray children of
        # finished replicas would outlive the job otherwise.
        self.terminate()
        return succeeded

    def statuses(self) -> list[ReplicaStatus]:
        return [
            ReplicaStatus(
                pool=replica.slot.pool,
                index=replica.slot.index,
                state=replica.state,
                pid=replica.process.pid if replica.process else None,
                exit_code=replica.exit_code,
                log=str(replica.log_path),
                trial_id=self.trial_id,
                start=replica.start,
            )
            for replica in self.replicas
        ]
