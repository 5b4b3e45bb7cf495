"""The Pulumi program: load the stack's config, build the platform, export its handles.

Everything with logic lives in ``vertex_training/``; this file only wires it together.
"""

import pulumi

from vertex_training.cost.stack import log_stack_estimates
from vertex_training.jobs.program import declare_jobs, job_outputs
from vertex_training.platform.build import build_platform
from vertex_training.stack.config import load_pulumi_config

OUTPUT_ENVIRONMENT = "environment"
OUTPUT_PROJECT = "project"
OUTPUT_REGION = "region"
OUTPUT_BUCKET_URL = "bucketUrl"
OUTPUT_REPOSITORY_URL = "repositoryUrl"
OUTPUT_IMAGE_REFERENCE = "imageReference"
OUTPUT_WORKBENCH_URL = "workbenchUrl"
OUTPUT_TRAINING_SERVICE_ACCOUNT = "trainingServiceAccount"
OUTPUT_WORKBENCH_SERVICE_ACCOUNT = "workbenchServiceAccount"
OUTPUT_JOBS = "jobs"

# Fails with every config problem listed before a single resource is registered.
config = load_pulumi_config()
# What the jobs will cost, before anything runs (a diagnostic in `pulumi preview`).
log_stack_estimates(config)
platform = build_platform(config)
jobs = declare_jobs(
    platform, config.jobs.jobs, strict_hardware=config.general.strict_hardware_checks
)

pulumi.export(OUTPUT_ENVIRONMENT, platform.environment.value)
pulumi.export(OUTPUT_PROJECT, platform.project)
pulumi.export(OUTPUT_REGION, platform.region)
pulumi.export(OUTPUT_BUCKET_URL, platform.bucket_url)
pulumi.export(OUTPUT_REPOSITORY_URL, platform.repository_url)
pulumi.export(OUTPUT_IMAGE_REFERENCE, platform.image_reference)
pulumi.export(OUTPUT_WORKBENCH_URL, platform.workbench_url)
pulumi.export(OUTPUT_TRAINING_SERVICE_ACCOUNT, platform.training_service_account)
pulumi.export(OUTPUT_WORKBENCH_SERVICE_ACCOUNT, platform.workbench_service_account)
pulumi.export(OUTPUT_JOBS, job_outputs(jobs))
