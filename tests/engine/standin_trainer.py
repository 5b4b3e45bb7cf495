"""A stand-in for ``python -m trainer.task``, for the engine tests of plumbing (a
language, the provider, a change through the engine) rather than of training: the real
trainer trains through the engine in test_lifecycle.py (the local stack: its two-replica
cluster and its study) and in test_serving.py. ``use_standin_trainer`` puts this file in
a project copy as ``trainer/task.py``, so the jobs' bodies stay the program's own and the
local backend runs this, in a fraction of a second, where it would train.

It does what the local backend reads back from a trainer: the chief of a trial reports
the study's metric (``accuracy``, here the trial's learning rate) through hypertune, and
the chief writes a model where ``AIP_MODEL_DIR`` says: a copy of the SavedModel
``$STANDIN_TRAINER_MODEL`` names where a test serves it, else a placeholder file. While
the file named by
``$STANDIN_TRAINER_HOLD`` exists, each replica waits: a test that must catch a job
running creates it, and removes it to let the job end, instead of racing real training.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

HOLD_ENV = "STANDIN_TRAINER_HOLD"
MODEL_ENV = "STANDIN_TRAINER_MODEL"
HOLD_LIMIT_S = 600


def main(argv: list[str]) -> int:
    params = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    chief = task.get("type", "chief") == "chief"
    print(f"stand-in trainer: {task or 'single replica'}, args {argv}", flush=True)
    hold = os.environ.get(HOLD_ENV)
    deadline = time.monotonic() + HOLD_LIMIT_S
    while hold and Path(hold).exists():
        if time.monotonic() > deadline:
            print(f"stand-in trainer: {hold} still there after {HOLD_LIMIT_S} s", flush=True)
            return 1
        time.sleep(0.05)
    if chief and os.environ.get("CLOUD_ML_TRIAL_ID"):
        import hypertune

        hypertune.HyperTune().report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag="accuracy",
            metric_value=float(params.get("learning_rate", 0.5)),
            global_step=1,
        )
    model_dir = os.environ.get("AIP_MODEL_DIR")
    if chief and model_dir and os.environ.get(MODEL_ENV):
        shutil.copytree(os.environ[MODEL_ENV], model_dir, dirs_exist_ok=True)
    elif chief and model_dir:
        Path(model_dir).mkdir(parents=True, exist_ok=True)
        (Path(model_dir) / "saved_model.pb").write_bytes(b"stand-in")
    print("stand-in trainer: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
