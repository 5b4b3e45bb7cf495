"""The environment Vertex AI gives each replica, rebuilt for processes on this machine.

Pure functions (no processes started here) so the conformance of every variable can be
unit-tested and then checked again in processes that really ran.

Vertex facts honoured (Vertex "distributed training" docs,
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import CustomJobSpec, WorkerPoolSpec
from google.protobuf import json_format

from vertex_training._project import project_root
from vertex_training.jobs.backends.base import JobRefusedError

_log = logging.getLogger(__name__)

CHIEF, WORKER, PARAMETER_SERVER, EVALUATOR = range(4)
"""Vertex's worker pools, by their index in ``workerPoolSpecs``."""
TF_CONFIG_TASK_TYPES = ("chief", "worker", "ps", "evaluator")
"""TF_CONFIG's task type of each pool, by index. Vertex uses ``chief`` (not AI Platform's
legacy ``master``), which TF2 needs."""
WORKERPOOLS = tuple(f"workerpool{pool}" for pool in range(len(TF_CONFIG_TASK_TYPES)))
"""CLUSTER_SPEC's name of each pool, by index."""

TRAINER_MODULE = "trainer.task"
CACHE_DIR_ENV = "TRAINER_CACHE_DIR"
CACHE_MAX_BYTES_ENV = "TRAINER_CACHE_MAX_BYTES"
"""The trainer's decoded-cache variables (``trainer.config``; the trainer imports nothing
from here, nor this from it: a test holds the names equal)."""
DECODED_CACHE = "decoded-cache"
"""The directory of a backend root that every replica's trainer caches decoded images in."""
LOCAL_DECODED_CACHE_MAX_BYTES = 16 * 1024**3
"""The bound on a local root's decoded cache (cassava at 224 px: ~3.3 GB a replica), unless
``$TRAINER_CACHE_MAX_BYTES`` is set where the job is submitted."""
LOCAL_TRAINER_IMAGES = frozenset({"trainer", "trainer:local"})
"""Image names that mean "this repository's trainer" without any registry prefix."""
VERTEX_OWNED_PREFIXES = ("AIP_", "CLOUD_ML_")
VERTEX_OWNED_NAMES = frozenset({"TF_CONFIG", "CLUSTER_SPEC"})


@dataclass(frozen=True)
class ReplicaSlot:
    """One replica of one pool, with the localhost address it listens on."""

    pool: int
    index: int
    address: str

    @property
    def label(self) -> str:
        return f"{WORKERPOOLS[self.pool]}-{self.index}"


def plan_replicas(spec: CustomJobSpec) -> list[ReplicaSlot]:
    """Every replica of the job in Vertex order, each with a free localhost port (an empty
    placeholder pool has no replica but keeps the later pools' numbers)."""
    replicas = [
        (pool, index)
        for pool, spec_of_pool in enumerate(spec.worker_pool_specs)
        for index in range(spec_of_pool.replica_count)
    ]
    # Held open together, so that no port is handed out twice.
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in replicas]
        for sock in sockets:
            sock.bind(("localhost", 0))
        ports = [sock.getsockname()[1] for sock in sockets]
    return [
        ReplicaSlot(pool, index, f"localhost:{port}")
        for (pool, index), port in zip(replicas, ports, strict=True)
    ]


def _cluster_variable(
    slots: Sequence[ReplicaSlot],
    me: ReplicaSlot,
    job: Mapping[str, Any],
    trial_id: str | None,
    *,
    pool_names: Sequence[str],
    with_evaluator: bool,
) -> str:
    """TF_CONFIG (``pool_names``: chief / worker / ps / evaluator; the evaluator has a task
    but is not in the cluster) or CLUSTER_SPEC (workerpool0..3, the evaluator included)."""
    cluster: dict[str, list[str]] = {}
    for slot in slots:
        if with_evaluator or slot.pool != EVALUATOR:
            cluster.setdefault(pool_names[slot.pool], []).append(slot.address)
    task: dict[str, Any] = {"type": pool_names[me.pool], "index": me.index}
    if trial_id is not None:
        task["trial"] = trial_id
    return json.dumps({"cluster": cluster, "task": task, "environment": "cloud", "job": dict(job)})


def cluster_job(spec: CustomJobSpec, args: Sequence[Sequence[str]]) -> dict[str, Any]:
    """TF_CONFIG's ``job``: the CustomJobSpec in proto field names (as Vertex writes it),
    each pool's ``args`` as its replicas get them."""
    job = json_format.MessageToDict(CustomJobSpec.pb(spec), preserving_proto_field_name=True)
    for pool_json, pool_args in zip(job.get("worker_pool_specs", ()), args, strict=True):
        if "container_spec" in pool_json:
            pool_json["container_spec"]["args"] = list(pool_args)
    return job


_REFERENCE = re.compile(r"\$(\$|\(([^)]*)\))")


def expand_references(value: str, variables: Mapping[str, str]) -> str:
    """Kubernetes ``EnvVar.value`` expansion, which Vertex documents for ``env``:
    ``$(VAR)`` becomes VAR's value when VAR is known and stays as written otherwise;
    ``$$`` is an escaped ``$`` (so ``$$(VAR)`` gives the literal ``$(VAR)``)."""

    def expand(match: re.Match[str]) -> str:
        name = match.group(2)
        if name is None:
            return "$"
        return variables.get(name, match.group(0))

    return _REFERENCE.sub(expand, value)


