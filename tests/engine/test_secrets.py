"""Secrets set with ``pulumi config set --secret --path`` inside a job's ``env``, a model's
and an endpoint's ``description``, through the real engine: ``preview`` shows no value and
warns of each (naming the field and what to use instead), ``up`` runs the job with the
value, and no plain value is anywhere in the state directory (the state, its history, its
backups), in what ``preview`` and ``up`` print, or in the local runner's logs. The stack
runs with the user's passphrase; without one it is refused before the CLI starts.

The tests share one stack and run in file order; the job runs the stand-in trainer.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.conftest import ProjectMaker, PulumiProject, repo_stack_config
from tests.engine.standin_trainer import MODEL_ENV
from tests.engine.test_policy_pack import POLICY_VENV, _preview, _with_pack

pytestmark = pytest.mark.slow

JOB, MODEL, ENDPOINT = "cassava-mwms", "cassava", "cassava"
SECRETS = {
    "vertex-training:jobs[0].chief.env.API_TOKEN": "tok-5ecret-job-7Q",
    "vertex-training:models[0].description": "5ecret-model-note-7Q",
    "vertex-training:endpoints[0].description": "5ecret-endpoint-note-7Q",
}
PASSPHRASE = "engine-test-passphrase"


def secrets_stack_config() -> dict[str, Any]:
    """One job of the local stack (one replica), its model and an endpoint serving it."""
    config = copy.deepcopy(repo_stack_config())
    settings = config["config"]
    (job,) = [j for j in settings["vertex-training:jobs"] if j["name"] == JOB]
    job.pop("workers")
    job["pollIntervalSeconds"] = 1
    settings["vertex-training:jobs"] = [job]
    settings.pop("vertex-training:persistentResources")
    settings["vertex-training:models"] = [{"name": MODEL, "job": JOB}]
    settings["vertex-training:endpoints"] = [
        {
            "name": ENDPOINT,
            "deployments": {"primary": {"model": MODEL, "machineType": "n1-standard-2"}},
        }
    ]
    return config


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker, model_dir: Path) -> PulumiProject:
    made = new_project("secrets", secrets_stack_config(), standin_trainer=True)
    made.env[MODEL_ENV] = str(model_dir)
    # The user's passphrase: a new salt for it (no state yet), then the secrets.
    made.env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
    document = yaml.safe_load(made.config_file.read_text(encoding="utf-8"))
    document.pop("encryptionsalt", None)
    made.config_file.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    for key, value in SECRETS.items():
        made.pulumi("config", "set", "--secret", "--path", key, value)
    return made


def plain_values_in(*texts: str) -> list[str]:
    return [value for value in SECRETS.values() for text in texts if value in text]


def files_holding_secrets(root: Path) -> list[str]:
    return [
        str(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and plain_values_in(path.read_text(encoding="utf-8", errors="replace"))
    ]


def test_the_stack_file_holds_each_secret_encrypted(project: PulumiProject) -> None:
    text = project.config_file.read_text(encoding="utf-8")
    assert plain_values_in(text) == []
    assert text.count("secure: v1:") == len(SECRETS)


def test_without_a_passphrase_the_stack_is_refused_before_anything_runs(
    project: PulumiProject,
) -> None:
    passphrase = project.env.pop("PULUMI_CONFIG_PASSPHRASE")
    try:
        said = project.refused("preview")
    finally:
        project.env["PULUMI_CONFIG_PASSPHRASE"] = passphrase
    assert (
        "stack 'local' holds secrets (vertex-training:endpoints, vertex-training:jobs, "
        "vertex-training:models) and no passphrase is set" in said
    )


def test_preview_shows_no_value_and_warns_of_each_secret(project: PulumiProject) -> None:
    done = project.stack("preview", "--diff")
    said = done.stdout + done.stderr
    assert plain_values_in(said) == []
    assert "[secret]" in said
    warnings = [line for line in said.splitlines() if "holds a secret" in line]
    assert any(
        "CustomJobArgs.chief.env: holds a secret" in line
        and "(Vertex field jobSpec.workerPoolSpecs[0].containerSpec.env[0].value)" in line
        and "read by the trainer at start" in line
        for line in warnings
    ), said[-4000:]
    assert any("ModelArgs: description: holds a secret" in line for line in warnings)
    assert any("EndpointArgs: description: holds a secret" in line for line in warnings)


def test_the_policy_flags_the_secret_in_the_job_body_when_a_team_makes_it_mandatory(
    project: PulumiProject,
) -> None:
    if not (POLICY_VENV / "bin" / "python").is_file():
        pytest.fail("no policy/venv for the pack: make policy-venv (make test builds it)")
    if not (project.dir / "policy").exists():
        _with_pack(project)
    code, output = _preview(project, {"no-secret-in-body": {"enforcementLevel": "mandatory"}})
    assert code != 0, output[-4000:]
    assert "no-secret-in-body" in output
    assert "jobSpec.workerPoolSpecs[0].containerSpec.env[0].value: holds a secret" in output
    assert plain_values_in(output) == []


def test_up_runs_the_job_with_the_value_and_keeps_it_encrypted(project: PulumiProject) -> None:
    done = project.up()
    assert plain_values_in(done.stdout, done.stderr) == []
    # The job ran with the value: the local Vertex keeps the body it was sent.
    (body,) = project.local_root.glob("jobs/*/body.json")
    assert SECRETS["vertex-training:jobs[0].chief.env.API_TOKEN"] in body.read_text()
    # Nowhere in the state, its history or its backups; nor in any log.
    state = [str(p) for p in (project.root / "state").rglob("*") if p.is_file()]
    assert [p for p in state if "/history/" in p] and [p for p in state if "/backups/" in p]
    assert files_holding_secrets(project.root / "state") == []
    assert [p for p in files_holding_secrets(project.local_root) if p.endswith(".log")] == []
    resources = {
        r["type"].rsplit(":", 1)[-1]: r
        for r in project.export()["deployment"]["resources"]
        if ":dynamic/vertex:" in r["type"]
    }
    # Encrypted in the inputs and the outputs: the list that holds it (a dynamic provider is
    # handed no secret; the engine marks its results secret by the inputs, a list as a whole),
    # the rest of the body readable.
    for side in ("inputs", "outputs"):
        spec = resources["CustomJob"][side]["spec"]
        assert "ciphertext" in spec["jobSpec"]["workerPoolSpecs"], side
        assert spec["jobSpec"]["scheduling"] == {"timeout": "900s"}, side
    assert resources["CustomJob"]["inputs"]["secret_paths"] == [
        "jobSpec.workerPoolSpecs[0].containerSpec.env[0].value"
    ]
    assert resources["Model"]["inputs"]["secret_paths"] == ["description"]
    assert resources["Endpoint"]["inputs"]["secret_paths"] == ["description"]
    outputs = project.pulumi("stack", "output", "--json", "--show-secrets").stdout
    assert plain_values_in(outputs) == []  # no output is derived from them


def test_a_second_up_changes_nothing(project: PulumiProject) -> None:
    done = project.up()
    assert plain_values_in(done.stdout, done.stderr) == []
    update = project.last_update()
    assert set(update["resourceChanges"]) == {"same"}, update["resourceChanges"]
