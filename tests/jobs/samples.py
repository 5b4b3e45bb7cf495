"""The codelab jobs as specs: shared by the golden, validation and provider tests."""

from __future__ import annotations

from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.spec import (
    ContainerSpec,
    CustomJobSpec,
    DiscreteParameterSpec,
    DoubleParameterSpec,
    MachineSpec,
    MetricGoal,
    MetricSpec,
    ScaleType,
    StudySpec,
    TuningJobSpec,
    WorkerPoolSpec,
)

IMAGE = "us-central1-docker.pkg.dev/p/training/trainer@sha256:" + "ab" * 32


def cassava(accelerator: str | None = "NVIDIA_TESLA_V100", workers: int = 1) -> CustomJobSpec:
    """The MWMS codelab: chief + workers on n1-standard-8, 1 V100 each (or CPU only)."""
    machine = MachineSpec("n1-standard-8", accelerator, 1 if accelerator else 0)
    container = ContainerSpec(IMAGE, args=("--workload", "cassava", "--epochs", "5"))
    return CustomJobSpec(
        display_name="multiworker-cassava",
        worker_pools=(
            WorkerPoolSpec(machine, container),
            WorkerPoolSpec(machine, container, replica_count=workers),
        ),
        base_output_directory="gs://p-bucket/jobs/cassava",
        service_account="training@p.iam.gserviceaccount.com",
        labels=(("codelab", "cassava"),),
    )


def horses_or_humans(max_trials: int = 6, parallel: int = 2) -> TuningJobSpec:
    machine = MachineSpec("n1-standard-4", "NVIDIA_TESLA_V100", 2)
    container = ContainerSpec(IMAGE, args=("--workload", "horses_or_humans"))
    return TuningJobSpec(
        display_name="horses-humans",
        trial_job=CustomJobSpec(
            display_name="horses-humans",
            worker_pools=(WorkerPoolSpec(machine, container),),
            base_output_directory="gs://p-bucket/jobs/horses-humans",
        ),
        study=StudySpec(
            metrics=(MetricSpec(HYPERTUNE_METRIC_TAG, MetricGoal.MAXIMIZE),),
            parameters=(
                DoubleParameterSpec("learning_rate", 0.001, 1, ScaleType.LOG),
                DoubleParameterSpec("momentum", 0, 1, ScaleType.LINEAR),
                DiscreteParameterSpec("num_units", (64, 128, 512)),
            ),
        ),
        max_trial_count=max_trials,
        parallel_trial_count=parallel,
    )
