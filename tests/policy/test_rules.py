"""Each policy's check on what the real stacks register: one passing, one violating case.

The violating cases are the real resources with one input changed, or the real stacks
judged under a stricter policy config; nothing is written by hand.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policy import rules
from policy.rules import (
    BUCKET_TYPE,
    CUSTOM_JOB_TYPE,
    TUNING_JOB_TYPE,
    WORKBENCH_TYPE,
    Resource,
)
from tests import PROJECT_ROOT
from tests.policy.conftest import changed, one
from vertex_training.stack.config import load_stack_config
from vertex_training.stack.estimate import estimate_stack

Stacks = dict[str, list[Resource]]


def jobs(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r.type in rules.JOB_TYPES]


def with_spec(resource: Resource, edit: Any) -> Resource:
    spec = copy.deepcopy(dict(resource.props["spec"]))
    edit(spec)
    return changed(resource, spec=spec)


def test_the_stacks_register_what_the_policies_judge(stacks: Stacks) -> None:
    dev = stacks["dev"]
    assert {r.type for r in dev} >= {BUCKET_TYPE, WORKBENCH_TYPE, CUSTOM_JOB_TYPE, TUNING_JOB_TYPE}
    assert len(jobs(dev)) == 3
    assert jobs(stacks["local"]) and not jobs(stacks["prod"])


def test_environment_comes_from_labels_or_config(stacks: Stacks) -> None:
    bucket = one(stacks["prod"], BUCKET_TYPE)
    assert rules.environment_of(bucket, {}) == "prod"
    assert rules.environment_of(bucket, {"environment": "dev"}) == "dev"
    # No stack file is read: what a resource does not say, the pack does not guess.
    unlabelled = changed(bucket, labels={})
    assert rules.environment_of(unlabelled, {}) is None
    assert rules.environment_of(unlabelled, {"environment": "prod"}) == "prod"


def test_an_unlabelled_job_on_the_local_backend_is_local(stacks: Stacks) -> None:
    job = jobs(stacks["local"])[0]
    unlabelled = with_spec(job, lambda spec: spec.pop("labels"))
    assert rules.environment_of(unlabelled, {}) == "local"
    vertex = with_spec(
        one(stacks["dev"], CUSTOM_JOB_TYPE, "cassava-mwms"), lambda s: s.pop("labels")
    )
    assert rules.environment_of(vertex, {}) is None


class TestRequiredLabels:
    def test_labels_the_platform_sets_pass(self, stacks: Stacks) -> None:
        labelled = [r for r in stacks["dev"] if r.type in rules.LABELLED_TYPES]
        assert len(labelled) == 5
        for resource in labelled:
            assert rules.required_labels(resource, ["app", "environment", "stack"]) == []

    def test_team_and_cost_center_are_missing_everywhere(self, stacks: Stacks) -> None:
        labelled = [r for r in stacks["dev"] if r.type in rules.LABELLED_TYPES]
        assert len(labelled) == 5
        for resource in labelled:
            (message,) = rules.required_labels(resource)
            assert message.startswith("missing label(s) team, cost-center"), message


class TestGpus:
    def test_dev_jobs_fit_the_default_caps(self, stacks: Stacks) -> None:
        gpus = {r.name: rules.job_gpus(r) for r in jobs(stacks["dev"])}
        # cassava: 2 replicas x 1 V100; the study: 2 parallel trials x 2 V100.
        assert gpus == {
            "cassava-mwms": 2,
            "cassava-mwms-cpu": 0,
            "horses-humans-tuning": 4,
        }
        assert len(jobs(stacks["dev"])) == 3
        for job in jobs(stacks["dev"]):
            assert rules.job_gpu_limit(job, "dev", rules.DEFAULT_MAX_GPUS_PER_JOB) == []
        assert rules.stack_gpu_limit(stacks["dev"], "dev", rules.DEFAULT_MAX_GPUS_PER_STACK) == []

    def test_a_lower_cap_refuses_the_study(self, stacks: Stacks) -> None:
        study = one(stacks["dev"], TUNING_JOB_TYPE)
        assert rules.job_gpu_limit(study, "dev", {"dev": 2}) == [
            "the job holds 4 accelerators at once; dev allows 2 per job"
        ]
        (message,) = rules.stack_gpu_limit(stacks["dev"], "dev", {"dev": 5})
        assert message.startswith("the stack's jobs hold 6 accelerators if they run at once")

    def test_local_jobs_hold_no_gpu(self, stacks: Stacks) -> None:
        assert (
            rules.stack_gpu_limit(stacks["local"], "local", rules.DEFAULT_MAX_GPUS_PER_STACK) == []
        )


class TestAllowedAccelerators:
    def test_dev_v100_and_prod_t4_are_allowed(self, stacks: Stacks) -> None:
        allowed = rules.DEFAULT_ALLOWED_ACCELERATORS
        with_gpus = [r for r in stacks["dev"] if rules.accelerators_of(r)]
        assert {r.name for r in with_gpus} == {"cassava-mwms", "horses-humans-tuning"}
        for resource in with_gpus:
            assert rules.allowed_accelerators(resource, "dev", allowed) == []
        notebook = one(stacks["prod"], WORKBENCH_TYPE)
        assert rules.accelerators_of(notebook) == [
            ("gceSetup.acceleratorConfigs", "NVIDIA_TESLA_T4")
        ]
        assert rules.allowed_accelerators(notebook, "prod", allowed) == []

    def test_a_type_outside_the_list_is_refused(self, stacks: Stacks) -> None:
        cassava = one(stacks["dev"], CUSTOM_JOB_TYPE, "cassava-mwms")
        problems = rules.allowed_accelerators(cassava, "dev", {"dev": ["NVIDIA_TESLA_T4"]})
        assert problems == [
            f"workerPoolSpecs[{i}]: NVIDIA_TESLA_V100 is not allowed in dev "
            "(allowed: NVIDIA_TESLA_T4)"
            for i in (0, 1)
        ]


class TestJobTimeout:
    def test_every_real_job_has_one(self, stacks: Stacks) -> None:
        real = jobs(stacks["dev"]) + jobs(stacks["local"])
        assert len(real) == 5
        for job in real:
            assert rules.job_timeout(job) == [], job.name

    def test_a_study_without_a_trial_timeout_is_refused(self, stacks: Stacks) -> None:
        study = with_spec(
            one(stacks["dev"], TUNING_JOB_TYPE),
            lambda spec: spec["trialJobSpec"].pop("scheduling"),
        )
        (message,) = rules.job_timeout(study)
        assert message.startswith("trialJobSpec.scheduling.timeout is not set")


class TestImageByDigest:
    def test_dev_jobs_run_the_image_by_digest(self, stacks: Stacks) -> None:
        assert len(jobs(stacks["dev"])) == 3
        for job in jobs(stacks["dev"]):
            assert rules.image_by_digest(job) == []

    def test_a_tag_is_refused(self, stacks: Stacks) -> None:
        def retag(spec: dict[str, Any]) -> None:
            image = spec["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["imageUri"]
            spec["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["imageUri"] = (
                image.split("@")[0] + ":latest"
            )

        job = with_spec(one(stacks["dev"], CUSTOM_JOB_TYPE, "cassava-mwms"), retag)
        (message,) = rules.image_by_digest(job)
        assert message.startswith("workerPoolSpecs[1].containerSpec.imageUri")
        assert ":latest' is not an image by digest" in message

    def test_the_local_stack_is_out_of_scope(self, stacks: Stacks) -> None:
        local = jobs(stacks["local"])[0]
        assert rules.image_by_digest(local)  # trainer:local is a tag ...
        assert not rules.applies(local, {}, ("dev", "prod"))  # ... and local is exempt


class TestServiceAccounts:
    def test_dedicated_accounts_pass(self, stacks: Stacks) -> None:
        for resource in [*jobs(stacks["dev"]), one(stacks["dev"], WORKBENCH_TYPE)]:
            assert rules.no_default_service_account(resource) == []

    def test_the_default_compute_account_is_refused(self, stacks: Stacks) -> None:
        default = "123456789012-compute@developer.gserviceaccount.com"
        job = with_spec(
            one(stacks["dev"], CUSTOM_JOB_TYPE, "cassava-mwms"),
            lambda spec: spec["jobSpec"].update(serviceAccount=default),
        )
        assert rules.no_default_service_account(job) == [
            f"serviceAccount is the default compute service account {default} (project-wide Editor)"
        ]
        notebook = one(stacks["dev"], WORKBENCH_TYPE)
        setup = {**notebook.props["gceSetup"], "serviceAccounts": []}
        (message,) = rules.no_default_service_account(changed(notebook, gceSetup=setup))
        assert message.startswith("gceSetup.serviceAccounts[0].email is not set")


class TestNotebookPublicIp:
    def test_prod_notebook_has_none(self, stacks: Stacks) -> None:
        notebook = one(stacks["prod"], WORKBENCH_TYPE)
        assert rules.applies(notebook, {}, ("prod",))
        assert rules.notebook_no_public_ip(notebook) == []

    def test_the_dev_notebook_judged_as_prod_is_refused(self, stacks: Stacks) -> None:
        notebook = one(stacks["dev"], WORKBENCH_TYPE)
        assert not rules.applies(notebook, {}, ("prod",))
        assert rules.applies(notebook, {"environment": "prod"}, ("prod",))
        assert rules.notebook_no_public_ip(notebook) == [
            "gceSetup.disablePublicIp is not true: the notebook VM gets a public IP"
        ]


class TestBucketAccess:
    @pytest.mark.parametrize("stack", ["dev", "prod"])
    def test_real_buckets_pass(self, stacks: Stacks, stack: str) -> None:
        assert rules.bucket_access(one(stacks[stack], BUCKET_TYPE)) == []

    def test_acls_and_public_access_are_refused(self, stacks: Stacks) -> None:
        bucket = changed(
            one(stacks["dev"], BUCKET_TYPE),
            uniformBucketLevelAccess=False,
            publicAccessPrevention="inherited",
        )
        assert rules.bucket_access(bucket) == [
            "uniformBucketLevelAccess is not true: object ACLs could grant access",
            "publicAccessPrevention is 'inherited', not 'enforced'",
        ]


class TestCmek:
    def test_not_asked_by_default(self, stacks: Stacks) -> None:
        assert len(stacks["dev"]) > 5
        for resource in stacks["dev"]:
            assert not rules.applies(resource, {}, ())

    def test_asked_for_and_missing_is_refused_then_a_key_passes(self, stacks: Stacks) -> None:
        asked = {"environments": ["dev"]}
        bucket = one(stacks["dev"], BUCKET_TYPE)
        assert rules.applies(bucket, asked, ())
        assert rules.cmek(bucket) == [
            "encryption.defaultKmsKeyName is not set: the bucket is not encrypted with CMEK"
        ]
        job = one(stacks["dev"], TUNING_JOB_TYPE)
        assert rules.cmek(job) == [
            "encryptionSpec.kmsKeyName is not set: the job is not encrypted with CMEK"
        ]
        key = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
        assert rules.cmek(changed(bucket, encryption={"defaultKmsKeyName": key})) == []
        assert (
            rules.cmek(with_spec(job, lambda s: s.update(encryptionSpec={"kmsKeyName": key}))) == []
        )


class TestBudget:
    def test_dev_estimate_from_resources_matches_make_estimate(self, stacks: Stacks) -> None:
        from_resources = rules.estimate_from_resources(stacks["dev"])
        from_config = estimate_stack(load_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"))
        assert from_resources.usd_high == pytest.approx(from_config.usd_high)
        assert from_resources.usd_low == pytest.approx(from_config.usd_low)
        assert from_resources.usd_high > 0

    def test_within_and_over_budget(self, stacks: Stacks) -> None:
        total = rules.estimate_from_resources(stacks["dev"])
        assert rules.stack_budget(total, total.usd_high + 1) == []
        (problem,) = rules.stack_budget(total, total.usd_high / 2)
        assert "is over the budget of" in problem

    def test_prod_notebook_alone_fits_a_small_budget(self, stacks: Stacks) -> None:
        total = rules.estimate_from_resources(stacks["prod"])
        assert [line.name for line in total.lines] == ["workbench"]
        assert rules.stack_budget(total, 5) == []
        assert rules.stack_budget(total, 0.5)

    def test_local_jobs_cost_nothing(self, stacks: Stacks) -> None:
        assert rules.estimate_from_resources(stacks["local"]).usd_high == 0

    def test_budget_comes_from_the_policy_config_only(self) -> None:
        assert rules.budget_of({"budget": 20}) == (20.0, [])
        assert rules.budget_of({}) == (None, [])
        assert rules.budget_of({"budget": -1}) == (
            None,
            ["policy config budget must be a number of USD > 0, got -1"],
        )

    def test_declared_expected_duration_narrows_the_estimate(self, stacks: Stacks) -> None:
        cassava = one(stacks["dev"], CUSTOM_JOB_TYPE, "cassava-mwms")
        bounded = rules.estimate_from_resources([cassava])
        timed = rules.estimate_from_resources(
            [changed(cassava, **{rules.EXPECTED_DURATION_PROP: 1800.0})]
        )
        assert bounded.usd_low == 0 and not timed.jobs[0].upper_bound
        assert timed.usd_high == pytest.approx(bounded.usd_high / 8)  # 0.5 h of a 4 h timeout


class TestEndpoints:
    def test_the_real_endpoints_pass_their_environment(self, stacks: Stacks) -> None:
        dev = one(stacks["dev"], rules.ENDPOINT_TYPE)
        local = one(stacks["local"], rules.ENDPOINT_TYPE)
        assert rules.environment_of(dev, {}) == "dev"
        assert rules.environment_of(local, {}) == "local"
        machines, replicas = rules.DEFAULT_ALLOWED_PREDICTION_MACHINES, rules.DEFAULT_MAX_REPLICAS
        for endpoint in (dev, local):
            environment = rules.environment_of(endpoint, {})
            assert rules.endpoint_machines(endpoint, environment, machines) == []
            assert rules.endpoint_replicas(endpoint, environment, replicas) == []
        # The local twin runs on this machine: no environment default judges it.
        assert "local" not in machines and "local" not in replicas

    def test_an_unlabelled_local_endpoint_is_local(self, stacks: Stacks) -> None:
        local = one(stacks["local"], rules.ENDPOINT_TYPE)
        body = {k: v for k, v in local.props["body"].items() if k != "labels"}
        assert rules.environment_of(changed(local, body=body), {}) == "local"

    def test_a_machine_outside_the_list_is_refused(self, stacks: Stacks) -> None:
        dev = one(stacks["dev"], rules.ENDPOINT_TYPE)
        deployments = copy.deepcopy(dict(dev.props["deployments"]))
        deployments["primary"]["dedicatedResources"]["machineSpec"] = {
            "machineType": "a3-highgpu-8g",
            "acceleratorType": "NVIDIA_H100_80GB",
            "acceleratorCount": 8,
        }
        big = changed(dev, deployments=deployments)
        assert rules.endpoint_machines(big, "dev", rules.DEFAULT_ALLOWED_PREDICTION_MACHINES) == [
            "deployments.primary.dedicatedResources.machineSpec.machineType: a3-highgpu-8g is "
            "not allowed for an endpoint in dev (allowed: e2-standard-2, e2-standard-4, "
            "n1-standard-2, n1-standard-4, n2-standard-2)"
        ]
        # Patterns: prod allows the n1 family, not A3 machines; H100 is an allowed GPU there.
        prod = rules.DEFAULT_ALLOWED_PREDICTION_MACHINES
        assert rules.endpoint_machines(dev, "prod", prod) == []
        assert len(rules.endpoint_machines(big, "prod", prod)) == 1
        assert rules.allowed_accelerators(big, "dev", rules.DEFAULT_ALLOWED_ACCELERATORS) == [
            "deployments.primary.dedicatedResources.machineSpec: NVIDIA_H100_80GB is not "
            "allowed in dev (allowed: NVIDIA_L4, NVIDIA_TESLA_P100, NVIDIA_TESLA_T4, "
            "NVIDIA_TESLA_V100)"
        ]

    def test_more_replicas_than_allowed_are_refused(self, stacks: Stacks) -> None:
        dev = one(stacks["dev"], rules.ENDPOINT_TYPE)
        deployments = copy.deepcopy(dict(dev.props["deployments"]))
        deployments["primary"]["dedicatedResources"]["maxReplicaCount"] = 5.0
        scaled = changed(dev, deployments=deployments)
        assert rules.endpoint_replicas(scaled, "dev", rules.DEFAULT_MAX_REPLICAS) == [
            "deployments.primary.dedicatedResources: up to 5 replicas; dev allows 2 per "
            "deployed model (maxReplicaCount)"
        ]
        assert rules.endpoint_replicas(scaled, "prod", rules.DEFAULT_MAX_REPLICAS) == []
