"""The real trainer (``python -m trainer.task``) on the local backend: TensorFlow, tiny data.

The two-replica MWMS job and the study with the real trainer run in
``tests/engine/test_lifecycle.py`` (the whole local stack, through the engine: one cluster
of two, one model, one model per trial)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.bodies import custom_job, pool
from vertex_training.jobs.backends.local import LocalBackend
from vertex_training.jobs.records import JobKind, JobState

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TINY = ("--data=synthetic", "--synthetic-examples=16", "--epochs=1", "--batch-size-per-replica=4")


def _trainer_pool(args: tuple[str, ...]) -> dict[str, Any]:
    # No command: the image is ours, so the backend runs `python -m trainer.task` itself.
    return pool("n1-standard-4", image="trainer:local", args=args)


def test_single_replica_trainer_writes_through_gcs_paths_without_aip_variables(
    tmp_path: Path,
) -> None:
    """No baseOutputDirectory (no AIP_*) and no TF_CONFIG: the trainer takes its flags, and
    the ``/gcs/...`` path it is given, as on Vertex, lands in the local bucket."""
    backend = LocalBackend(str(tmp_path / "root"))
    # The small CNN: ResNet50 trains in tests/trainer/test_training.py and the engine tests.
    args = ("--workload=horses_or_humans", *TINY, "--image-size=32")
    spec = custom_job(
        _trainer_pool((*args, "--model-dir=/gcs/b/single/model")), display_name="one", output=None
    )
    record = backend.wait(backend.submit(JobKind.CUSTOM_JOB, spec).name, timeout=540)
    assert record.state is JobState.SUCCEEDED, record.error_message
    assert record.model_dir is None
    models = list((backend.root / "gcs").rglob("saved_model.pb"))
    assert models == [backend.root / "gcs" / "b" / "single" / "model" / "saved_model.pb"]
