"""The environment Vertex AI gives each replica, rebuilt for processes on this machine.

Pure functions (no processes started here) so the conformance of every variable can be
unit-tested and then checked again in processes that really ran.

Vertex facts honoured (SPEC.md section 4, Vertex "distributed training" docs,
https://cloud.google.com/vertex-ai/docs/training/distributed-training):
- ``TF_CONFIG`` on every replica of a distributed job (more than one replica in all):
  cluster ``chief`` (pool 0), ``worker`` (pool 1), ``ps`` (pool 2); the evaluator
  (pool 3) gets ``task.type = evaluator`` but is not part of the cluster;
  ``environment: cloud``; ``job`` is the CustomJobSpec. A single-replica job gets none.
- ``CLUSTER_SPEC`` always: the same with pools named ``workerpool0..3`` (evaluator
  included).
- ``task.trial`` (string, from "1") only in hyperparameter tuning trials.
- ``CLOUD_ML_PROJECT_ID`` / ``CLOUD_ML_REGION``: the job name's project and location
  (``local`` / ``local`` here).
- ``AIP_MODEL_DIR`` / ``AIP_CHECKPOINT_DIR`` / ``AIP_TENSORBOARD_LOG_DIR`` only when the
  job has a ``baseOutputDirectory``: ``<base>/model/``, ``<base>/checkpoints/``,
  ``<base>/logs/``; in a tuning job the base gets the trial id as an extra segment.
- The container's ``env`` values expand ``$(VAR)`` from earlier entries and the service's
  variables (Kubernetes ``EnvVar`` semantics, which Vertex's ``EnvVar.value`` documents).
- ``gs://bucket/...`` and ``/gcs/bucket/...`` (Cloud Storage FUSE) in a replica's args
  and env values name the local bucket directory ``<root>/gcs/bucket/...``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.view import CustomJobSpec, PoolRole, WorkerPoolSpec, snake_case

_log = logging.getLogger(__name__)

TF_CONFIG_TASK_TYPES: Mapping[PoolRole, str] = {
    PoolRole.CHIEF: "chief",
    PoolRole.WORKER: "worker",
    PoolRole.PARAMETER_SERVER: "ps",
    PoolRole.EVALUATOR: "evaluator",
}
"""Vertex uses ``chief`` (not AI Platform's legacy ``master``), which TF2 needs."""

TRAINER_MODULE = "trainer.task"
CACHE_DIR_ENV = "TRAINER_CACHE_DIR"
CACHE_MAX_BYTES_ENV = "TRAINER_CACHE_MAX_BYTES"
"""The trainer's decoded-cache variables (``trainer.config``; the trainer imports nothing
from here, nor this from it: a test holds the names equal)."""
LOCAL_DECODED_CACHE_MAX_BYTES = 16 * 1024**3
"""The bound on a local root's decoded cache (cassava at 224 px: ~3.3 GB a replica), unless
``$TRAINER_CACHE_MAX_BYTES`` is set where the job is submitted."""
LOCAL_TRAINER_IMAGES = frozenset({"trainer", "trainer:local"})
"""Image names that mean "this repository's trainer" without any registry prefix."""


class LocalSpecError(JobRefusedError):
    """A job spec the local backend cannot run; raised before any process starts."""


@dataclass(frozen=True)
class ReplicaSlot:
    """One replica of one pool, with the localhost address it listens on."""

    pool: PoolRole
    index: int
    address: str

    @property
    def workerpool(self) -> str:
        return f"workerpool{int(self.pool)}"

    @property
    def label(self) -> str:
        return f"{self.workerpool}-{self.index}"


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on localhost (held open together so none repeats)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("localhost", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def active_pools(spec: CustomJobSpec) -> list[tuple[PoolRole, WorkerPoolSpec]]:
    return [
        (PoolRole(i), pool)
        for i, pool in enumerate(spec.worker_pools)
        if pool is not None and pool.replica_count > 0
    ]


def plan_replicas(spec: CustomJobSpec, ports: Sequence[int] | None = None) -> list[ReplicaSlot]:
    """Every replica of the job in Vertex order, each with a free localhost port."""
    pools = active_pools(spec)
    total = sum(pool.replica_count for _, pool in pools)
    ports = list(ports) if ports is not None else free_ports(total)
    if len(ports) < total:
        raise ValueError(f"need {total} ports, got {len(ports)}")
    slots: list[ReplicaSlot] = []
    for role, pool in pools:
        for index in range(pool.replica_count):
            slots.append(ReplicaSlot(role, index, f"localhost:{ports[len(slots)]}"))
    return slots


def job_spec_body(kind: JobKind, body: Mapping[str, Any]) -> dict[str, Any]:
    """The body's CustomJobSpec: a CustomJob's ``jobSpec``, a study's ``trialJobSpec``."""
    name = "jobSpec" if kind is JobKind.CUSTOM_JOB else "trialJobSpec"
    found = body.get(name, body.get(snake_case(name)))
    return dict(found or {})


def _snake_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {snake_case(str(k)): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_snake_keys(v) for v in value]
    return value


def job_spec_json(
    job_body: Mapping[str, Any], args_by_pool: Mapping[int, Sequence[str]]
) -> dict[str, Any]:
    """The ``job`` entry of TF_CONFIG / CLUSTER_SPEC: the CustomJobSpec as submitted, in
    proto field names (as Vertex writes it), with each pool's args as the replica gets them."""
    job: dict[str, Any] = _snake_keys(job_body)
    for i, pool in enumerate(job.get("worker_pool_specs") or []):
        container = pool.get("container_spec") if isinstance(pool, dict) else None
        if container is not None and i in args_by_pool:
            container["args"] = list(args_by_pool[i])
    return job


def _cluster_variable(
    slots: Sequence[ReplicaSlot],
    me: ReplicaSlot,
    job: Mapping[str, Any],
    trial_id: str | None,
    *,
    task_type: Callable[[ReplicaSlot], str],
    in_cluster: Callable[[ReplicaSlot], bool],
) -> dict[str, Any]:
    cluster: dict[str, list[str]] = {}
    for slot in slots:
        if in_cluster(slot):
            cluster.setdefault(task_type(slot), []).append(slot.address)
    task: dict[str, Any] = {"type": task_type(me), "index": me.index}
    if trial_id is not None:
        task["trial"] = trial_id
    return {"cluster": cluster, "task": task, "environment": "cloud", "job": dict(job)}


def tf_config(
    slots: Sequence[ReplicaSlot], me: ReplicaSlot, job: Mapping[str, Any], trial_id: str | None
) -> dict[str, Any]:
    """TF_CONFIG: chief / worker / ps; the evaluator has a task but is not in the cluster."""
    return _cluster_variable(
        slots,
        me,
        job,
        trial_id,
        task_type=lambda slot: TF_CONFIG_TASK_TYPES[slot.pool],
        in_cluster=lambda slot: slot.pool is not PoolRole.EVALUATOR,
    )


def cluster_spec(
    slots: Sequence[ReplicaSlot], me: ReplicaSlot, job: Mapping[str, Any], trial_id: str | None
) -> dict[str, Any]:
    """CLUSTER_SPEC: every pool, named workerpool0..3, the evaluator included."""
    return _cluster_variable(
        slots,
        me,
        job,
        trial_id,
        task_type=lambda slot: slot.workerpool,
        in_cluster=lambda slot: True,
    )


def output_dirs(base: str | None, trial_id: str | None) -> dict[str, str]:
    """The AIP_* directories; a tuning trial's base has the trial id appended. None (no
    ``baseOutputDirectory``): Vertex sets none of them."""
    if not base:
        return {}
    root = base.rstrip("/")
    if trial_id is not None:
        root = f"{root}/{trial_id}"
    return {
        "AIP_MODEL_DIR": f"{root}/model/",
        "AIP_CHECKPOINT_DIR": f"{root}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{root}/logs/",
    }


def expand_references(value: str, variables: Mapping[str, str]) -> str:
    """Kubernetes ``EnvVar.value`` expansion, which Vertex documents for ``env``:
    ``$(VAR)`` becomes VAR's value when VAR is known and stays as written otherwise;
    ``$$`` is an escaped ``$`` (so ``$$(VAR)`` gives the literal ``$(VAR)``)."""
    out: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char != "$" or i + 1 >= len(value):
            out.append(char)
            i += 1
            continue
        following = value[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = value.find(")", i + 2)
            if close == -1:
                out.append(value[i:])
                break
            name = value[i + 2 : close]
            out.append(variables[name] if name in variables else value[i : close + 1])
            i = close + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


_BUCKET_PATH = re.compile(r"(^|[=,\s])(gs://|/gcs/)(?=[^/\s])")


def local_bucket_paths(value: str, gcs_root: Path | str | None) -> str:
    """``gs://b/p`` and ``/gcs/b/p`` (Vertex's Cloud Storage FUSE mount) at the start of
    ``value`` or after ``=``, ``,`` or a space, as ``<gcs_root>/b/p``; None: unchanged."""
    if gcs_root is None:
        return value
    root = str(gcs_root).rstrip("/")
    return _BUCKET_PATH.sub(lambda m: f"{m.group(1)}{root}/", value)


def is_distributed(slots: Sequence[ReplicaSlot]) -> bool:
    """More than one replica in all: only then do Vertex's images get a TF_CONFIG."""
    return len(slots) > 1


def replica_environment(
    *,
    slots: Sequence[ReplicaSlot],
    me: ReplicaSlot,
    pool: WorkerPoolSpec,
    job: Mapping[str, Any],
    job_id: str,
    base_output_dir: str | None,
    trial_id: str | None,
    metric_file: str,
    cuda_visible_devices: str | None,
    project: str = "local",
    region: str = "local",
    gcs_root: Path | str | None = None,
    decoded_cache: Path | str | None = None,
) -> dict[str, str]:
    """The variables Vertex sets on ``me``, plus the pool's own ``env`` (which wins, as on
    Vertex where container env is applied on top; each value expanded as Kubernetes does
    and its bucket paths made local). With ``decoded_cache``, the trainer's disk cache goes
    there, bounded, instead of each replica's temp directory."""
    env: dict[str, str] = {}
    if decoded_cache is not None:
        env[CACHE_DIR_ENV] = str(decoded_cache)
        env[CACHE_MAX_BYTES_ENV] = os.environ.get(
            CACHE_MAX_BYTES_ENV, str(LOCAL_DECODED_CACHE_MAX_BYTES)
        )
    # Vertex sets TF_CONFIG for distributed training only: a single-replica job's
    # container sees CLUSTER_SPEC but no TF_CONFIG
    # (https://cloud.google.com/vertex-ai/docs/training/distributed-training).
    if is_distributed(slots):
        env["TF_CONFIG"] = json.dumps(tf_config(slots, me, job, trial_id))
    env.update(
        {
            "CLUSTER_SPEC": json.dumps(cluster_spec(slots, me, job, trial_id)),
            "CLOUD_ML_PROJECT_ID": project,
            "CLOUD_ML_REGION": region,
            "CLOUD_ML_JOB_ID": job_id,
            # hypertune's default path is one shared /tmp file: parallel local trials
            # would overwrite each other, so every replica gets its own file.
            "CLOUD_ML_HP_METRIC_FILE": metric_file,
            **output_dirs(base_output_dir, trial_id),
        }
    )
    if trial_id is not None:
        env["CLOUD_ML_TRIAL_ID"] = trial_id
    if cuda_visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices
    if pool.container is not None:
        for name, value in pool.container.env:
            env[name] = local_bucket_paths(expand_references(value, env), gcs_root)
    return env


def is_repo_trainer_image(image_uri: str) -> bool:
    """True for this repository's trainer image: ``trainer:local``, or any registry path
    whose repository name is ``trainer`` (``.../trainer:tag``, ``.../trainer@sha256:...``)."""
    without_digest = image_uri.split("@", 1)[0]
    last = without_digest.rsplit("/", 1)[-1]
    repository = last.split(":", 1)[0]
    return image_uri in LOCAL_TRAINER_IMAGES or repository == "trainer"


def replica_command(pool: WorkerPoolSpec, args: Sequence[str]) -> list[str]:
    """What a replica runs: the pool's command and args, or this repo's trainer.

    No Docker engine is needed: our image's entrypoint is ``python -m trainer.task``, so
    the same module runs from the checkout with this interpreter.
    """
    container = pool.container
    if container is None:
        raise LocalSpecError(f"{pool.path}: pythonPackageSpec pools run on Vertex only")
    if container.command:
        command = list(container.command)
        # "python" inside the image is the image's interpreter; here it must be the one
        # that has the project's dependencies.
        if command[0] in ("python", "python3"):
            command[0] = sys.executable
        return [*command, *args]
    if is_repo_trainer_image(container.image_uri):
        return [sys.executable, "-m", TRAINER_MODULE, *args]
    raise LocalSpecError(
        f"worker pool image {container.image_uri!r} has no command, and the local backend "
        "can run an image without a command only when it is this repository's trainer "
        "(image 'trainer:local' or a repository named 'trainer'); set container.command"
    )


def detect_gpus() -> list[str]:
    """GPU ids this machine offers: CUDA_VISIBLE_DEVICES when set, else nvidia-smi."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g for g in (x.strip() for x in visible.split(",")) if g and g != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        _log.warning("nvidia-smi failed (%s); running replicas without GPUs", exc)
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


class GpuAllocator:
    """Hands out this machine's GPUs to replicas by their ``accelerator_count``.

    A replica without accelerators gets ``CUDA_VISIBLE_DEVICES=""`` (a CPU machine on
    Vertex); when more GPUs are asked for than are free, the least-used ones are shared
    (a warning says so) rather than refusing to run.
    """

    def __init__(self, gpu_ids: Sequence[str]) -> None:
        self._use = {gpu: 0 for gpu in gpu_ids}

    @property
    def has_gpus(self) -> bool:
        return bool(self._use)

    def acquire(self, count: int) -> tuple[str, ...] | None:
        """GPU ids for one replica; None when this machine has no GPUs (env left alone)."""
        if not self._use:
            return None
        if count > len(self._use):
            _log.warning(
                "a replica asks for %d GPUs but this machine has %d: it gets all of them",
                count,
                len(self._use),
            )
        chosen = sorted(self._use, key=lambda g: (self._use[g], list(self._use).index(g)))
        picked = tuple(chosen[: min(count, len(chosen))])
        if any(self._use[g] for g in picked):
            _log.warning("GPUs %s are shared between replicas", ",".join(picked))
        for gpu in picked:
            self._use[gpu] += 1
        return picked

    def release(self, gpus: Sequence[str] | None) -> None:
        for gpu in gpus or ():
            with contextlib.suppress(KeyError):
                self._use[gpu] = max(0, self._use[gpu] - 1)
