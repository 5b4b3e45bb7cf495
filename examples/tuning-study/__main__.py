"""A tuning study on a platform this program creates: a conditional parameter (momentum
only for SGD), median early stopping, and trials on Spot capacity."""

from pathlib import Path

import pulumi

import vertex_training as vt

REPO = Path(__file__).resolve().parents[2]  # this repository: its trainer image

platform = vt.TrainingPlatform(
    "tuning",
    vt.TrainingPlatformArgs(
        environment="dev",
        project=pulumi.Config().require("project"),
        region="us-central1",
        images={
            "trainer": vt.ImageBuild(
                context=REPO,
                dockerfile=REPO / "docker" / "trainer.Dockerfile",
                sources=["trainer", "docker", "requirements.lock"],
            )
        },
    ),
)

study = vt.HyperparameterTuningJob(
    "horses",
    vt.HyperparameterTuningJobArgs(
        platform=platform,
        trial=vt.TrialJob(
            chief=vt.WorkerPool(
                machine_type="n1-standard-4",
                accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 1),
                image=platform.image("trainer"),
                args=["--workload", "horses_or_humans"],
            ),
            # Spot trials cost about a third; a preempted trial is retried by the service.
            scheduling=vt.Scheduling(strategy="SPOT", timeout_seconds=3600),
        ),
        study=vt.Study(
            metrics=[vt.Metric("accuracy", "maximize")],
            parameters=[
                vt.DoubleParameter("learning_rate", 0.001, 1, scale="log"),
                # Momentum is SGD's: Adam trials do not search it.
                vt.CategoricalParameter(
                    "optimizer",
                    ["sgd", "adam"],
                    conditional={"sgd": [vt.DoubleParameter("momentum", 0, 1)]},
                ),
                vt.DiscreteParameter("num_units", [64, 128, 512]),
            ],
            early_stopping=vt.MedianStopping(),
        ),
        max_trial_count=12,
        parallel_trial_count=3,
    ),
)

pulumi.export("bestTrial", study.best_trial)
pulumi.export("trials", study.trials)
