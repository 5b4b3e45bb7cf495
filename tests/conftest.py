from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained horses_or_humans model, exported by the trainer (32 px, 2 classes):
    what the prediction server loads, and what the engine tests' stand-in trainer leaves
    where a trained model would be."""
    from tests.trainer.test_export import export

    path = tmp_path_factory.mktemp("served") / "model"
    assert export(path) == str(path)
    return path
