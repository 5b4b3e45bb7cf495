"""Real TensorFlow, tiny generated data, CPU: training, saving, resume, MWMS, hypertune.

Every run is a real ``python -m trainer.task`` process with the environment Vertex would
give it, so these tests cover the entry point exactly as the image and the local backend
run it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trainer.config import PREEMPT_AFTER_EPOCH_ENV
from trainer.metric import HYPERTUNE_METRIC_TAG

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240
TINY = ["--data", "synthetic", "--image-size", "32", "--batch-size-per-replica", "16"]


def trainer_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIP_", "CLOUD_ML_")) and k not in ("TF_CONFIG", "CLUSTER_SPEC")
    }
    # One intra/inter-op thread pool each keeps several processes civil on a small machine.
    env.update(TF_CPP_MIN_LOG_LEVEL="2", OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    env.update(extra)
    return env


def start(args: Sequence[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "trainer.task", *args],
            cwd=REPO,
            env=dict(env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


@dataclass(frozen=True)
class Run:
    returncode: int
    log: str


def run(args: Sequence[str], env: Mapping[str, str], log: Path) -> Run:
    process = start(args, env, log)
    returncode = process.wait(timeout=TIMEOUT_S)
    return Run(returncode, log.read_text())


def start_epochs(log: str) -> list[int]:
    return [int(m) for m in re.findall(r"start_epoch=(\d+) ", log)]


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def served_probabilities(model_dir: Path, instances: int = 2) -> Any:
    """The exported model's ``serving_default`` on JPEGs of two sizes: (instances, classes)."""
    import numpy as np
    import tensorflow as tf

    loaded = tf.saved_model.load(str(model_dir))
    serve = loaded.signatures["serving_default"]
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (40 + 9 * i, 32, 3), dtype=np.uint8) for i in range(instances)]
    encoded = tf.constant([tf.io.encode_jpeg(image).numpy() for image in images])
    probabilities = serve(image_bytes=encoded)["probabilities"].numpy()
    assert np.all((probabilities >= 0) & (probabilities <= 1))
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    return probabilities


@pytest.mark.slow
def test_single_process_exports_a_savedmodel_that_serves_one_probability_per_class(
    horses_run: tuple[Path, Run],
) -> None:
    base, _ = horses_run
    assert (base / "model" / "saved_model.pb").is_file()
    assert served_probabilities(base / "model").shape == (2, 2)


@pytest.mark.slow
def test_hypertune_file_holds_accuracy_per_epoch_ending_with_final_val_accuracy(
    horses_run: tuple[Path, Run],
) -> None:
    base, result = horses_run
    lines = (base / "hypertune" / "output.metrics").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["global_step"] for r in records] == ["1", "2", "3"]
    assert all(r["trial"] == "3" and HYPERTUNE_METRIC_TAG in r for r in records)
    logged = re.findall(r"epoch=3/3 .*val_accuracy=([0-9.]+)", result.log)
    assert logged, result.log[-2000:]
    assert float(records[-1][HYPERTUNE_METRIC_TAG]) == pytest.approx(float(logged[0]), abs=1e-4)


@pytest.mark.slow
def test_checkpoints_and_tensorboard_go_to_the_vertex_dirs(horses_run: tuple[Path, Run]) -> None:
    base, result = horses_run
    assert f"checkpoints -> {base / 'checkpoints'}," in result.log
    # A completed fit removes its backup: nothing is left for a later job to "resume".
    assert not (base / "checkpoints" / "chief").exists()
    assert list((base / "logs" / "train").glob("events.out.tfevents.*"))
    assert list((base / "logs" / "validation").glob("events.out.tfevents.*"))
    assert start_epochs(result.log) == [1]


