"""The rules over a job's view (``read_view`` then ``job_findings``), as the provider's
check and the stack-config reader apply them: regressions of the spec-based rules."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.bodies import (
    categorical,
    custom_job,
    discrete,
    double,
    horses_or_humans,
    integer,
    job_spec,
    pool,
    study,
    tuning_job,
)
from vertex_training.findings import Finding
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.rules.job import JobSite, job_findings
from vertex_training.jobs.view import read_view

CUSTOM, TUNING = JobKind.CUSTOM_JOB, JobKind.HYPERPARAMETER_TUNING_JOB


def findings(
    body: dict[str, Any],
    kind: JobKind = CUSTOM,
    *,
    region: str | None = None,
    strict: bool = False,
) -> list[Finding]:
    view, unreadable = read_view(kind, body)
    assert unreadable == [] and view is not None
    return job_findings(view, JobSite(remote=True, region=region, strict=strict))


def errors(body: dict[str, Any], kind: JobKind = CUSTOM, **kwargs: Any) -> list[Finding]:
    return [f for f in findings(body, kind, **kwargs) if f.severity == "error"]


# ------------------------------------------------------------- hardware the rules know


@pytest.mark.parametrize(
    ("machine", "accelerator", "count"),
    [
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        ("a4-highgpu-8g", "NVIDIA_B200", 8),
        ("a4x-highgpu-4g", "NVIDIA_GB200", 4),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000", 1),
        ("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4),
    ],
)
def test_current_accelerators_are_accepted(machine: str, accelerator: str, count: int) -> None:
    chief = pool(machine, accelerator, count)
    if accelerator.startswith("TPU_"):
        chief["machineSpec"]["tpuTopology"] = "2x2"
    assert findings(custom_job(chief)) == []


def test_h100_in_us_east5_is_accepted() -> None:
    body = custom_job(pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8))
    assert errors(body, region="us-east5") == []


def test_an_evaluator_pool_with_two_replicas_is_accepted() -> None:
    body = custom_job(pool(), pool(replicas=2), {}, pool(replicas=2))
    assert findings(body) == []


@pytest.mark.parametrize("value", ["café", "日本", "ünïcödé-1_2"])
def test_international_lowercase_label_values_are_accepted(value: str) -> None:
    assert findings(custom_job(pool(), labels={"team": value})) == []


@pytest.mark.parametrize("value", ["Café", "a b", "x" * 64])
def test_bad_label_values_are_refused(value: str) -> None:
    [error] = errors(custom_job(pool(), labels={"team": value}))
    assert error.path == "labels.team"


def test_what_vertex_needs_is_judged_on_vertex_and_not_on_the_local_backend() -> None:
    # A tag and a local output directory: Vertex refuses both; the local backend, the
    # site a job's rules judge for unless told, runs this checkout into any directory.
    chief = pool(image="example.com/trainer:latest")
    view, _ = read_view(CUSTOM, custom_job(chief, spec=job_spec(chief, output="/tmp/out")))
    assert view is not None
    on_vertex = job_findings(view, JobSite(remote=True, region="us-central1"))
    assert [f.path for f in on_vertex if f.severity == "error"] == [
        "jobSpec.baseOutputDirectory.outputUriPrefix",
        "jobSpec.workerPoolSpecs[0].containerSpec.imageUri",
    ]
    assert job_findings(view) == job_findings(view, JobSite(remote=False)) == []


# -------------------------------------------------------------------- what is refused


def test_an_unknown_machine_type_names_its_api_path() -> None:
    [error] = errors(custom_job(pool("n1-standard-5")))
    assert error.path == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"
    assert "n1-standard-5" in error.message


def test_a_machine_of_no_family_is_refused_strict_or_not() -> None:
    body = custom_job(pool("gpu-large"))
    for strict in (False, True):
        [error] = findings(body, strict=strict)
        assert error.severity == "error"
        assert error.path == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"


def test_strict_refuses_no_machine_a_partial_family_may_have() -> None:
    # Strict refuses unheard-of names only: a size missing from a family the catalog marks
    # partial cannot be called wrong, so it stays a warning.
    for machine in ("c2d-standard-3", "n1-standard-4"):
        assert errors(custom_job(pool(machine)), strict=True) == []
    [warning] = findings(custom_job(pool("c2d-standard-3")), strict=True)
    assert warning.severity == "warning"


def test_a_timeout_beyond_the_api_range_is_refused_by_the_view() -> None:
    body = custom_job(pool(), scheduling={"timeout": "1000000000000s"})
    _, unreadable = read_view(CUSTOM, body)
    [finding] = unreadable
    assert finding.path == "jobSpec.scheduling.timeout"
    assert finding.severity == "error" and "1000000000000s" in finding.message


def test_fractional_timeouts_are_kept() -> None:
    view, unreadable = read_view(CUSTOM, custom_job(pool(), timeout_seconds=1.5))
    assert unreadable == [] and view is not None
    assert view.trial_job.scheduling.timeout == 1.5


def test_max_trial_count_zero_is_refused_with_a_message() -> None:
    found = errors(horses_or_humans(max_trials=0, parallel=0), TUNING)
    paths = {f.path: f.message for f in found}
    assert "must be between 1" in paths["maxTrialCount"]
    assert "must be between 1" in paths["parallelTrialCount"]


def test_parallel_beyond_max_trials_is_refused() -> None:
    [error] = errors(horses_or_humans(max_trials=2, parallel=3), TUNING)
    assert error.path == "parallelTrialCount"


def test_a_chief_with_two_replicas_is_refused() -> None:
    [error] = errors(custom_job(pool(replicas=2)))
    assert error.path == "jobSpec.workerPoolSpecs[0].replicaCount"
    assert "chief" in error.message


def test_gpu_count_and_region_by_path() -> None:
    body = custom_job(pool(), pool("n1-standard-8", "NVIDIA_TESLA_V100", 3))
    [count] = errors(body)
    assert count.path == "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount"
    assert "valid counts: 1, 2, 4, 8" in count.message
    elsewhere = custom_job(pool("n1-standard-8", "NVIDIA_TESLA_V100", 1))
    [region] = errors(elsewhere, region="us-west2")
    assert "not offered in region us-west2" in region.message


def test_trailing_empty_pools_and_a_missing_chief() -> None:
    [trailing] = errors(custom_job(pool(), {}))
    assert trailing.path == "jobSpec.workerPoolSpecs[1]"
    missing = {f.path for f in errors(custom_job({}, pool()))}
    assert "jobSpec.workerPoolSpecs" in missing


def test_tuning_study_rules_by_path() -> None:
    body = tuning_job(
        job_spec(pool()),
        study(
            double("lr", 0, 1, "UNIT_LOG_SCALE"),
            integer("layers", 4, 1),
            categorical("opt", ["sgd", "sgd"]),
            algorithm="GRID_SEARCH",
        ),
    )
    paths = {f.path for f in errors(body, TUNING)}
    assert {
        "studySpec.parameters[0].scaleType",
        "studySpec.parameters[0]",  # grid over a double
        "studySpec.parameters[1].integerValueSpec.minValue",
        "studySpec.parameters[2].categoricalValueSpec.values",
    } <= paths


def test_conditional_parents_must_be_parent_values() -> None:
    body = tuning_job(
        job_spec(pool()),
        study(categorical("opt", ["sgd", "adam"], rmsprop=[integer("layers", 1, 4)])),
    )
    [error] = errors(body, TUNING)
    assert error.path == "studySpec.parameters[0].conditionalParameterSpecs[0]"


def test_the_codelab_study_has_no_findings() -> None:
    assert findings(horses_or_humans(), TUNING, region="us-central1") == []


# ------------------------------------------------- TensorBoard and Vertex Experiments

TB_EU = "projects/p/locations/europe-west4/tensorboards/42"
EXPERIMENT = "projects/p/locations/europe-west4/metadataStores/default/contexts/horses"
RUN = "projects/p/locations/europe-west4/metadataStores/default/contexts/horses-lr-sweep"


def test_tensorboard_and_experiment_in_the_jobs_region_are_accepted() -> None:
    body = custom_job(pool(), tensorboard=TB_EU, experiment=EXPERIMENT, experimentRun=RUN)
    assert findings(body, region="europe-west4") == []


def test_a_tensorboard_in_another_region_names_the_field_and_the_region() -> None:
    [error] = errors(custom_job(pool(), tensorboard=TB_EU), region="us-central1")
    assert error.path == "jobSpec.tensorboard"
    assert "is in europe-west4, not in the region us-central1" in error.message
    assert error.valid == "projects/P/locations/us-central1/tensorboards/ID"


def test_an_experiment_in_another_region_names_the_field_and_the_region() -> None:
    body = custom_job(pool(), experiment=EXPERIMENT, experimentRun=RUN)
    found = {f.path: f.message for f in errors(body, region="us-central1")}
    assert set(found) == {"jobSpec.experiment", "jobSpec.experimentRun"}
    assert "not in the region us-central1" in found["jobSpec.experiment"]


def test_tensorboard_without_base_output_directory_is_refused() -> None:
    [error] = errors(custom_job(pool(), output=None, tensorboard=TB_EU))
    assert error.path == "jobSpec.baseOutputDirectory"
    assert "AIP_TENSORBOARD_LOG_DIR" in error.message


def test_an_experiment_run_without_its_experiment_is_refused() -> None:
    [error] = errors(custom_job(pool(), experimentRun=RUN))
    assert error.path == "jobSpec.experimentRun"
    assert "needs jobSpec.experiment" in error.message


def test_an_experiment_run_of_another_experiment_is_refused() -> None:
    other = EXPERIMENT.replace("/horses", "/cassava")
    [error] = errors(custom_job(pool(), experiment=other, experimentRun=RUN))
    assert error.path == "jobSpec.experimentRun"
    assert "not a run of the experiment 'cassava'" in error.message


@pytest.mark.parametrize(
    ("field", "value", "shape"),
    [
        ("tensorboard", "tb-42", "projects/P/locations/europe-west4/tensorboards/ID"),
        ("experiment", "horses", "metadataStores/default/contexts/NAME"),
    ],
)
def test_malformed_resource_names_show_the_shape(field: str, value: str, shape: str) -> None:
    [error] = errors(custom_job(pool(), **{field: value}), region="europe-west4")
    assert error.path == f"jobSpec.{field}"
    assert error.valid.endswith(shape)


def test_tuning_trials_are_checked_under_trial_job_spec() -> None:
    body = tuning_job(job_spec(pool(), tensorboard=TB_EU), study(double("x", 0, 1)))
    [error] = errors(body, TUNING, region="us-central1")
    assert error.path == "trialJobSpec.tensorboard"


# ------------------------------------------- day one: typos refused with a did-you-mean


def only_error(body: dict[str, Any], kind: JobKind = CUSTOM, **kwargs: Any) -> Finding:
    [error] = errors(body, kind, **kwargs)
    return error


MACHINE = "jobSpec.workerPoolSpecs[0].machineSpec"


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("V100", "NVIDIA_TESLA_V100"), ("NVIDIA_TESLA_V10O", "NVIDIA_TESLA_V100")],
)
def test_an_accelerator_typo_is_refused_with_a_did_you_mean(typo: str, meant: str) -> None:
    error = only_error(custom_job(pool("n1-standard-8", typo, 1)))
    assert error.path == f"{MACHINE}.acceleratorType"
    assert error.message.startswith(
        f"{typo!r} is not an AcceleratorType (did you mean {meant!r}?); valid: "
    )
    assert "NVIDIA_L4" in error.message


def test_an_accelerator_no_one_makes_is_refused_and_lists_the_valid_ones() -> None:
    error = only_error(custom_job(pool("n1-standard-8", "NVIDIA_TESLA_X100", 1)))
    assert error.path == f"{MACHINE}.acceleratorType"
    assert "'NVIDIA_TESLA_X100' is not an AcceleratorType" in error.message
    assert "valid: NVIDIA_TESLA_K80, " in error.message


def test_accelerator_count_zero_with_a_type_is_refused() -> None:
    error = only_error(custom_job(pool("n1-standard-8", "NVIDIA_TESLA_T4", 0)))
    assert error.path == f"{MACHINE}.acceleratorCount"
    assert error.message == (
        "0 x NVIDIA_TESLA_T4 on n1-standard-8 is not valid; valid counts: 1, 2, 4, or unset "
        "acceleratorType for no accelerator"
    )


def test_accelerator_count_without_a_type_is_refused() -> None:
    body = custom_job(pool())
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 2
    error = only_error(body)
    assert error.path == f"{MACHINE}.acceleratorCount"
    assert "acceleratorType is unset" in error.message


def test_a_missing_machine_type_or_a_negative_count_is_refused() -> None:
    body = custom_job(pool())
    del body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"]
    error = only_error(body)
    assert error.path == f"{MACHINE}.machineType"
    assert error.message == "is required, e.g. n1-standard-4"
    body = custom_job(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1))
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = -1
    error = only_error(body)
    assert error.path == f"{MACHINE}.acceleratorCount"
    assert error.message == "must be between 0 and 2^31-1"


@pytest.mark.parametrize("machine", ["gpu-large", "x9-mega-1", "z9-megagpu-8g"])
def test_a_machine_type_of_no_machine_family_is_refused(machine: str) -> None:
    error = only_error(custom_job(pool(machine)))
    assert error.path == f"{MACHINE}.machineType"
    assert re.match(
        rf"'{machine}' matches no Vertex machine family( \(did you mean '[a-z0-9-]+'\?\))?; "
        r"families: a2, a3, ",
        error.message,
    ), error.message


def test_a_close_machine_family_typo_says_what_was_meant() -> None:
    error = only_error(custom_job(pool("n11-standard-8")))
    assert "(did you mean 'n1-standard-8'?)" in error.message


def test_a_series_without_its_size_is_refused_with_the_sizes() -> None:
    error = only_error(custom_job(pool("n1-standard")))
    assert error.path == f"{MACHINE}.machineType"
    assert error.message == "'n1-standard' names a series without its size"
    assert error.valid == "n1-standard-{4,8,16,32,64,96}"


@pytest.mark.parametrize("name", ["bad\x07name", "tab\tname", "line\nbreak", "del\x7f"])
def test_control_characters_in_the_display_name_are_refused(name: str) -> None:
    error = only_error(custom_job(pool(), display_name=name))
    assert error.path == "displayName"
    assert error.message.startswith("has a control character")


def test_a_region_typo_is_refused_with_a_did_you_mean_even_without_accelerators() -> None:
    error = only_error(custom_job(pool()), region="us-centrl1")
    assert error.path == "region"
    assert error.message == "'us-centrl1' is not a Vertex AI region (did you mean 'us-central1'?)"
    assert "europe-west4" in error.valid.split(", ")


def test_a_scheduling_strategy_typo_in_a_body_is_refused() -> None:
    body = custom_job(pool(), scheduling={"strategy": "SPTO"})
    _, unreadable = read_view(CUSTOM, body)
    [finding] = unreadable
    assert finding.path == "jobSpec.scheduling.strategy"
    assert finding.message == "'SPTO' is not valid (did you mean 'SPOT'?)"
    assert "FLEX_START" in finding.valid.split(", ")


@pytest.mark.parametrize(
    ("field", "typo", "meant"),
    [
        ("algorithm", "GRID_SEARH", "GRID_SEARCH"),
        ("measurementSelectionType", "BEST", "BEST_MEASUREMENT"),
    ],
)
def test_study_enum_typos_in_a_body_say_what_was_meant(field: str, typo: str, meant: str) -> None:
    body = tuning_job(job_spec(pool()), study(double("x", 0, 1), **{field: typo}))
    _, unreadable = read_view(TUNING, body)
    [finding] = unreadable
    assert finding.path == f"studySpec.{field}"
    assert (f"(did you mean {meant!r}?)" in finding.message) == bool(meant)


def test_a_goal_typo_in_a_body_says_what_was_meant() -> None:
    body = tuning_job(job_spec(pool()), study(double("x", 0, 1), metrics=[("acc", "MAXIMISE")]))
    _, unreadable = read_view(TUNING, body)
    [finding] = unreadable
    assert finding.path == "studySpec.metrics[0].goal"
    assert "(did you mean 'MAXIMIZE'?)" in finding.message


# ------------------------------------------------------- day one: the API's own limits


def test_max_wait_duration_needs_flex_start() -> None:
    error = only_error(custom_job(pool(), scheduling={"maxWaitDuration": "600s"}))
    assert error.path == "jobSpec.scheduling.maxWaitDuration"
    assert error.message == "applies only to the FLEX_START strategy (the strategy is unset)"
    assert error.valid == "set scheduling.strategy to FLEX_START, or drop maxWaitDuration"
    spot = custom_job(pool(), scheduling={"maxWaitDuration": "600s", "strategy": "SPOT"})
    assert "(the strategy is SPOT)" in only_error(spot).message
    flex = custom_job(pool(), scheduling={"maxWaitDuration": "600s", "strategy": "FLEX_START"})
    assert errors(flex) == []


@pytest.mark.parametrize("pid", ["learning rate", " lr", "lr\t"])
def test_a_parameter_id_with_whitespace_is_refused(pid: str) -> None:
    body = tuning_job(job_spec(pool()), study(double(pid, 0, 1)))
    error = only_error(body, TUNING)
    assert error.path == "studySpec.parameters[0].parameterId"
    assert error.message == f"{pid!r} has whitespace"
    assert error.valid == (
        "letters, digits and '_' without spaces (the trainer gets it as --<parameterId>)"
    )


def test_more_than_100_env_vars_in_a_container_are_refused() -> None:
    many = {f"V{i}": "x" for i in range(101)}
    error = only_error(custom_job(pool(env=many)))
    assert error.path == "jobSpec.workerPoolSpecs[0].containerSpec.env"
    assert error.message == "has 101 variables; a container takes at most 100"
    assert errors(custom_job(pool(env=dict(list(many.items())[:100])))) == []


def test_discrete_values_at_most_1000_and_1e_10_apart() -> None:
    path = "studySpec.parameters[0].discreteValueSpec.values"
    too_many = tuning_job(job_spec(pool()), study(discrete("x", range(1001))))
    error = only_error(too_many, TUNING)
    assert error.path == path
    assert error.message == "has 1001 values; at most 1000 are allowed"
    close = tuning_job(job_spec(pool()), study(discrete("x", [1.0, 1.0 + 1e-11, 2.0])))
    error = only_error(close, TUNING)
    assert error.path == path
    assert error.message.startswith("values must be at least 1e-10 apart: 1.0 and 1.00000000001")
    assert errors(tuning_job(job_spec(pool()), study(discrete("x", range(1000)))), TUNING) == []


@pytest.mark.parametrize("rid", ["my-cluster-", "-cluster", "Cluster", "c" * 64, "a_b"])
def test_a_malformed_persistent_resource_id_is_refused(rid: str) -> None:
    error = only_error(custom_job(pool(), persistentResourceId=rid))
    assert error.path == "jobSpec.persistentResourceId"
    assert error.message == f"{rid!r} is not a persistent resource id"
    assert error.valid == (
        "1-63 characters: a lowercase letter, then lowercase letters, digits or '-', not "
        "ending with '-'"
    )


@pytest.mark.parametrize("rid", ["c", "my-cluster", "c" * 63, "a1"])
def test_well_formed_persistent_resource_ids_pass(rid: str) -> None:
    assert errors(custom_job(pool(), persistentResourceId=rid)) == []


@pytest.mark.parametrize(
    ("labels", "path"),
    [
        ({"Team": "x"}, "labels.Team"),
        ({"1team": "x"}, "labels.1team"),
        ({"k" * 64: "x"}, f"labels.{'k' * 64}"),
        ({"team": "x" * 64}, "labels.team"),
        ({"team": "a.b"}, "labels.team"),
        ({f"k{i}": "" for i in range(65)}, "labels"),
    ],
)
def test_label_limits(labels: dict[str, str], path: str) -> None:
    assert only_error(custom_job(pool(), labels=labels)).path == path


@pytest.mark.parametrize(
    "labels", [{"team": ""}, {"équipe": "données"}, {"k" * 63: "v" * 63}, {"a-b_c": "1-2_3"}]
)
def test_labels_within_the_limits_pass(labels: dict[str, str]) -> None:
    assert errors(custom_job(pool(), labels=labels)) == []


KEY_EU = "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"


def test_a_cmek_key_is_judged_by_the_platform_rule_at_the_jobs_field() -> None:
    from vertex_training.jobs.rules.located import KMS_KEY

    body = {**custom_job(pool()), "encryptionSpec": {"kmsKeyName": KEY_EU}}
    assert findings(body, region="europe-west4") == []
    for key in (KEY_EU, "key-1"):
        body["encryptionSpec"]["kmsKeyName"] = key
        error = only_error(body, region="us-central1")
        assert error.path == "encryptionSpec.kmsKeyName"
        problem = KMS_KEY.problem(key, "us-central1")
        assert problem is not None
        assert (error.message, error.valid) == problem
    # On the local backend (no region) only the key's shape is judged.
    assert only_error(body).message == "'key-1' is not a Cloud KMS key name"
    body["encryptionSpec"]["kmsKeyName"] = KEY_EU
    assert findings(body) == []


# ------------------------------------------------------------- day one: network settings

NETWORK = "projects/123/global/networks/vpc"
PSC = {"networkAttachment": "projects/p/regions/us-central1/networkAttachments/a"}
NFS = [{"server": "10.0.0.2", "path": "/share", "mountPoint": "data"}]


def test_psc_interface_and_network_together_are_refused() -> None:
    error = only_error(custom_job(pool(), network=NETWORK, pscInterfaceConfig=PSC))
    assert error.path == "jobSpec.pscInterfaceConfig"
    assert error.message == "cannot be set with network (Vertex refuses both)"
    assert error.valid == "a Private Service Connect interface or a peered VPC network, not both"
    assert errors(custom_job(pool(), pscInterfaceConfig=PSC)) == []


def test_nfs_mounts_without_a_network_are_refused() -> None:
    body = tuning_job(job_spec(pool(), pool(nfsMounts=NFS)), study(double("x", 0, 1)))
    error = only_error(body, TUNING)
    assert error.path == "trialJobSpec.workerPoolSpecs[1].nfsMounts"
    assert error.message == "NFS shares are reached over a VPC, and the job has no network"
    assert error.valid == (
        "set network (projects/PROJECT_NUMBER/global/networks/NAME) or pscInterfaceConfig, "
        "or drop nfsMounts"
    )
    assert errors(custom_job(pool(nfsMounts=NFS), network=NETWORK)) == []
    assert errors(custom_job(pool(nfsMounts=NFS), pscInterfaceConfig=PSC)) == []


def test_every_problem_of_a_body_is_reported_in_one_run() -> None:
    body = custom_job(
        pool("gpu-large", "V100", 1, env={f"V{i}": "x" for i in range(101)}),
        display_name="bad\x07",
        persistentResourceId="x-",
        scheduling={"maxWaitDuration": "60s"},
    )
    paths = {f.path for f in errors(body, region="us-centrl1")}
    assert paths == {
        "displayName",
        "region",
        f"{MACHINE}.machineType",
        f"{MACHINE}.acceleratorType",
        "jobSpec.workerPoolSpecs[0].containerSpec.env",
        "jobSpec.persistentResourceId",
        "jobSpec.scheduling.maxWaitDuration",
    }
