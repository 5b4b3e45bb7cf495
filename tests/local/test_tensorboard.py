"""``python -m vertex_training.stack tensorboard`` (``make tensorboard``): the real
TensorBoard serves the local jobs' logs on a free port; a scalar written where a local job
writes it is read back over TensorBoard's HTTP API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = "bucket/jobs/horses/3/logs/validation"
"""A tuning trial's run, as the local backend lays it out: <bucket>/<base>/<trial>/logs/."""


def _write_scalars(run_dir: Path) -> None:
    import tensorflow as tf

    writer = tf.summary.create_file_writer(str(run_dir))
    with writer.as_default():
        for step, value in ((1, 0.5), (2, 0.75)):
            tf.summary.scalar("epoch_accuracy", value, step=step)
    writer.close()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_tensorboard_serves_a_local_jobs_scalars(tmp_path: Path) -> None:
    root = tmp_path / "root"
    # Where the local stack's jobs write (its bucket is a directory of the local root).
    _write_scalars(root / RUN)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vertex_training.stack",
            "tensorboard",
            "--stack",
            "local",
            "--root",
            str(root),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"TensorBoard on (\S+): (http://\S+/)", line)
        assert match, line
        assert match.group(1) == str(root)
        url = match.group(2)
        assert not url.endswith(":6006/"), "a free port, not TensorBoard's default"
        deadline = time.monotonic() + 60
        while RUN not in _get(f"{url}data/runs"):
            assert time.monotonic() < deadline, "the run never appeared"
            time.sleep(0.5)
        query = urllib.parse.urlencode({"run": RUN, "tag": "epoch_accuracy"})
        points = _get(f"{url}data/plugin/scalars/scalars?{query}")
        # [wall_time, step, value] per point.
        assert [(step, value) for _, step, value in points] == [(1, 0.5), (2, 0.75)]
    finally:
        process.terminate()
        process.wait(timeout=30)
