"""The config loader: schema agreement, every stack file, and every bad-config message."""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from pathlib import Path

import pulumi
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_pulumi
from vertex_training.findings import Finding, render
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.stack.config import (
    PROJECT_NAME,
    ConfigError,
    EnvironmentKind,
    StackConfig,
    fix,
    known_config_keys,
    load_pulumi_config,
    load_stack_config,
    parse_stack_config,
)
from vertex_training.stack.serving import SERVING_KEYS

STACK_FILES = sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"))
SCHEMA = yaml.safe_load((PROJECT_ROOT / "Pulumi.yaml").read_text())["config"]

DEV = {"vertex-training:environment": "dev", "gcp:project": "my-project"}
KMS = "projects/p/locations/europe-west4/keyRings/k/cryptoKeys/c"
T4 = "NVIDIA_TESLA_T4"


def key(name: str) -> str:
    return f"{PROJECT_NAME}:{name}"


def dev(**settings: str) -> dict[str, object]:
    """The dev stack's config with these of our keys set."""
    return {**DEV, **{key(k): v for k, v in settings.items()}}


def same_words(problem: Finding, error: vt.InvalidArgumentsError, where: str) -> None:
    """The stack's finding is the Python Args' (one rule, one value), said with the same
    words at each route's own path."""
    assert problem.at("") in [f.at("") for f in error.findings]
    assert str(problem.at(where)) in str(error)


def problems_of(stack: str, raw: dict[str, object]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(stack, raw)
    return caught.value


def one_rule_both_routes(
    config: Mapping[str, str], args: Mapping[str, object], args_field: str
) -> tuple[Finding, vt.InvalidArgumentsError]:
    """The same bad value through the dev stack's config and through TrainingPlatformArgs:
    one problem each, in the same words (see ``same_words``)."""
    [problem] = problems_of("dev", dev(**config)).findings
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.TrainingPlatform(
            "p", vt.TrainingPlatformArgs(environment="dev", project="my-project", **args)
        )
    same_words(problem, caught.value, f"TrainingPlatformArgs.{args_field}")
    return problem, caught.value


# --------------------------------------------------------------------- schema


def schema_type(annotation: object) -> str:
    """The Pulumi.yaml type of a model field: scalars by name, sequences as arrays."""
    if annotation is bool:
        return "boolean"
    if annotation is int:
        return "integer"
    if typing.get_origin(annotation) in (tuple, list):
        return "array"
    return "string"


class TestSchemaAgreesWithModels:
    def test_every_model_key_is_declared_and_every_declared_key_is_read(self) -> None:
        # The served models' keys are read by stack/serving.py, beside the sections.
        assert set(SCHEMA) == set(known_config_keys()) | set(SERVING_KEYS)

    @pytest.mark.parametrize("name", sorted(known_config_keys()))
    def test_type_default_and_description(self, name: str) -> None:
        declared = SCHEMA[name]
        assert set(declared) >= {"default", "description"}, name
        assert declared["description"].strip()
        info = known_config_keys()[name]
        if "type" in declared:
            assert declared["type"] == schema_type(info.annotation)
        else:
            # Only lists of objects stay untyped: Pulumi validates a typed array's items as
            # scalars and has no object type (pulumi/pulumi#11321); the models check them.
            assert schema_type(info.annotation) == "array", name
        # "" in the schema means "not set" (None) in the model: a schema default cannot be null.
        default = "" if info.default is None else info.default
        if isinstance(default, tuple):
            default = list(default)
        assert declared["default"] == default

    def test_schema_defaults_validate(self) -> None:
        raw = {key(name): spec["default"] for name, spec in SCHEMA.items()}
        config = parse_stack_config("local", raw)
        assert config == parse_stack_config("local", {})


# --------------------------------------------------------------------- stack files


def test_there_are_local_dev_and_prod_stacks() -> None:
    assert {path.name for path in STACK_FILES} >= {
        "Pulumi.local.yaml",
        "Pulumi.dev.yaml",
        "Pulumi.prod.yaml",
    }


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda p: p.name)
def test_every_stack_file_is_valid(stack_file: Path) -> None:
    config = load_stack_config(stack_file)
    assert config.stack == stack_file.name.split(".")[1]


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda p: p.name)
def test_every_value_carries_a_comment(stack_file: Path) -> None:
    """Each group of consecutive config lines starts right under a comment saying why."""

    def is_value(line: str) -> bool:
        return line.startswith("  ") and ":" in line and not line.strip().startswith("#")

    lines = stack_file.read_text().splitlines()
    for previous, line in zip(["", *lines], lines, strict=False):
        if is_value(line) and not is_value(previous):
            assert previous.strip().startswith("#"), f"{stack_file.name}: no comment above {line!r}"


