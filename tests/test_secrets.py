"""Secrets in a stack file stay secrets: the values ``pulumi config set --secret --path``
marks reach the resources as secret Outputs, each resource lists its body's secrets
(``secret_paths``) and warns of them; what cannot be a secret is said before anything runs.
(Through the real engine: tests/engine/test_secrets.py.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

import vertex_training as vt
from policy.rules import Resource, no_secret_in_body
from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_program, run_pulumi, stack_file_config
from vertex_training.stack import engine
from vertex_training.stack.config import (
    SECRET_STAND_IN,
    ConfigError,
    load_stack_config,
    parse_stack_config,
)
from vertex_training.stack.secure import secure_paths

LOCAL = PROJECT_ROOT / "stacks" / "Pulumi.local.yaml"
JOBS, MODELS, ENDPOINTS = (f"vertex-training:{k}" for k in ("jobs", "models", "endpoints"))
TOKEN, MODEL_NOTE, ENDPOINT_NOTE = "tok-5ecret-0", "model-5ecret-1", "endpoint-5ecret-2"
SECURE = {"secure": "v1:not-decrypted-here"}


def with_secrets(config: dict[str, Any], secret: Any) -> dict[str, Any]:
    """The local stack's config with a secret job env value, model and endpoint
    description (``secret``: the value, or the stack file's ``secure:`` mapping)."""
    document = json.loads(json.dumps(config))
    document[JOBS][0]["chief"]["env"] = {"API_TOKEN": secret(TOKEN)}
    document[MODELS][0]["description"] = secret(MODEL_NOTE)
    document[ENDPOINTS][0]["description"] = secret(ENDPOINT_NOTE)
    return document


def local_config() -> dict[str, Any]:
    return dict(yaml.safe_load(LOCAL.read_text())["config"])


def plain_parts(value: Any) -> Any:
    """``value`` (as the engine receives it) without its secret parts."""
    if isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        return "[secret]"
    if isinstance(value, dict):
        return {k: plain_parts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_parts(v) for v in value]
    return value


def test_secure_paths_are_every_encrypted_value_at_any_depth() -> None:
    config = with_secrets(local_config(), lambda _: SECURE)
    assert list(secure_paths(config)) == [
        (JOBS, 0, "chief", "env", "API_TOKEN"),
        (MODELS, 0, "description"),
        (ENDPOINTS, 0, "description"),
    ]


@pytest.fixture
def secret_stack_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local stack file holding the three secrets, as the program finds it."""
    path = tmp_path / "Pulumi.local.yaml"
    path.write_text(yaml.safe_dump({"config": with_secrets(local_config(), lambda _: SECURE)}))
    monkeypatch.setattr(engine, "stack_file", lambda stack, start=None: path)
    return path


def test_secret_values_reach_the_resources_as_secrets_and_are_warned_of(
    secret_stack_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    decrypted = with_secrets(local_config(), lambda value: value)
    config = stack_file_config(LOCAL) | {k: json.dumps(decrypted[k]) for k in (JOBS, MODELS)}
    config[ENDPOINTS] = json.dumps(decrypted[ENDPOINTS])
    with caplog.at_level(logging.WARNING):
        run = run_program("local", config, secret_keys=[JOBS, MODELS, ENDPOINTS])
    job, model = run.named("cassava-mwms"), run.of_type("pulumi-python:dynamic/vertex:Model")[0]
    endpoint = run.of_type("pulumi-python:dynamic/vertex:Endpoint")[0]
    for resource, secret in ((job, TOKEN), (model, MODEL_NOTE), (endpoint, ENDPOINT_NOTE)):
        inputs = json.dumps(resource.inputs)
        assert secret in inputs  # the value is there, as a secret
        assert secret not in json.dumps(plain_parts(resource.inputs)), resource.name
    assert job.inputs["secret_paths"] == ["jobSpec.workerPoolSpecs[0].containerSpec.env[0].value"]
    assert model.inputs["secret_paths"] == ["description"]
    assert endpoint.inputs["secret_paths"] == ["description"]
    others = [r for r in run.registrations if r.name == "horses-humans-tuning"]
    assert others and others[0].inputs["secret_paths"] == []
    # The policy pack flags each (advisory; a team sets it mandatory), the others pass.
    (flagged,) = no_secret_in_body(Resource(job.type, job.inputs, job.urn, job.name))
    assert flagged.startswith(
        "jobSpec.workerPoolSpecs[0].containerSpec.env[0].value: holds a secret"
    )
    assert "read by the trainer at start" in flagged
    assert no_secret_in_body(Resource(model.type, model.inputs)) != []
    assert no_secret_in_body(Resource(others[0].type, others[0].inputs)) == []
    warnings = [r.getMessage() for r in caplog.records if "holds a secret" in r.getMessage()]
    assert len(warnings) == 3
    assert warnings[0].startswith("CustomJobArgs.chief.env: holds a secret")
    assert "(Vertex field jobSpec.workerPoolSpecs[0].containerSpec.env[0].value)" in warnings[0]
    assert "Secret Manager" in warnings[0]
    assert any(w.startswith("ModelArgs: description: holds a secret") for w in warnings)
    assert not any(s in r.getMessage() for r in caplog.records for s in (TOKEN, MODEL_NOTE))


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (("vertex-training:region",), "lands in plain text in the resources that use it"),
        ((JOBS,), "is a secret as a whole; only single values inside it can be"),
    ],
)
def test_what_cannot_be_a_secret_is_a_config_error(path: tuple[str, ...], said: str) -> None:
    raw = {"vertex-training:environment": "local", JOBS: "[]"}
    with pytest.raises(ConfigError) as caught:
        parse_stack_config("local", raw, [path])
    (finding,) = caught.value.findings
    assert finding.caller == path[0]
    assert said in finding.message
    assert "pulumi config set --secret --path" in finding.valid
    assert f"  - {path[0]}: " in str(caught.value)
    assert "Vertex field" not in str(caught.value)


def test_a_stack_file_read_without_the_engine_stands_in_for_its_secrets(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.local.yaml"
    path.write_text(yaml.safe_dump({"config": with_secrets(local_config(), lambda _: SECURE)}))
    config = load_stack_config(path)
    job = next(j for j in config.jobs.jobs if j.name == "cassava-mwms")
    assert job.args.chief is not None
    assert job.args.chief.env == {"API_TOKEN": SECRET_STAND_IN}


def test_a_python_programs_secret_is_listed_and_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = vt.WorkerPool(
        machine_type="n1-standard-4",
        image="us-docker.pkg.dev/p/r/trainer@sha256:" + "1" * 64,
        env={"API_TOKEN": pulumi.Output.secret(TOKEN), "PLAIN": pulumi.Output.from_input("x")},
    )
    args = vt.CustomJobArgs(
        project="p", region="us-central1", chief=pool, base_output_directory="gs://b/out"
    )
    with caplog.at_level(logging.WARNING):
        run = run_pulumi(lambda: vt.CustomJob("j", args), stack="dev")
    job = run.named("j")
    assert job.inputs["secret_paths"] == ["jobSpec.workerPoolSpecs[0].containerSpec.env[0].value"]
    assert TOKEN not in json.dumps(plain_parts(job.inputs))
    (warning,) = [r.getMessage() for r in caplog.records if "holds a secret" in r.getMessage()]
    assert warning.startswith("CustomJobArgs.chief.env: holds a secret")
