"""A study that runs on this machine: a local platform creates nothing in Google Cloud,
and its jobs run as local processes (Optuna picks the trials)."""

import sys
from pathlib import Path

import pulumi

import vertex_training as vt

HERE = Path(__file__).resolve().parent

platform = vt.TrainingPlatform(
    "laptop", vt.TrainingPlatformArgs(environment="local", local_root=HERE / ".local-vertex")
)

study = vt.HyperparameterTuningJob(
    "objective",
    vt.HyperparameterTuningJobArgs(
        platform=platform,
        trial=vt.TrialJob(
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                image="local/objective:latest",  # any image: the command runs here
                command=[sys.executable, str(HERE / "objective.py")],
            )
        ),
        study=vt.Study(
            metrics=[vt.Metric("score", "maximize")],
            parameters=[
                vt.DoubleParameter("x", 0, 1),
                vt.CategoricalParameter(
                    "shape",
                    ["bowl", "ridge"],
                    conditional={"bowl": [vt.DoubleParameter("y", 0, 1)]},
                ),
            ],
            algorithm="random",
        ),
        max_trial_count=4,
        parallel_trial_count=2,
        poll_interval_seconds=0.5,
    ),
)

pulumi.export("bestTrial", study.best_trial)
pulumi.export("trials", study.trials)