def test_stack_kinds() -> None:
    kinds = {load_stack_config(p).stack: load_stack_config(p).environment for p in STACK_FILES}
    assert kinds["local"] is EnvironmentKind.LOCAL
    assert kinds["dev"] is EnvironmentKind.DEV
    assert kinds["prod"] is EnvironmentKind.PROD


def test_local_stack_needs_no_google_cloud_project() -> None:
    config = load_stack_config(PROJECT_ROOT / "stacks" / "Pulumi.local.yaml")
    assert config.gcp_project is None
    assert config.local_root == PROJECT_ROOT / ".local-vertex"


def test_stack_file_name_must_name_the_stack(tmp_path: Path) -> None:
    path = tmp_path / "dev.yaml"
    path.write_text("config: {}\n")
    with pytest.raises(ValueError, match=r"Pulumi\.<stack>\.yaml"):
        load_stack_config(path)


def test_empty_stack_file_is_a_local_stack(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.scratch.yaml"
    path.write_text("")
    assert load_stack_config(path).environment is EnvironmentKind.LOCAL


# --------------------------------------------------------------------- values


def test_defaults() -> None:
    config = parse_stack_config("dev", DEV)
    assert config.region == "us-central1"
    assert config.bucket_name == "my-project-dev-vertex"
    assert config.workbench.zone is None  # the platform places it in <region>-a
    assert config.workbench.idle_timeout_minutes == 60
    assert config.image.trainer_image is None


def test_values_as_the_cli_passes_them_are_coerced() -> None:
    config = parse_stack_config(
        "dev", dev(workbenchDiskSizeGb="200", workbenchEnabled="false", bucketName="")
    )
    assert config.workbench.disk_size_gb == 200
    assert config.workbench.enabled is False
    assert config.storage.bucket_name is None


def test_models_are_frozen() -> None:
    config = parse_stack_config("dev", DEV)
    with pytest.raises(ValidationError):
        config.general.region = "europe-west4"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        config.stack = "prod"  # type: ignore[misc]


def test_other_namespaces_are_left_to_their_providers() -> None:
    config = parse_stack_config("dev", {**DEV, "gcp:region": "us-central1", "docker-build:x": "1"})
    assert config.gcp_project == "my-project"


# --------------------------------------------------------------------- bad config


def test_missing_gcp_project_on_a_cloud_stack() -> None:
    error = problems_of("dev", {key("environment"): "dev"})
    message = str(error)
    assert "gcp:project: missing: a dev environment needs a Google Cloud project" in message
    assert "; valid: a Google Cloud project id" in message
    assert "Fix: pulumi config set gcp:project <your-project-id> --stack dev" in message


def test_missing_gcp_project_is_reported_even_when_the_region_is_bad_too() -> None:
    prod = {key("environment"): "prod"}
    # A near miss of a catalog region, and (strict) a region the catalog has never heard of.
    for bad in (
        {key("region"): "us-centrl1"},
        {key("region"): "mars-north1", key("strictHardwareChecks"): "true"},
    ):
        error = problems_of("prod", {**prod, **bad})
        assert {"gcp:project", key("region")} <= {p.caller for p in error.findings}


def test_regions_and_workbench_gpus_come_from_the_hardware_catalog() -> None:
    # Every catalog region is a stack region (no second list), and the catalog's rule for
    # one it does not list: a warning, refused only in strict stacks.
    no_workbench = {**DEV, key("workbenchEnabled"): "false"}
    for region in catalog().regions:
        assert (
            parse_stack_config("dev", {**no_workbench, key("region"): region}).general.region
            == region
        )
    config = parse_stack_config(
        "dev", {**DEV, key("region"): "mars-north1", key("workbenchEnabled"): "false"}
    )
    assert any(
        "mars-north1" in w.message and "not in the hardware catalog" in w.message
        for w in config.warnings
    )
    # A Workbench GPU the hand table lacked and the catalog has (a2-ultragpu takes A100 80GB).
    error = problems_of("dev", {**DEV, key("workbenchGpuType"): "NVIDIA_TESLA_V10"})
    assert "(did you mean 'NVIDIA_TESLA_V100'?)" in error.findings[0].message
    assert "NVIDIA_H100_80GB" in error.findings[0].message


@pytest.mark.parametrize(
    ("setting", "value", "platform_field"),
    [
        ("softDeleteRetentionDays", "3", "soft_delete_retention_days"),
        ("softDeleteRetentionDays", "91", "soft_delete_retention_days"),
        ("stagingRetentionDays", "0", "staging_retention_days"),
        ("imageKeepCount", "0", "image_keep_count"),
    ],
)
def test_both_routes_hold_a_setting_to_one_rule(
    setting: str, value: str, platform_field: str
) -> None:
    one_rule_both_routes({setting: value}, {platform_field: int(value)}, platform_field)


def test_the_workbench_disk_is_one_rule_for_both_routes() -> None:
    args = {"workbench": vt.Workbench(disk_size_gb=100)}
    one_rule_both_routes({"workbenchDiskSizeGb": "100"}, args, "workbench.disk_size_gb")


DIGEST = "example.com/trainer@sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("config", "args", "config_key", "args_field"),
    [
        (
            {"workbenchZone": "europe-west4-a"},
            {"workbench": vt.Workbench(zone="europe-west4-a")},
            "workbenchZone",
            "workbench.zone",
        ),
        (
            {"workbenchZone": "central"},
            {"workbench": vt.Workbench(zone="central")},
            "workbenchZone",
            "workbench.zone",
        ),
        (
            {"workbenchGpuType": "NVIDIA_TESLA_T4", "workbenchGpuCount": "3"},
            {"workbench": vt.Workbench(accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3))},
            "workbenchGpuCount",
            "workbench.accelerator.count",
        ),
        (
            {"workbenchGpuType": "NVIDIA_TESLA_T4", "workbenchGpuCount": "0"},
            {"workbench": vt.Workbench(accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 0))},
            "workbenchGpuCount",
            "workbench.accelerator.count",
        ),
        (
            {"workbenchGpuType": "TPU", "workbenchGpuCount": "1"},
            {"workbench": vt.Workbench(accelerator=vt.Accelerator("TPU", 1))},
            "workbenchGpuType",
            "workbench.accelerator.type",
        ),
        (
            {"workbenchMachineType": "N1"},
            {"workbench": vt.Workbench(machine_type="N1")},
            "workbenchMachineType",
            "workbench.machine_type",
        ),
        (
            {"workbenchContainerImage": "has spaces !!"},
            {"workbench": vt.Workbench(container_image="has spaces !!")},
            "workbenchContainerImage",
            "workbench.container_image",
        ),
        (
            {"workbenchIdleTimeoutMinutes": "5"},
            {"workbench": vt.Workbench(idle_timeout_minutes=5)},
            "workbenchIdleTimeoutMinutes",
            "workbench.idle_timeout_minutes",
        ),
        ({"kmsKeyName": KMS}, {"kms_key_name": KMS}, "kmsKeyName", "kms_key_name"),
        ({"kmsKeyName": "not-a-key"}, {"kms_key_name": "not-a-key"}, "kmsKeyName", "kms_key_name"),
        (
            {"repositoryName": "Trainers"},
            {"repository_name": "Trainers"},
            "repositoryName",
            "repository_name",
        ),
        ({"bucketName": "UPPER"}, {"bucket_name": "UPPER"}, "bucketName", "bucket_name"),
        (
            {"trainerImage": "example.com/trainer:latest"},
            {"images": {"trainer": "example.com/trainer:latest"}},
            "trainerImage",
            "images['trainer']",
        ),
    ],
)
def test_both_routes_run_one_rule_and_name_their_own_path(
    config: dict[str, str], args: dict[str, object], config_key: str, args_field: str
) -> None:
    # One rule (platform.rules), one problem, each route naming the value its own way.
    problem, error = one_rule_both_routes(config, args, args_field)
    assert problem.caller == key(config_key)
    assert fix(problem, "dev").startswith(f"pulumi config set {key(config_key)} ")
    message = str(error)
    assert config_key not in message and "vertex-training:" not in message
    assert "TrainingPlatformArgs" not in str(problem)


