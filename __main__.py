"""The Pulumi program of this repo's stacks: a user's program like any other.

It reads the stack's YAML through the public adapter (``vt.load_stack``: every config
problem listed before anything is registered) and declares the same public resources a
user's program would.
"""

import pulumi

import vertex_training as vt

stack = vt.load_stack()
platform = vt.TrainingPlatform("platform", stack.platform)
jobs = {name: vt.declare_job(name, args.on(platform)) for name, args in stack.jobs.items()}
vt.log_stack_cost(platform, jobs.values(), budget=stack.config.budget)
models, endpoints = stack.serving.declare(platform, jobs)


def _job_output(job: vt.CustomJob | vt.HyperparameterTuningJob) -> dict[str, object]:
    """Per job: its name, state, console URL, model directory and end time; a tuning job
    adds its trial table (each trial's state, parameters and final metrics) and the best
    trial, chosen by the study's first metric and its goal."""
    entry: dict[str, object] = {
        "name": job.job_name,
        "state": job.state,
        "consoleUrl": job.console_url,
        "modelDir": job.model_dir,
        "endTime": job.end_time,
    }
    if isinstance(job, vt.HyperparameterTuningJob):
        entry["bestTrial"] = job.best_trial
        entry["trials"] = job.trials
    return entry


pulumi.export("environment", platform.environment)
pulumi.export("project", platform.project)
pulumi.export("region", platform.region)
pulumi.export("bucketUrl", platform.bucket_url)
pulumi.export("repositoryUrl", platform.repository_url)
pulumi.export("imageReference", platform.image("trainer"))
pulumi.export("workbenchUrl", platform.workbench_url)
pulumi.export("trainingServiceAccount", platform.training_service_account)
pulumi.export("workbenchServiceAccount", platform.workbench_service_account)
pulumi.export("tensorboard", platform.tensorboard)
pulumi.export("tensorboardUrl", platform.tensorboard_url)
pulumi.export("jobs", {name: _job_output(job) for name, job in jobs.items()})
served = stack.serving.outputs(models, endpoints)
pulumi.export("models", served["models"])
pulumi.export("endpoints", served["endpoints"])
