"""The real CrossGuard pack (policy/pack.py) in its own environment, on the real stacks.

pulumi-policy pins protobuf 5 and the project's lock holds 6, so the pack runs in
policy/venv (``make policy-venv``; ``pulumi preview --policy-pack policy`` builds the same
one). These tests drive the pack's policies through pulumi_policy's own argument types in
that interpreter; they skip, saying so, where it has not been made.

The pack runs in an empty temporary directory, as on a platform team's own project: it
reads no stack file and no file of this repository, so these verdicts are the ones it
gives anywhere.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.policy.conftest import STACKS

POLICY_PYTHON = PROJECT_ROOT / "policy" / "venv" / "bin" / "python"
RUNNER = Path(__file__).with_name("pack_runner.py")
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""How the engine hands a policy a string not known yet (pulumi_policy.proxy's
UNKNOWN_STRING_VALUE): in a dev preview, the image digest and the service account."""

RUNS: dict[str, dict[str, Any]] = {
    "local": {"stack": "local", "config": {}},
    "dev": {"stack": "dev", "config": {}},
    "prod": {"stack": "prod", "config": {}},
    "dev-labels-relaxed": {
        "stack": "dev",
        "config": {"required-labels": {"keys": ["app", "environment", "stack"]}},
    },
    "dev-strict": {
        "stack": "dev",
        "config": {
            "gpus-per-job": {"maxGpus": {"dev": 2}},
            "gpus-per-stack": {"maxGpus": {"dev": 4}},
            "allowed-accelerators": {"allowed": {"dev": ["NVIDIA_TESLA_T4"]}},
            "endpoint-machines": {"allowed": {"dev": ["e2-*"]}},
            "endpoint-replicas": {"maxReplicas": {"dev": 0}},
            "notebook-no-public-ip": {"environment": "prod"},
            "cmek": {"environments": ["dev"]},
            "budget": {"budget": 1},
        },
    },
    "prod-small-budget": {
        "stack": "prod",
        "config": {"budget": {"budget": 0.5}, "budget-prod": {"budget": 0.5}},
    },
    "dev-preview": {"stack": "dev-preview", "config": {"budget": {"budget": 1}}},
    "dev-preview-no-machine": {
        "stack": "dev-preview-no-machine",
        "config": {"budget": {"budget": 1}},
    },
}


def _preview(resources: list[Any], *unknown_keys: str) -> list[dict[str, Any]]:
    """The resources as a preview hands them over: ``unknown_keys`` of every worker pool
    and its container and machine not known yet."""
    out = []
    for resource in resources:
        item = copy.deepcopy(dataclasses.asdict(resource))
        spec = item["props"].get("spec") or {}
        for inner in (spec.get("jobSpec"), spec.get("trialJobSpec")):
            if not inner:
                continue
            if "serviceAccount" in unknown_keys:
                inner["serviceAccount"] = UNKNOWN
            for pool in inner["workerPoolSpecs"]:
                for part in (pool, pool.get("containerSpec", {}), pool.get("machineSpec", {})):
                    for key in unknown_keys:
                        if key in part:
                            part[key] = UNKNOWN
        out.append(item)
    return out