def test_a_derived_bucket_name_is_one_rule_for_both_routes() -> None:
    # No bucket name: the platform derives <project>-<stack>-vertex, which must follow the
    # bucket rules too ("google" is reserved). Both routes judge it with judge_platform.
    [problem] = problems_of("dev", {**DEV, "gcp:project": "my-google-project"}).findings
    assert problem.caller == key("bucketName")
    assert "not set, and the derived name 'my-google-project-dev-vertex'" in problem.message
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        run_pulumi(
            lambda: vt.TrainingPlatform(
                "platform",
                vt.TrainingPlatformArgs(environment="dev", project="my-google-project"),
            ),
            stack="dev",
        )
    same_words(problem, caught.value, "TrainingPlatformArgs.bucket_name")


def test_one_bad_value_hides_no_other_of_its_section() -> None:
    # The general section has a budget pydantic refuses; its other values are still
    # judged by the platform rules in the same run (a KMS key of another region).
    error = problems_of("dev", dev(budget="-5", kmsKeyName=KMS))
    assert {p.caller for p in error.findings} == {key("budget"), key("kmsKeyName")}
    # A refused value's default stands in for the rules, and is not judged in its place.
    error = problems_of("dev", dev(workbenchGpuType=T4, workbenchGpuCount="x"))
    [problem] = error.findings
    assert problem.caller == key("workbenchGpuCount") and "valid integer" in problem.message


