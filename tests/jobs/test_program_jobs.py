"""The declared jobs in the program, under mocks: specs, wiring, outputs, config errors."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.bodies import discrete, double
from tests.pulumi_mocks import PulumiRun, run_program, stack_file_config
from trainer.metric import HYPERTUNE_METRIC_TAG
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import PROVIDER_VERSION
from vertex_training.jobs.view import (
    CustomJobView,
    HyperparameterTuningJobView,
    JobView,
    MetricGoal,
    ParameterSpec,
    SearchAlgorithm,
    read_view,
)
from vertex_training.stack.config import PROJECT_NAME, ConfigError, parse_stack_config

CUSTOM = "pulumi-python:dynamic/vertex:CustomJob"
TUNING = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
DEV_FILE = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
JOBS_KEY = f"{PROJECT_NAME}:jobs"


@pytest.fixture(scope="module")
def dev() -> PulumiRun:
    return run_program("dev", stack_file_config(DEV_FILE))


def spec_of(run: PulumiRun, name: str) -> JobView:
    registration = run.named(name)
    kind = JobKind.CUSTOM_JOB if registration.type == CUSTOM else JobKind.HYPERPARAMETER_TUNING_JOB
    view, unreadable = read_view(kind, dict(registration.inputs["spec"]))
    assert view is not None, unreadable
    return view


def test_dev_declares_the_codelab_jobs(dev: PulumiRun) -> None:
    assert sorted(r.name for r in dev.of_type(CUSTOM)) == [
        "cassava-mwms",
        "cassava-mwms-cpu",
    ]
    assert [r.name for r in dev.of_type(TUNING)] == ["horses-humans-tuning"]
    platform = dev.one("vertex-training:index:TrainingPlatform")
    for registration in dev.of_type(CUSTOM) + dev.of_type(TUNING):
        # The program's own resources, waiting for the platform's parts.
        assert registration.parent in (None, "") or registration.parent != platform.urn


def test_cassava_is_the_codelab_mwms_job(dev: PulumiRun) -> None:
    spec = spec_of(dev, "cassava-mwms")
    assert isinstance(spec, CustomJobView)
    assert spec.display_name == "multiworker-cassava"
    chief, workers = spec.job_spec.worker_pool_specs
    assert chief is not None and workers is not None
    for pool in (chief, workers):
        assert pool.machine_spec.machine_type == "n1-standard-8"
        assert (pool.machine_spec.accelerator_type, pool.machine_spec.accelerator_count) == (
            "NVIDIA_TESLA_V100",
            1,
        )
        assert pool.replica_count == 1
        assert pool.container_spec is not None
        assert pool.container_spec.args[:2] == ("--workload", "cassava")
    cpu = spec_of(dev, "cassava-mwms-cpu").trial_job.worker_pool_specs
    assert all(p is not None and p.machine_spec.accelerator_type is None for p in cpu)
    assert [p.machine_spec.machine_type for p in cpu if p] == ["n1-standard-8"] * 2


def test_horses_or_humans_is_the_codelab_tuning_job(dev: PulumiRun) -> None:
    spec = spec_of(dev, "horses-humans-tuning")
    assert isinstance(spec, HyperparameterTuningJobView)
    (pool,) = spec.trial_job.worker_pool_specs
    assert pool is not None
    assert (
        pool.machine_spec.machine_type,
        pool.machine_spec.accelerator_type,
        pool.machine_spec.accelerator_count,
    ) == (
        "n1-standard-4",
        "NVIDIA_TESLA_V100",
        2,
    )
    assert pool.container_spec is not None
    assert pool.container_spec.args == ("--workload", "horses_or_humans")
    [metric] = spec.study_spec.metrics
    assert (metric.metric_id, metric.goal) == (HYPERTUNE_METRIC_TAG, MetricGoal.MAXIMIZE)
    assert spec.study_spec.parameters == tuple(
        ParameterSpec.model_validate(p)
        for p in (
            double("learning_rate", 0.001, 1, "UNIT_LOG_SCALE"),
            double("momentum", 0, 1),
            discrete("num_units", (64, 128, 512)),
        )
    )
    assert spec.study_spec.algorithm is SearchAlgorithm.BAYESIAN
    assert (spec.max_trial_count, spec.parallel_trial_count) == (6, 2)


def test_jobs_use_the_environment(dev: PulumiRun) -> None:
    outputs = dev.outputs
    for name in ("cassava-mwms", "cassava-mwms-cpu", "horses-humans-tuning"):
        spec = spec_of(dev, name)
        trial = spec.trial_job
        assert (
            trial.base_output_directory.output_uri_prefix == f"{outputs['bucketUrl']}/jobs/{name}"
        )
        assert trial.service_account == outputs["trainingServiceAccount"]
        for pool in trial.worker_pool_specs:
            assert pool is not None and pool.container_spec is not None
            assert pool.container_spec.image_uri == outputs["imageReference"]
            assert "@sha256:" in pool.container_spec.image_uri
        labels = dict(spec.labels)
        assert (
            labels["job"] == name and labels["stack"] == "dev" and labels["managed-by"] == "pulumi"
        )


def test_jobs_run_on_vertex_in_the_region_after_the_environment(dev: PulumiRun) -> None:
    services = {r.urn for r in dev.of_type("gcp:projects/service:Service")}
    bucket = dev.one("gcp:storage/bucket:Bucket")
    for registration in dev.of_type(CUSTOM) + dev.of_type(TUNING):
        inputs = registration.inputs
        assert inputs["backend"]["kind"] == "vertex"
        assert inputs["backend"]["project"] == "vertex-training-dev"
        assert inputs["backend"]["location"] == "us-central1"
        assert inputs["provider_version"] == PROVIDER_VERSION
        assert inputs["wait"] is True
        assert inputs["identity"] == f"{PROJECT_NAME}/dev/{registration.name}"
        assert services <= set(registration.dependencies)
        assert any(
            dep.startswith(bucket.urn.rsplit("::", 1)[0]) for dep in registration.dependencies
        )


def test_provider_is_pickled_by_reference_without_credentials(dev: PulumiRun) -> None:
    for registration in dev.of_type(CUSTOM) + dev.of_type(TUNING):
        pickled = base64.b64decode(registration.inputs["__provider"])
        assert b"vertex_training.jobs.resources" in pickled and b"JobProvider" in pickled
        assert len(pickled) < 512
        for word in (b"token", b"credential", b"ya29"):
            assert word not in pickled
        assert "ya29" not in json.dumps(registration.inputs["spec"])


def test_every_job_is_a_stack_output(dev: PulumiRun) -> None:
    jobs = dev.outputs["jobs"]
    assert set(jobs) == {"cassava-mwms", "cassava-mwms-cpu", "horses-humans-tuning"}
    assert set(jobs["cassava-mwms"]) == {"name", "state", "consoleUrl", "modelDir", "endTime"}
    assert "bestTrial" in jobs["horses-humans-tuning"]


def test_local_stack_jobs_run_on_the_local_backend() -> None:
    local = stack_file_config(PROJECT_ROOT / "stacks" / "Pulumi.local.yaml")
    # The stack's model and endpoint name its jobs, which this run replaces.
    local = {k: v for k, v in local.items() if not k.endswith((":models", ":endpoints"))}
    args = ["--workload", "cassava", "--epochs", "1", "--data", "synthetic"]
    job = {"name": "smoke", "chief": {"machineType": "n1-standard-4", "args": args}}
    run = run_program("local", {**local, JOBS_KEY: json.dumps([job])})
    registration = run.named("smoke")
    assert registration.inputs["backend"]["kind"] == "local"
    assert registration.inputs["backend"]["local_root"] == str(PROJECT_ROOT / ".local-vertex")
    spec = CustomJobView.model_validate(dict(registration.inputs["spec"])).trial_job
    assert spec.base_output_directory.output_uri_prefix == f"{run.outputs['bucketUrl']}/jobs/smoke"
    assert spec.service_account is None
    assert not [r for r in run.registrations if r.type.startswith("gcp:")]


def test_no_jobs_no_job_resources() -> None:
    prod = stack_file_config(PROJECT_ROOT / "stacks" / "Pulumi.prod.yaml")
    run = run_program("prod", {**prod, JOBS_KEY: "[]"})
    assert not [r for r in run.registrations if ":dynamic/" in r.type]
    assert run.outputs["jobs"] == {}


# ---------------------------------------------------------------- config errors


DEV = {f"{PROJECT_NAME}:environment": "dev", "gcp:project": "my-project"}


def problems(jobs: Any, **extra: str) -> dict[str, str]:
    """Config key (without the namespace) -> problem, for every problem found."""
    with pytest.raises(ConfigError) as caught:
        parse_stack_config("dev", {**DEV, **extra, JOBS_KEY: json.dumps(jobs)})
    # What the user reads after the key: the message (and the Vertex field, where it has one).
    found = {
        p.caller.removeprefix(f"{PROJECT_NAME}:"): p.message
        + (f" (Vertex field {p.path})" if p.path else "")
        for p in caught.value.findings
    }
    assert all(key.startswith("jobs") for key in found), caught.value
    return found


V100 = {"machineType": "n1-standard-8"}
TUNING_BASE = {"trial": {"chief": {"machineType": "n1-standard-4"}}}


def test_a_bad_gpu_count_names_the_job_key_and_the_vertex_field() -> None:
    job = {"name": "j", "chief": {**V100, "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 3}}}
    [(key, problem)] = problems([job]).items()
    assert key == "jobs[0].chief.accelerator.count"
    assert "valid counts: 1, 2, 4, 8" in problem
    assert "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount" in problem


def test_gpus_are_checked_in_the_stack_region() -> None:
    job = {"name": "j", "chief": {**V100, "accelerator": {"type": "NVIDIA_TESLA_V100"}}}
    found = problems([job], **{f"{PROJECT_NAME}:region": "us-west2"})
    assert (
        "NVIDIA_TESLA_V100 is not offered in region us-west2"
        in (found["jobs[0].chief.accelerator.type"])
    )


def test_unknown_job_keys_are_errors() -> None:
    found = problems([{"name": "j", "chief": {"machineTyp": "n1-standard-4"}}])
    assert "did you mean 'machineType'" in found["jobs[0].chief.machineTyp"]


def test_tuning_job_needs_its_study() -> None:
    found = problems([{"name": "t", **TUNING_BASE}])
    for key in ("study", "maxTrialCount", "parallelTrialCount"):
        assert found[f"jobs[0].{key}"] == "missing"
    # A key of an older shape is an unknown key like any other, with what was meant.
    old = problems([{"name": "t", **TUNING_BASE, "kind": "tuning", "workload": "cassava"}])
    assert old["jobs[0].kind"].startswith("unknown key")
    assert old["jobs[0].workload"].startswith("unknown key")


def test_job_names_are_unique_and_well_formed() -> None:
    chief = {"chief": {"machineType": "n1-standard-4"}}
    assert "repeats" in problems([{"name": "a", **chief}, {"name": "a", **chief}])["jobs[1].name"]
    assert "'A_b' is not a job name" in problems([{"name": "A_b", **chief}])["jobs[0].name"]


def test_grid_over_a_double_is_refused() -> None:
    job = {
        "name": "t",
        **TUNING_BASE,
        "maxTrialCount": 4,
        "parallelTrialCount": 5,
        "study": {
            "algorithm": "grid",
            "parameters": [
                {"type": "DoubleParameter", "parameterId": "lr", "minValue": 0, "maxValue": 1}
            ],
        },
    }
    found = problems([job])
    assert (
        "GRID_SEARCH cannot enumerate the double parameter 'lr'"
        in (found["jobs[0].study.parameters[0]"])
    )
    # A study refused where it is built leaves no job to judge on the platform: the job's
    # own problem shows with a study that can be built.
    job["study"]["algorithm"] = "random"  # type: ignore[index]
    assert "5 exceeds maxTrialCount 4" in problems([job])["jobs[0].parallelTrialCount"]


def test_declared_args_follow_the_trainer_contract(dev: PulumiRun) -> None:
    from trainer.config import build_parser

    parser = build_parser()
    for name in ("cassava-mwms", "cassava-mwms-cpu", "horses-humans-tuning"):
        spec = spec_of(dev, name)
        for pool in spec.trial_job.worker_pool_specs:
            assert pool is not None and pool.container_spec is not None
            args = list(pool.container_spec.args)
            if isinstance(spec, HyperparameterTuningJobView):
                # Vertex appends one --<parameter_id>=<value> per tuned parameter.
                args += ["--learning_rate=0.01", "--momentum=0.5", "--num_units=64"]
            parsed = parser.parse_args(args)
            assert parsed.workload in ("cassava", "horses_or_humans")
