"""The local stack serves, through the real engine: ``up`` registers version 1 of the best
trial's model and serves it (a predict through ``predictUrl`` gives one probability per
class for each instance); a second ``up`` changes nothing; a retrained study registers
version 2, the alias and the traffic move; an ``up`` that lost its state after the upload
adopts instead of uploading again; ``destroy`` leaves no server, no port, no registry entry.

The tests share one stack and run in file order.
"""

from __future__ import annotations

import copy
import json
import socket
import urllib.request
from typing import Any

import pytest

from tests.engine.conftest import ProjectMaker, PulumiProject, repo_stack_config

pytestmark = pytest.mark.slow

MODEL = "horses-humans"
ENDPOINT = "horses-humans"
TUNING_JOB = "horses-humans-tuning"


def serving_stack_config(epochs: str = "1") -> dict[str, Any]:
    """The local stack's study (two small trials) and what serves it; no other job."""
    config = copy.deepcopy(repo_stack_config())
    settings = config["config"]
    settings["vertex-training:jobs"] = [
        job for job in settings["vertex-training:jobs"] if job["name"] == TUNING_JOB
    ]
    tuning = settings["vertex-training:jobs"][0]
    tuning["maxTrialCount"] = 2
    tuning["parallelTrialCount"] = 2
    args = tuning["trial"]["chief"]["args"] = list(tuning["trial"]["chief"]["args"])
    args[args.index("--synthetic-examples") + 1] = "32"
    args[args.index("--epochs") + 1] = epochs
    return config


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    return new_project("serving", serving_stack_config())


def predict(url: str, instances: list[Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps({"instances": instances}).encode())
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def registry(project: PulumiProject) -> dict[str, Any]:
    """Each registered model's versions and their aliases, as the local registry keeps them."""
    found = {}
    for path in (project.local_root / "serving" / "registry").glob("*/model.json"):
        model = json.loads(path.read_text())
        found[path.parent.name] = {
            v["versionId"]: sorted(v["versionAliases"]) for v in model["versions"]
        }
    return found


def port_of(url: str) -> int:
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


PIXEL = [[[0, 128, 255]]]  # a 1x1 RGB image: the model resizes what it gets


def test_up_registers_version_1_and_serves_it(project: PulumiProject) -> None:
    project.up()

    model = project.output("models")[MODEL]
    assert model["versionId"] == "1"
    endpoint = project.output("endpoints")[ENDPOINT]
    assert endpoint["predictUrl"].startswith("http://127.0.0.1:")
    answer = predict(endpoint["predictUrl"], [PIXEL, PIXEL])
    assert len(answer["predictions"]) == 2
    assert all(len(p) == 2 and abs(sum(p) - 1) < 1e-4 for p in answer["predictions"]), answer
    assert (answer["model"], answer["modelVersionId"]) == (model["name"], "1")
    assert list(registry(project).values()) == [{"1": ["default", "production"]}]


def test_second_up_changes_nothing(project: PulumiProject) -> None:
    project.up()

    update = project.last_update()
    assert set(update["resourceChanges"]) == {"same"}, update["resourceChanges"]


def test_a_retrained_study_becomes_version_2_and_takes_alias_and_traffic(
    project: PulumiProject,
) -> None:
    project.write_config(serving_stack_config(epochs="2"))
    project.up()

    model = project.output("models")[MODEL]
    assert model["versionId"] == "2"
    # The replaced version is deleted once the endpoint serves the new one.
    assert list(registry(project).values()) == [{"2": ["default", "production"]}]
    answer = predict(project.output("endpoints")[ENDPOINT]["predictUrl"], [PIXEL])
    assert answer["modelVersionId"] == "2"


def test_an_up_that_lost_its_state_after_the_upload_adopts(project: PulumiProject) -> None:
    urns = {
        r["urn"].rsplit("::", 1)[-1] + r["type"].rsplit(":", 1)[-1]: r["urn"]
        for r in project.export()["deployment"]["resources"]
    }
    # As when `up` was killed after the upload, before the engine wrote the result.
    project.pulumi("state", "delete", urns[f"{MODEL}Model"], "--target-dependents", "--yes")
    project.up()

    assert project.output("models")[MODEL]["versionId"] == "2"
    assert list(registry(project).values()) == [{"2": ["default", "production"]}]
    model_file = next((project.local_root / "serving" / "registry").glob("*/model.json"))
    assert json.loads(model_file.read_text())["nextVersion"] == 3  # nothing uploaded again


def test_destroy_leaves_no_server_port_or_registry_entry(project: PulumiProject) -> None:
    port = port_of(project.output("endpoints")[ENDPOINT]["predictUrl"])

    project.stack("destroy")

    assert project.processes() == []
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    assert registry(project) == {}
    assert list((project.local_root / "serving" / "endpoints").iterdir()) == []


@pytest.fixture
def bad_project(new_project: ProjectMaker) -> PulumiProject:
    config = serving_stack_config()
    endpoint = config["config"]["vertex-training:endpoints"][0]
    endpoint["deployments"]["primary"]["machineType"] = "n1-standard-3"
    endpoint["traffic"] = {"primary": 90}
    return new_project("serving-bad", config)


def test_bad_serving_input_is_one_clear_message_and_nothing_is_created(
    bad_project: PulumiProject,
) -> None:
    output = bad_project.refused("preview")

    # Named at their YAML keys, both in one message, as the jobs' problems are.
    assert (
        "vertex-training:endpoints[0].deployments.primary.machineType: 'n1-standard-3' is not "
        "a prediction machine type" in output
    )
    assert "vertex-training:endpoints[0].traffic: sums to 90 (primary: 90)" in output
    resources = bad_project.export()["deployment"].get("resources") or []
    assert [r for r in resources if ":dynamic/vertex:" in r["type"]] == []