def test_the_project_is_one_rule_for_both_routes() -> None:
    [problem] = problems_of("prod", {key("environment"): "prod"}).findings
    assert problem.caller == "gcp:project"
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.TrainingPlatform("p", vt.TrainingPlatformArgs(environment="prod"))
    same_words(problem, caught.value, "TrainingPlatformArgs.project")


def test_malformed_gcp_project() -> None:
    error = problems_of("dev", {**DEV, "gcp:project": "My Project"})
    (problem,) = error.findings
    assert problem.caller == "gcp:project"
    assert "'My Project' is not a Google Cloud project id" in problem.message


def test_unknown_region() -> None:
    error = problems_of("dev", {**DEV, key("region"): "us-centrl1"})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:region"
    # The hardware catalog's region rule, the one TrainingPlatformArgs is judged by.
    assert "'us-centrl1' is not a Vertex AI region (did you mean 'us-central1'?)" in (
        problem.message
    )
    assert "europe-west4" in problem.valid.split(", ")
    assert "Fix: pulumi config set vertex-training:region us-central1 --stack dev" in str(error)


@pytest.mark.parametrize(
    "name",
    [
        "Bad_Name",
        "ab",
        "-starts-with-dash",
        "goog-bucket",
        "my-google-bucket",
        "192.168.1.1",
        "a" * 64,
    ],
)
def test_malformed_bucket_name(name: str) -> None:
    error = problems_of("dev", {**DEV, key("bucketName"): name})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:bucketName"
    assert f"'{name}'" in problem.message
    assert "3-63 characters of lowercase letters" in problem.valid
    assert fix(problem, "dev").startswith("pulumi config set vertex-training:bucketName ")


@given(st.from_regex(r"[a-z0-9][a-z0-9_-]{1,40}[a-z0-9]", fullmatch=True))
def test_well_formed_bucket_names_pass(name: str) -> None:
    if name.startswith("goog") or "google" in name:
        return
    assert parse_stack_config("dev", {**DEV, key("bucketName"): name}).bucket_name == name


def test_derived_bucket_name_is_checked_too() -> None:
    error = problems_of("dev", {**DEV, "gcp:project": "google-lab-1"})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:bucketName"
    assert "not set, and the derived name 'google-lab-1-dev-vertex' uses a name reserved" in (
        problem.message
    )


def test_negative_disk_size() -> None:
    error = problems_of("dev", {**DEV, key("workbenchDiskSizeGb"): "-5"})
    assert str(error).splitlines()[1:] == [
        "  - vertex-training:workbenchDiskSizeGb: -5 GB is not a valid boot disk size; "
        "valid: an integer from 150 to 64000",
        "    Fix: pulumi config set vertex-training:workbenchDiskSizeGb 150 --stack dev",
    ]


def test_unknown_key_is_not_silently_ignored() -> None:
    error = problems_of("dev", {**DEV, key("workbenchMachinType"): "n1-standard-8"})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:workbenchMachinType"
    assert "unknown config key (did you mean 'workbenchMachineType'?)" in problem.message
    assert "workbenchMachineType" in problem.valid
    assert fix(problem, "dev") == (
        "pulumi config rm vertex-training:workbenchMachinType --stack dev && "
        "pulumi config set vertex-training:workbenchMachineType <value> --stack dev"
    )


def test_not_a_number() -> None:
    error = problems_of("dev", {**DEV, key("imageKeepCount"): "many"})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:imageKeepCount"
    assert "'many'" in problem.message
    assert problem.valid == "an integer from 1 to 1000"


def test_unknown_environment() -> None:
    error = problems_of("dev", {**DEV, key("environment"): "staging"})
    (problem,) = error.findings
    assert problem.caller == "vertex-training:environment"
    assert problem.valid == "one of local, dev, prod"


def test_trainer_image_must_be_a_digest() -> None:
    error = problems_of("dev", {**DEV, key("trainerImage"): "example.com/trainer:latest"})
    (problem,) = error.findings
    assert "not an image by digest" in problem.message
    digest = "example.com/trainer@sha256:" + "a" * 64
    assert parse_stack_config("dev", {**DEV, key("trainerImage"): digest}).image.trainer_image


