"""The local twin with the real prediction server (``python -m predictor``) and a model
the trainer exported: one probability per class for each instance, from the version the
registry holds, and nothing left after the endpoint is deleted."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from vertex_training.local.runners.registry import Registry

pytestmark = pytest.mark.slow


def _predict(url: str, instances: list[Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps({"instances": instances}).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def test_the_twin_serves_an_exported_model(tmp_path: Path) -> None:
    from tests.trainer.test_export import export

    trained = tmp_path / "root" / "bucket" / "jobs" / "tuning" / "2" / "model"
    assert export(trained) == str(trained)
    twin = Registry(str(tmp_path / "root"))
    version = twin.upload("horses", {"displayName": "horses", "artifactUri": str(trained)})
    endpoint = twin.create_endpoint("123456789", {"displayName": "horses"})
    twin.deploy(
        endpoint.name, {"id": "1000000001", "model": version.version_name}, {"1000000001": 100}
    )
    record = twin.ensure_serving(endpoint.name)
    assert record.serving
    pixel = [[[0, 128, 255]] * 32] * 32
    answer = _predict(record.predict_url, [pixel, pixel])
    assert len(answer["predictions"]) == 2
    assert all(len(p) == 2 and abs(sum(p) - 1) < 1e-4 for p in answer["predictions"])
    assert (answer["deployedModelId"], answer["model"], answer["modelVersionId"]) == (
        "1000000001",
        version.model,
        "1",
    )
    port = int(record.predict_url.split(":")[2].split("/")[0])
    twin.undeploy(endpoint.name, "1000000001", {})
    twin.delete_endpoint(endpoint.name)
    twin.delete_version(version.model, "1")
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    assert not any((tmp_path / "root" / "serving" / "registry").iterdir())
