"""The stacks' program, a user's program like any other: the stack's YAML -> the public Args."""

import pulumi

import vertex_training as vt

stack = vt.load_stack()
platform = vt.TrainingPlatform("platform", stack.platform)
capacity, placed = stack.capacity.declare(platform, stack.jobs)
jobs = {name: vt.declare_job(name, args.on(platform)) for name, args in placed.items()}
models, endpoints = stack.serving.declare(platform, jobs)
vt.log_stack_cost(
    platform, jobs.values(), endpoints.values(), capacity.values(), budget=stack.config.budget
)


def _job_output(job: vt.CustomJob | vt.HyperparameterTuningJob) -> dict[str, object]:
    """Per job: its name, state, console URL, model directory and end time; a tuning job adds
    its trials (state, parameters, final metrics) and the best by the study's first metric."""
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


def _served_output(resource: vt.Model | vt.Endpoint) -> dict[str, object]:
    """Per model: its Model Registry name and the version this stack registered; per
    endpoint: its name and the URL that answers Vertex's predict JSON."""
    if isinstance(resource, vt.Model):
        return {"name": resource.name, "versionId": resource.version_id}
    return {"name": resource.name, "predictUrl": resource.predict_url}


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
pulumi.export("models", {name: _served_output(m) for name, m in models.items()})
pulumi.export("endpoints", {name: _served_output(e) for name, e in endpoints.items()})