@pytest.mark.parametrize(
    ("extra", "bad_key", "text"),
    [
        ({"workbenchGpuCount": "1"}, "workbenchGpuCount", "acceleratorType is unset; set "),
        (
            {"workbenchGpuType": "NVIDIA_TESLA_T4"},
            "workbenchGpuCount",
            "0 x NVIDIA_TESLA_T4 on n1-standard-4 is not valid; valid counts: 1, 2, 4, or unset "
            "acceleratorType",
        ),
        ({"workbenchGpuCount": "3"}, "workbenchGpuCount", "acceleratorCount is 3 but"),
        (
            # The machine does not take the GPU: the machine type is the key to change
            # (the message lists the machines that take it).
            {"workbenchGpuType": "NVIDIA_L4", "workbenchGpuCount": "1"},
            "workbenchMachineType",
            "n1-standard-4 does not take NVIDIA_L4",
        ),
        (
            {
                "workbenchGpuType": "NVIDIA_TESLA_T4",
                "workbenchGpuCount": "8",
                "workbenchMachineType": "n1-standard-8",
            },
            "workbenchGpuCount",
            "valid counts: 1, 2, 4",
        ),
        (
            {
                "workbenchGpuType": "NVIDIA_TESLA_A100",
                "workbenchGpuCount": "2",
                "workbenchMachineType": "a2-highgpu-1g",
            },
            "workbenchGpuCount",
            "valid counts: 1",
        ),
        ({"workbenchZone": "us-central1-z"}, "workbenchZone", "does not exist"),
        (
            {"workbenchContainerImage": "has spaces !!"},
            "workbenchContainerImage",
            "not a container image reference",
        ),
        ({"workbenchGpuType": "TPU"}, "workbenchGpuType", "'TPU' is not an AcceleratorType"),
        ({"workbenchZone": "europe-west4-a"}, "workbenchZone", "not a zone of the region"),
        ({"workbenchZone": "central"}, "workbenchZone", "not a zone name"),
        ({"softDeleteRetentionDays": "3"}, "softDeleteRetentionDays", "3 days is not a soft"),
        ({"stagingRetentionDays": "0"}, "stagingRetentionDays", "0 days is out of range"),
        ({"repositoryName": "Trainers"}, "repositoryName", "not a valid repository id"),
    ],
)
def test_rules_between_and_within_keys(extra: dict[str, str], bad_key: str, text: str) -> None:
    error = problems_of("dev", dev(**extra))
    assert [p.caller for p in error.findings] == [key(bad_key)]
    assert text in error.findings[0].message
    assert fix(error.findings[0], "dev").startswith(f"pulumi config set {key(bad_key)} ")


def test_a_refused_workbench_zone_hides_no_gpu_problem() -> None:
    # The GPU rules are the hardware catalog's: they run beside the zone's own rule, and the
    # catalog does not judge the zone a second time.
    extra = {key("workbenchZone"): "central", key("workbenchGpuCount"): "2"}
    error = problems_of("dev", {**DEV, **extra})
    assert [p.caller for p in error.findings] == [key("workbenchZone"), key("workbenchGpuCount")]
    assert "acceleratorCount is 2 but acceleratorType is unset" in error.findings[1].message


def test_all_problems_are_reported_at_once() -> None:
    error = problems_of(
        "dev",
        {
            key("environment"): "dev",
            key("region"): "nowhere",
            key("bucketName"): "UPPER",
            key("workbenchDiskSizeGb"): "-1",
            key("regoin"): "us-central1",
        },
    )
    assert len(error.findings) == 5
    assert str(error).startswith("invalid config for stack 'dev':\n  - ")


# --------------------------------------------------------------------- inside a program


def test_pulumi_loader_reads_the_engine_config_and_validates_the_same_way() -> None:
    raw = {**DEV, key("workbenchDiskSizeGb"): "300"}
    seen: list[StackConfig] = []
    run_pulumi(lambda: seen.append(load_pulumi_config()), stack="dev", config=raw)
    assert seen == [parse_stack_config("dev", raw)]


def test_pulumi_loader_reads_pulumi_config_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The language host hands config to the program as PULUMI_CONFIG (JSON).
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({**DEV, key("regoin"): "x"}))
    # RunError: Pulumi's language host prints the message alone, without a traceback.
    with pytest.raises(pulumi.RunError, match="did you mean 'region'"):
        run_pulumi(load_pulumi_config, stack="dev", config={})


# ---------------------------------------------------------------------------- jobs


def _jobs(*jobs: dict[str, object]) -> dict[str, object]:
    return {**DEV, key("jobs"): json.dumps(list(jobs))}


def _job(name: str, **fields: object) -> dict[str, object]:
    chief = {"machineType": "n1-standard-4", "args": ["--workload", "cassava"]}
    return {"name": name, "chief": chief, **fields}


def _pool(**fields: object) -> dict[str, object]:
    return {"machineType": "n1-standard-4", **fields}


def test_unknown_nested_job_key_suggests_and_lists_valid_keys() -> None:
    raw = _jobs(_job("a"), _job("b", chief={"machineType": "n1-standard-8", "acelerator": "x"}))
    (problem,) = problems_of("dev", raw).findings
    assert problem.caller == "vertex-training:jobs[1].chief.acelerator"
    assert "did you mean 'accelerator'" in problem.message
    assert "accelerator" in problem.valid and "replicaCount" in problem.valid
    # The fix edits the stack file; `pulumi config set jobs` would replace every job.
    assert "stacks/Pulumi.dev.yaml" in fix(problem, "dev")
    assert not fix(problem, "dev").startswith("pulumi config set")