_BUCKET_PATH = re.compile(r"(^|[=,\s])(gs://|/gcs/)(?=[^/\s])")


def local_bucket_paths(value: str, gcs_root: Path | str) -> str:
    """``gs://b/p`` and ``/gcs/b/p`` (Vertex's Cloud Storage FUSE mount) at the start of
    ``value`` or after ``=``, ``,`` or a space, as ``<gcs_root>/b/p``."""
    root = str(gcs_root).rstrip("/")
    return _BUCKET_PATH.sub(lambda m: f"{m.group(1)}{root}/", value)


def output_dirs(base: str | None, trial_id: str | None) -> dict[str, str]:
    """The AIP_* directories of a job (or trial) with base output directory ``base``."""
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


def replica_environment(
    *,
    slots: Sequence[ReplicaSlot],
    me: ReplicaSlot,
    pool: WorkerPoolSpec,
    job: Mapping[str, Any],
    job_name: str,
    base_output_dir: str | None,
    trial_id: str | None,
    metric_file: str,
    cuda_visible_devices: str | None,
    root: Path,
) -> dict[str, str]:
    """The variables Vertex sets on ``me``, then the pool's own ``env`` on top (see the
    module docstring), for a job of the backend root ``root``: its bucket paths point
    into ``<root>/gcs``, and the trainer's disk cache is the root's one bounded
    ``DECODED_CACHE`` instead of each replica's temp directory."""
    env = {
        CACHE_DIR_ENV: str(root / DECODED_CACHE),
        CACHE_MAX_BYTES_ENV: os.environ.get(
            CACHE_MAX_BYTES_ENV, str(LOCAL_DECODED_CACHE_MAX_BYTES)
        ),
    }
    if len(slots) > 1:  # distributed training only
        env["TF_CONFIG"] = _cluster_variable(
            slots, me, job, trial_id, pool_names=TF_CONFIG_TASK_TYPES, with_evaluator=False
        )
    env.update(
        {
            "CLUSTER_SPEC": _cluster_variable(
                slots, me, job, trial_id, pool_names=WORKERPOOLS, with_evaluator=True
            ),
            # The job's name is projects/P/locations/L/<kind>/<id>.
            "CLOUD_ML_PROJECT_ID": job_name.split("/")[1],
            "CLOUD_ML_REGION": job_name.split("/")[3],
            "CLOUD_ML_JOB_ID": job_name.rsplit("/", 1)[-1],
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
    for variable in pool.container_spec.env:
        env[variable.name] = local_bucket_paths(
            expand_references(variable.value, env), root / "gcs"
        )
    return env


def inherited_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """This machine's environment (PATH, PYTHONPATH, ...) without the variables Vertex
    owns: a replica must never see a TF_CONFIG or trial id leaked from whoever submitted
    the job, only the ones we set for it."""
    return {
        k: v
        for k, v in environ.items()
        if k not in VERTEX_OWNED_NAMES and not k.startswith(VERTEX_OWNED_PREFIXES)
    }


def replica_pythonpath(environ: Mapping[str, str]) -> str:
    """The ``PYTHONPATH`` of a job's supervisor and replicas: the project (replicas import
    its ``trainer``), then wherever this library was imported from (a checkout on no path
    but the caller's), then ``environ``'s own."""
    # The directory holding the vertex_training package (this file is
    # vertex_training/local/runners/environment.py), without importing the top level.
    library = Path(__file__).resolve().parents[3]
    existing = environ.get("PYTHONPATH")
    entries = [str(project_root()), str(library), *([existing] if existing else [])]
    return os.pathsep.join(dict.fromkeys(entries))


def is_repo_trainer_image(image_uri: str) -> bool:
    """True for this repository's trainer image: ``trainer:local``, or any registry path
    whose repository name is ``trainer`` (``.../trainer:tag``, ``.../trainer@sha256:...``)."""
    last = image_uri.split("@", 1)[0].rsplit("/", 1)[-1]
    return image_uri in LOCAL_TRAINER_IMAGES or last.split(":", 1)[0] == "trainer"


def replica_command(pool: WorkerPoolSpec, args: Sequence[str]) -> list[str]:
    """What a replica runs: the pool's command and args, or this repo's trainer.

    No Docker engine is needed: our image's entrypoint is ``python -m trainer.task``, so
    the same module runs from the checkout with this interpreter.
    """
    container = pool.container_spec
    if container.command:
        command = list(container.command)
        # "python" inside the image is the image's interpreter; here it must be the one
        # that has the project's dependencies.
        if command[0] in ("python", "python3"):
            command[0] = sys.executable
        return [*command, *args]
    if is_repo_trainer_image(container.image_uri):
        return [sys.executable, "-m", TRAINER_MODULE, *args]
    raise JobRefusedError(
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
        self._use = dict.fromkeys(gpu_ids, 0)

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
        # sorted is stable: among equally used GPUs, the machine's order decides.
        picked = tuple(sorted(self._use, key=self._use.__getitem__)[:count])
        if any(self._use[g] for g in picked):
            _log.warning("GPUs %s are shared between replicas", ",".join(picked))
        for gpu in picked:
            self._use[gpu] += 1
        return picked

    def release(self, gpus: Sequence[str] | None) -> None:
        for gpu in gpus or ():
            self._use[gpu] = max(0, self._use[gpu] - 1)
