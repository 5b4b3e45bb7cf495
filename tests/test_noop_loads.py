"""A no-op ``up`` loads only what it needs.

The CLI starts the dynamic provider process for every ``up``; on a resource that did not
change, that process unpickles our providers and runs their check and diff. Inputs equal to
those the state holds were judged by the check that let them in: judging them again would
load the protos (``google.cloud.aiplatform_v1``) and a job backend for nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import PROJECT_ROOT, modules_loaded_by
from tests.pulumi_mocks import run_program, stack_file_config

HEAVY = (
    "google.cloud.aiplatform_v1",
    "vertex_training.jobs.protos",
    "vertex_training.local.runners.jobs",
    "vertex_training.jobs.backends.vertex",
    "vertex_training.serving.backends.vertex",
    "tensorflow",
    "optuna",
)
"""What no unchanged resource needs. (A local endpoint's diff does read the local
serving backend's store: it restarts a server that died.)"""

CHECK_AND_DIFF = """
import base64, json, sys
import dill
import pulumi.dynamic
for props in json.loads(open({path!r}).read()):
    provider = dill.loads(base64.b64decode(props["__provider"]))
    checked = provider.check(props, dict(props))
    assert not checked.failures, checked.failures
    provider.diff(props.get("name") or "id", props, dict(checked.inputs))
"""


@pytest.mark.slow
def test_an_unchanged_resource_is_checked_and_diffed_without_the_protos_or_a_backend(
    tmp_path: Path,
) -> None:
    from vertex_training._dynamic import Provider

    run = run_program("local", stack_file_config(PROJECT_ROOT / "stacks" / "Pulumi.local.yaml"))
    dynamic = [r for r in run.registrations if r.type.startswith("pulumi-python:dynamic/")]
    assert len(dynamic) == 5  # two jobs, the model, the endpoint, the warm pool
    # What the state holds: the inputs as the first check returned them.
    import base64

    import dill

    checked = []
    for registration in dynamic:
        props = dict(registration.inputs)
        provider = dill.loads(base64.b64decode(props["__provider"]))
        assert isinstance(provider, Provider)
        # (Under the mocks a model's source job reports no model directory: its check fails
        # here, never in an engine's state.)
        result = provider.check({}, dict(props))
        checked.append({**result.inputs, "__provider": props["__provider"]})
    path = tmp_path / "inputs.json"
    path.write_text(json.dumps(checked), encoding="utf-8")

    assert modules_loaded_by(CHECK_AND_DIFF.format(path=str(path)), HEAVY) == []