def test_one_jobs_type_error_hides_no_other_jobs_problems() -> None:
    raw = _jobs(
        _job("a", chief=_pool(replicaCount="many")),
        _job("b", chief={"machineType": "n1-standard-5"}),
        {
            "name": "c",
            "trial": {"chief": _pool()},
            "maxTrialCount": 0,
            "parallelTrialCount": 1,
            "study": {"parameters": [_double("lr", 0.1, 1)]},
        },
    )
    keys = [p.caller for p in problems_of("dev", raw).findings]
    assert "vertex-training:jobs[0].chief.replicaCount" in keys
    assert "vertex-training:jobs[1].chief.machineType" in keys
    assert "vertex-training:jobs[2].maxTrialCount" in keys


def test_job_problems_name_the_config_key_and_the_vertex_field() -> None:
    raw = _jobs(_job("a", chief={"machineType": "n1-standard-5"}))
    (problem,) = problems_of("dev", raw).findings
    assert "(Vertex field jobSpec.workerPoolSpecs[0].machineSpec.machineType)" in render(
        problem, "stack"
    )
    assert "valid: n1-standard-{4,8," in problem.message  # what would be valid


def test_unknown_hardware_warns_in_strict_stacks_too() -> None:
    # A size of a family the catalog does not list completely: unknown, not known wrong;
    # strict refuses only names the catalog never heard of.
    raw = _jobs(_job("a", chief={"machineType": "c2d-standard-3"}))
    for stack in (raw, {**raw, key("strictHardwareChecks"): "true"}):
        config = parse_stack_config("dev", stack)
        assert any(w.caller.endswith("jobs[0].chief.machineType") for w in config.warnings)


def test_current_hardware_is_accepted() -> None:
    config = parse_stack_config(
        "dev",
        _jobs(
            _job(
                "h200",
                chief={
                    "machineType": "a3-ultragpu-8g",
                    "accelerator": {"type": "NVIDIA_H200_141GB", "count": 8},
                },
            ),
            _job(
                "b200",
                chief={
                    "machineType": "a4-highgpu-8g",
                    "accelerator": {"type": "NVIDIA_B200", "count": 8},
                },
            ),
        ),
    )
    assert [j.name for j in config.jobs.jobs] == ["h200", "b200"]


# ------------------------------------------------ day one: typos and what Vertex refuses


def _tuning(name: str, study: dict[str, object], **fields: object) -> dict[str, object]:
    return {
        "name": name,
        "trial": {"chief": _pool()},
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "study": {"parameters": [_double("lr", 0.1, 1)], **study},
        **fields,
    }


def _double(parameter_id: str, low: float, high: float) -> dict[str, object]:
    return {
        "type": "DoubleParameter",
        "parameterId": parameter_id,
        "minValue": low,
        "maxValue": high,
    }


@pytest.mark.parametrize(
    ("job", "path", "text"),
    [
        (
            _job("a", scheduling={"strategy": "SPTO"}),
            "scheduling.strategy",
            "(did you mean 'SPOT'?)",
        ),
        (
            _job("a", scheduling={"strategy": "spot"}),
            "scheduling.strategy",
            "(did you mean 'SPOT'?)",
        ),
        (
            _tuning("a", {"metrics": [{"metricId": "accuracy", "goal": "maximise"}]}),
            "study.metrics[0].goal",
            "(did you mean 'maximize'?)",
        ),
        (_tuning("a", {"algorithm": "GRID_SEARH"}), "study.algorithm", "(did you mean 'grid'?)"),
        (
            _job("a", chief=_pool(accelerator={"type": "V100", "count": 1})),
            "chief.accelerator.type",
            "'V100' is not an AcceleratorType (did you mean 'NVIDIA_TESLA_V100'?)",
        ),
        (
            _job("a", chief=_pool(accelerator={"type": "NVIDIA_TESLA_X100", "count": 1})),
            "chief.accelerator.type",
            "'NVIDIA_TESLA_X100' is not an AcceleratorType",
        ),
        (
            _job("a", chief=_pool(extraFields={"machineSpec": {"acceleratorCount": 2}})),
            "chief.extraFields.machineSpec.acceleratorCount",
            "acceleratorCount is 2 but acceleratorType is unset",
        ),
        (
            _job("a", chief=_pool(accelerator={"type": "NVIDIA_TESLA_T4", "count": 0})),
            "chief.accelerator.count",
            "0 x NVIDIA_TESLA_T4 on n1-standard-4 is not valid; valid counts: 1, 2, 4, or unset",
        ),
        (
            _job("a", chief={"machineType": "x9-mega-1"}),
            "chief.machineType",
            "'x9-mega-1' matches no Vertex machine family",
        ),
        (
            _job("a", chief={"machineType": "n1-standard"}),
            "chief.machineType",
            "names a series without its size",
        ),
        (_job("a", displayName="two\nlines"), "displayName", "has a control character"),
        (
            _job("a", scheduling={"maxWaitSeconds": 600}),
            "scheduling.maxWaitSeconds",
            "applies only to the FLEX_START strategy (the strategy is unset)",
        ),
        (
            _tuning(
                "a",
                {"parameters": [_double("l r", 0.1, 1)]},
            ),
            "study.parameters[0].parameterId",
            "'l r' has whitespace",
        ),
        (
            _job("a", persistentResourceId="pool-"),
            "persistentResourceId",
            "'pool-' is not a persistent resource id",
        ),
        (_job("a", labels={"Team": "ml"}), "labels.Team", "label keys are 1-63 characters"),
        (
            _job(
                "a",
                network="projects/1/global/networks/vpc",
                extraFields={"jobSpec": {"pscInterfaceConfig": {"networkAttachment": "a"}}},
            ),
            "extraFields.jobSpec.pscInterfaceConfig",
            "cannot be set with network",
        ),
    ],
)
def test_what_vertex_refuses_is_refused_at_the_jobs_own_key(
    job: dict[str, object], path: str, text: str
) -> None:
    (problem,) = problems_of("dev", _jobs(job)).findings
    assert problem.caller == f"vertex-training:jobs[0].{path}"
    assert text in problem.message