@pytest.fixture(scope="module")
def pack(stacks: dict[str, list[Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not POLICY_PYTHON.is_file():
        pytest.skip(
            "no policy/venv: the pack's pins (pulumi-policy 1.21.0, protobuf 5.29) clash with "
            "requirements.lock, so it runs in its own environment; make policy-venv makes it"
        )
    work = tmp_path_factory.mktemp("pack")
    team_project = tmp_path_factory.mktemp("team-project")
    as_judged = {s: [dataclasses.asdict(r) for r in stacks[s]] for s in STACKS}
    as_judged["dev-preview"] = _preview(stacks["dev"], "imageUri", "serviceAccount")
    as_judged["dev-preview-no-machine"] = _preview(stacks["dev"], "machineType")
    resources = work / "resources.json"
    resources.write_text(json.dumps(as_judged, default=str))
    configs = work / "configs.json"
    configs.write_text(json.dumps(RUNS))
    done = subprocess.run(
        [str(POLICY_PYTHON), str(RUNNER), str(resources), str(configs)],
        cwd=team_project,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_policy_has_an_enforcement_level_and_a_config_schema(pack: dict[str, Any]) -> None:
    policies = pack["policies"]
    assert set(policies) == {
        "required-labels",
        "gpus-per-job",
        "gpus-per-stack",
        "allowed-accelerators",
        "endpoint-machines",
        "endpoint-replicas",
        "job-timeout",
        "no-secret-in-body",
        "image-by-digest",
        "no-default-service-account",
        "notebook-no-public-ip",
        "bucket-access",
        "cmek",
        "budget",
        "budget-prod",
        "capacity-per-hour",
        "capacity-team-label",
    }
    for name, meta in policies.items():
        assert meta["level"] in ("advisory", "mandatory"), name
        assert "environment" in meta["config"], name
    assert policies["budget"]["level"] == "advisory"
    assert policies["budget-prod"]["level"] == "mandatory"
    assert {"budget", "workbenchHours"} <= set(policies["budget-prod"]["config"])


@pytest.mark.parametrize("run", ["local", "dev", "prod"])
def test_real_stacks_pass_all_but_the_labels_they_do_not_set(
    pack: dict[str, Any], run: str
) -> None:
    found = pack["runs"][run]
    assert set(found) == {"required-labels"}, found
    assert all(m.startswith("missing label(s) team, cost-center") for m in found["required-labels"])


def test_relaxed_labels_leave_nothing(pack: dict[str, Any]) -> None:
    assert pack["runs"]["dev-labels-relaxed"] == {}


def test_strict_config_turns_the_dev_stack_into_violations(pack: dict[str, Any]) -> None:
    found = pack["runs"]["dev-strict"]
    assert found["gpus-per-job"] == ["the job holds 4 accelerators at once; dev allows 2 per job"]
    assert found["gpus-per-stack"][0].startswith("the stack's jobs hold 6 accelerators")
    assert len(found["allowed-accelerators"]) == 3  # two cassava pools, one trial pool
    assert found["endpoint-machines"] == [
        "deployments.primary.dedicatedResources.machineSpec.machineType: n1-standard-2 is not "
        "allowed for an endpoint in dev (allowed: e2-*)"
    ]
    assert found["endpoint-replicas"] == [
        "deployments.primary.dedicatedResources: up to 1 replicas; dev allows 0 per deployed "
        "model (maxReplicaCount)"
    ]
    assert found["notebook-no-public-ip"] == [
        "gceSetup.disablePublicIp is not true: the notebook VM gets a public IP"
    ]
    assert len(found["cmek"]) == 4  # the bucket and three jobs
    (budget,) = found["budget"]
    assert "is over the budget of $1.00" in budget
    assert "budget-prod" not in found  # dev is judged by the advisory policy only


def test_a_preview_judges_the_budget_with_the_image_not_known_yet(
    pack: dict[str, Any],
) -> None:
    (budget,) = pack["runs"]["dev-preview"]["budget"]
    assert "is over the budget of $1.00" in budget
    assert pack["runs"]["dev-strict"]["budget"] == [budget]  # the same estimate as after up


def test_a_preview_with_a_machine_not_known_yet_cannot_judge_the_budget(
    pack: dict[str, Any],
) -> None:
    (message,) = pack["runs"]["dev-preview-no-machine"]["budget"]
    assert message.startswith("unknown: string value at .spec.jobSpec.workerPoolSpecs[0]")
    assert message.endswith("machineSpec.machineType can't be known during preview")


def test_prod_budget_is_the_mandatory_policy(pack: dict[str, Any]) -> None:
    found = pack["runs"]["prod-small-budget"]
    (message,) = found["budget-prod"]
    assert "over the budget of $0.50" in message
    assert "budget" not in found


@pytest.mark.parametrize(
    "config_file", sorted((PROJECT_ROOT / "policy" / "config").glob("*.json")), ids=lambda p: p.name
)
def test_stack_policy_configs_name_real_policies(pack: dict[str, Any], config_file: Path) -> None:
    config = json.loads(config_file.read_text())
    assert set(config) <= set(pack["policies"]), config_file
    for name, settings in config.items():
        assert set(settings) - {"enforcementLevel"} <= set(pack["policies"][name]["config"])


def test_the_pack_loads_no_reader_of_project_files(pack: dict[str, Any]) -> None:
    # The stack config reader and the project locator read a project's files (its stacks/,
    # its Pulumi.yaml): none is loaded once every policy has run on every stack.
    assert pack["loaded"]["vertex_training.cost.estimate"]
    assert pack["loaded"]["vertex_training.stack"] == []
    assert pack["loaded"]["vertex_training._project"] == []
