from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.test_training import TINY, Run, run, trainer_env


@pytest.fixture(scope="session")
def horses_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """One single-process horses_or_humans trial with the Vertex variables set, tracing
    steps 2-3 of its first epoch (64 examples in batches of 16: 4 steps an epoch): what
    test_training.py and test_tracking.py read of a finished run."""
    base = tmp_path_factory.mktemp("horses")
    env = trainer_env(
        AIP_MODEL_DIR=str(base / "model"),
        AIP_CHECKPOINT_DIR=str(base / "checkpoints"),
        AIP_TENSORBOARD_LOG_DIR=str(base / "logs"),
        CLOUD_ML_HP_METRIC_FILE=str(base / "hypertune" / "output.metrics"),
        CLOUD_ML_TRIAL_ID="3",
    )
    args = ["--workload", "horses_or_humans", *TINY, "--epochs", "3", "--synthetic-examples", "64"]
    args += ["--learning_rate", "0.05", "--momentum", "0.5", "--num_units", "8"]
    args += ["--profile-steps", "2,3"]
    result = run(args, env, base / "trainer.log")
    assert result.returncode == 0, result.log[-3000:]
    return base, result