@pytest.mark.parametrize(
    "namespace", ["vertex-trainng", "vertex_training", "Vertex-Training", "vertextraining"]
)
def test_a_misspelt_project_namespace_is_refused(namespace: str) -> None:
    (problem,) = problems_of("dev", {**DEV, f"{namespace}:jobs": "[]"}).findings
    assert problem.caller == f"{namespace}:jobs"
    assert problem.message == (
        f"unknown namespace '{namespace}' (did you mean 'vertex-training:jobs'?); a "
        "misspelt namespace would be silently ignored"
    )
    assert problem.valid.startswith("vertex-training:<key> for this project's keys")
    assert fix(problem, "dev") == (
        f"pulumi config rm {namespace}:jobs --stack dev && pulumi config set "
        "vertex-training:jobs <value> --stack dev"
    )


def test_other_providers_namespaces_stay_accepted() -> None:
    config = parse_stack_config(
        "dev",
        {
            **DEV,
            "gcp:region": "us-central1",
            "pulumi:template": "x",
            "aws:region": "eu-west-1",
            "kubernetes:context": "kind",
            "docker-build:x": "1",
            "random:seed": "1",
            "vertex:foo": "1",
        },
    )
    assert config.gcp_project == "my-project"


def test_every_problem_of_a_stack_is_reported_in_one_run() -> None:
    raw = {
        **_jobs(
            _job(
                "a",
                scheduling={"strategy": "SPTO"},
                chief=_pool(accelerator={"type": "V100", "count": 1}),
            ),
            _job("b", displayName="x\ty", persistentResourceId="-"),
        ),
        "vertex-trainng:region": "us-central1",
    }
    keys = sorted(p.caller for p in problems_of("dev", raw).findings)
    # A job whose keys do not parse (jobs[0]) is not checked further until they do; its
    # pool's accelerator is wrong anywhere: refused where the pool is read, in the same run.
    assert keys == [
        "vertex-training:jobs[0].chief.accelerator.type",
        "vertex-training:jobs[0].scheduling.strategy",
        "vertex-training:jobs[1].displayName",
        "vertex-training:jobs[1].persistentResourceId",
        "vertex-trainng:region",
    ]


# --------------------------------------------------------------------- mutated stacks


def _dev_file() -> dict[str, object]:
    return yaml.safe_load((PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]


@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("jobs[0].scheduling.timeoutSeconds", (0, "scheduling", "timeoutSeconds")),
        ("jobs[2].study.parameters[0].maxValue", (2, "study", "parameters", 0, "maxValue")),
    ],
)
def test_a_number_no_float_holds_is_refused_at_its_key(
    where: str, path: tuple[str | int, ...]
) -> None:
    # 10**400 is an OverflowError as a float: said at the key, not met as a traceback.
    raw = _dev_file()
    holder: typing.Any = raw[key("jobs")]
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = 10**400
    error = problems_of("dev", raw)
    assert key(where) in [f.caller for f in error.findings]