@pytest.mark.slow
def test_killed_run_resumes_from_its_latest_checkpoint(tmp_path: Path) -> None:
    # The first run is killed (the trainer's test hook: SIGKILL, no chance to clean up)
    # right after epoch 1's checkpoint; the second run trains epochs 2 and 3.
    args = ["--workload", "horses_or_humans", *TINY, "--job-dir", str(tmp_path / "job")]
    args += ["--epochs", "3", "--synthetic-examples", "32"]
    checkpoints = tmp_path / "job" / "checkpoints" / "chief"

    first = run(args, trainer_env(**{PREEMPT_AFTER_EPOCH_ENV: "1"}), tmp_path / "first.log")
    assert first.returncode == -signal.SIGKILL, first.log[-3000:]
    state = (checkpoints / "checkpoint").read_text()
    assert 'model_checkpoint_path: "ckpt-1"' in state, state
    assert not (tmp_path / "job" / "model").exists()

    second = run(args, trainer_env(), tmp_path / "second.log")
    assert second.returncode == 0, second.log[-3000:]
    # One checkpoint per epoch: after ckpt-1 the restarted run starts at epoch 2.
    assert start_epochs(second.log) == [2]
    assert "epoch=3/3" in second.log
    assert "epoch=1/" not in second.log
    assert (tmp_path / "job" / "model" / "saved_model.pb").is_file()
    assert not checkpoints.exists()


@pytest.mark.slow
def test_two_process_multi_worker_cluster(tmp_path: Path) -> None:
    # Vertex's TF_CONFIG; AI Platform's ``master`` and CLUSTER_SPEC give the same role
    # (tests/trainer/test_cluster.py), which is all the trainer builds its strategy from.
    chief, worker = (f"localhost:{port}" for port in free_ports(2))
    args = ["--workload", "horses_or_humans", *TINY, "--epochs", "2"]
    args += ["--synthetic-examples", "64", "--job-dir", str(tmp_path / "job")]
    # Both workers share a host, and a cache directory, here.
    args += ["--cache-dir", str(tmp_path / "cache")]
    processes = {}
    for task_type in ("chief", "worker"):
        cluster = {"chief": [chief], "worker": [worker]}
        tf_config = {"cluster": cluster, "task": {"type": task_type, "index": 0}}
        env = trainer_env(TF_CONFIG=json.dumps(tf_config))
        processes[task_type] = start(args, env, tmp_path / f"{task_type}.log")
    for process in processes.values():
        process.wait(timeout=TIMEOUT_S)
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in processes}
    for name, process in processes.items():
        assert process.returncode == 0, f"{name}:\n{logs[name][-3000:]}"
        assert "2 replicas in sync" in logs[name]
    assert served_probabilities(tmp_path / "job" / "model").shape == (2, 2)
    temp_dirs = re.findall(r"saves into temporary dir (\S+)", logs["worker"])
    assert len(temp_dirs) == 1
    assert not Path(temp_dirs[0]).exists()
    assert "removed temporary dir" in logs["worker"]
    assert "saves into temporary dir" not in logs["chief"]
    # One complete cache per replica and split (train, test), none half-written.
    caches = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(caches) == 4, caches
    assert sum("chief0-of2" in name for name in caches) == 2
    assert sum("worker0-of2" in name for name in caches) == 2
    assert not any(".partial-" in name for name in caches)
    for log in logs.values():
        assert "decoded cache: disk" in log


def test_evaluator_exits_cleanly_without_training(tmp_path: Path) -> None:
    tf_config = json.dumps(
        {"cluster": {"chief": ["c:1"], "evaluator": ["e:1"]}, "task": {"type": "evaluator"}}
    )
    args = ["--workload", "horses_or_humans", "--job-dir", str(tmp_path)]
    result = run(args, trainer_env(TF_CONFIG=tf_config), tmp_path / "evaluator.log")
    assert result.returncode == 0, result.log
    assert "not part of the training cluster" in result.log
    assert not (tmp_path / "model").exists()


def test_parameter_server_cluster_is_a_clear_error(tmp_path: Path) -> None:
    spec = {
        "cluster": {"workerpool0": ["c:1"], "workerpool2": ["p:1"]},
        "task": {"type": "workerpool0", "index": 0},
    }
    args = ["--workload", "cassava", "--job-dir", str(tmp_path)]
    result = run(args, trainer_env(CLUSTER_SPEC=json.dumps(spec)), tmp_path / "ps.log")
    assert result.returncode == 2
    assert "drop worker pool 2 (ps)" in result.log
