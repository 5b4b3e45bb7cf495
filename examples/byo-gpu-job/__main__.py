"""Bring your own: an existing project, bucket, service account and image, and one
multi-worker GPU job (a chief and three workers, 8 x H100 each) on them."""

import pulumi

import vertex_training as vt

config = pulumi.Config()

platform = vt.TrainingPlatform(
    "team",
    vt.TrainingPlatformArgs(
        environment="dev",
        project=config.require("project"),
        region="us-central1",
        existing_bucket=config.require("bucket"),
        training_service_account=config.require("serviceAccount"),
        images={"trainer": config.require("image")},
        enable_apis=False,  # the platform team manages the project's APIs
    ),
)

pool = vt.WorkerPool(
    machine_type="a3-highgpu-8g",
    accelerator=vt.Accelerator("NVIDIA_H100_80GB", 8),
    image=platform.image("trainer"),
    args=["--workload", "cassava", "--epochs", "5", "--data", "tfds"],
)
job = vt.CustomJob(
    "resnet",
    vt.CustomJobArgs(
        platform=platform,
        chief=pool,
        workers=pool.with_replicas(3),
        scheduling=vt.Scheduling(timeout_seconds=4 * 3600),
        labels={"team": "vision"},
    ),
)

pulumi.export("state", job.state)
pulumi.export("modelDir", job.model_dir)
pulumi.export("consoleUrl", job.console_url)