def test_a_negative_workbench_gpu_count_is_refused_in_both_routes() -> None:
    args = {"workbench": vt.Workbench(accelerator=vt.Accelerator("NVIDIA_TESLA_T4", -1))}
    problem, _ = one_rule_both_routes(
        {"workbenchGpuCount": "-1"}, args, "workbench.accelerator.count"
    )
    assert problem.caller == key("workbenchGpuCount")
    assert problem.message == "-1 GPUs is negative"


def test_workbench_keys_on_a_local_stack_are_said_to_be_ignored() -> None:
    raw = {key("workbenchMachineType"): "n1-standard-8", key("workbenchGpuType"): "NVIDIA_TESLA_T4"}
    config = parse_stack_config("local", raw)
    assert [(w.caller, w.message) for w in config.warnings] == [
        (key(name), "a local stack has no Workbench instance: this key is ignored")
        for name in ("workbenchMachineType", "workbenchGpuType")
    ]
    # The local stack file says so itself (workbenchEnabled: false): no warning.
    assert parse_stack_config("local", {key("workbenchEnabled"): "false"}).warnings == ()


@pytest.mark.parametrize("machine_type", ["a3-highgpu-8g", "zz-standard-4", "e2-standard-8"])
def test_a_wrong_workbench_machine_type_is_named_at_its_own_key(machine_type: str) -> None:
    # prod has a T4: a machine that does not take it is the machine type's problem (the
    # message lists the machines that take it), never the GPU type's.
    raw = {**_prod_file(), key("workbenchMachineType"): machine_type}
    error = problems_of("prod", raw)
    assert {f.caller for f in error.findings} == {key("workbenchMachineType")}


def _prod_file() -> dict[str, object]:
    return yaml.safe_load((PROJECT_ROOT / "stacks" / "Pulumi.prod.yaml").read_text())["config"]


def test_a_bad_job_gpu_count_has_the_same_words_in_yaml_and_python() -> None:
    pool = {"machineType": "n1-standard-4", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 3}}
    [problem] = problems_of("local", _jobs(_job("a", chief=pool))).findings
    assert problem.caller == key("jobs[0].chief.accelerator.count")
    # In Python the pool is refused where it is built, before any job or resource exists.
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.WorkerPool(
            machine_type="n1-standard-4", accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3)
        )
    [python] = caught.value.findings
    assert python.caller == "accelerator.count"
    assert problem.message.startswith(python.message)
    assert problem.path == "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
    assert render(problem, "stack").startswith(f"{problem.caller}: {python.message}")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("budget", 10**400),
        ("budget", 2**53 + 1),
        ("imageKeepCount", True),
        ("workbenchGpuCount", True),
    ],
)
def test_a_number_key_takes_whole_numbers_a_float_holds(name: str, value: object) -> None:
    error = problems_of("dev", {**DEV, key(name): value})
    assert [f.caller for f in error.findings] == [key(name)]


def test_a_workbench_on_a_local_platform_is_said_to_be_ignored_in_python_too() -> None:
    from vertex_training.platform.platform import platform_problems

    args = vt.TrainingPlatformArgs(environment="local", workbench=vt.Workbench())
    errors, warnings = platform_problems(args, "p")
    assert errors == []
    assert [(w.caller, w.severity) for w in warnings] == [
        ("TrainingPlatformArgs.workbench", "warning")
    ]


@pytest.mark.parametrize("count", [2**31, 10**400])
def test_an_endpoint_replica_count_an_int32_cannot_hold_is_refused_at_its_key(count: int) -> None:
    # 10**400 was accepted, then an OverflowError when the estimate priced it.
    raw = _dev_file()
    endpoints: typing.Any = raw[key("endpoints")]
    endpoints[0]["deployments"]["primary"]["minReplicaCount"] = count
    [problem] = problems_of("dev", raw).findings
    assert problem.caller == key("endpoints[0].deployments.primary.minReplicaCount")
    assert problem.valid == "1 to 2147483647"


def test_a_machine_that_comes_with_its_gpus_is_told_at_the_machine_type_key() -> None:
    # The user wrote the machine type and no GPU type: the key to change is the one written.
    error = problems_of("dev", dev(workbenchMachineType="a2-highgpu-1g"))
    (problem,) = error.findings
    assert problem.caller == key("workbenchMachineType")
    assert problem.check == "accelerator-required:a2-highgpu-1g"


def test_an_empty_list_of_categories_is_told_in_the_stack_files_words() -> None:
    study = {
        "metrics": [{"metricId": "accuracy", "goal": "maximize"}],
        "parameters": [{"type": "CategoricalParameter", "parameterId": "optimizer", "values": []}],
    }
    tuning = _job("t", study=study, maxTrialCount=2, parallelTrialCount=1)
    tuning["trial"] = {"chief": tuning.pop("chief")}
    (problem,) = problems_of("dev", _jobs(tuning)).findings
    assert problem.caller == key("jobs[0].study.parameters[0].values")
    assert problem.message == "must list at least one category"
