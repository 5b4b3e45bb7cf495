"""The prediction server: its routes in process, then ``python -m predictor`` as the
serving image and the local twin run it (real processes, real TensorFlow)."""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from predictor.server import MAX_REQUEST_BYTES, PredictionServer, Predictor, build_parser

REPO = Path(__file__).resolve().parents[2]
HEALTH = "/v1/endpoints/e/deployedModels/d"
PREDICT = "/v1/projects/local/locations/local/endpoints/e:predict"
START_TIMEOUT_S = 120


def request(
    port: int, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] = {}
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def predict(port: int, document: Any) -> tuple[int, Any]:
    return request(port, "POST", PREDICT, json.dumps(document).encode())


@pytest.fixture
def in_process() -> Iterator[tuple[PredictionServer, Predictor]]:
    """A server whose models never load: the routes without TensorFlow."""
    predictor = Predictor(model_dir="/nowhere")
    server = PredictionServer(("127.0.0.1", 0), predictor, HEALTH, PREDICT)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, predictor
    server.shutdown()
    server.server_close()


def test_health_is_503_until_the_models_are_loaded(
    in_process: tuple[PredictionServer, Predictor],
) -> None:
    server, predictor = in_process
    port = server.server_address[1]
    assert request(port, "GET", HEALTH) == (503, {"error": "the models are loading"})
    assert predict(port, {"instances": [[1]]}) == (503, {"error": "the models are loading"})
    predictor.ready.set()
    assert request(port, "GET", HEALTH) == (200, {})


def test_other_routes_and_bodies_are_refused_in_json(
    in_process: tuple[PredictionServer, Predictor],
) -> None:
    server, predictor = in_process
    port = server.server_address[1]
    predictor.ready.set()
    assert request(port, "GET", "/elsewhere") == (404, {"error": "no route /elsewhere"})
    assert request(port, "GET", PREDICT) == (405, {"error": f"POST to {PREDICT}"})
    status, answer = request(port, "POST", PREDICT, b"{not json")
    assert status == 400 and answer["error"].startswith("the body is not JSON")
    assert predict(port, {"inputs": []}) == (
        400,
        {"error": 'expected a JSON object {"instances": [...]}'},
    )
    too_large = {"Content-Length": str(MAX_REQUEST_BYTES + 1)}
    status, answer = request(port, "POST", PREDICT, b"", headers=too_large)
    assert status == 413 and "at most" in answer["error"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_environment(**env: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AIP_")}
    environment.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", **env)
    return environment


def start_server(
    tmp_path: Path, *args: str, **env: str
) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = free_port()
    log = tmp_path / f"predictor-{port}.log"
    environment = server_environment(
        AIP_HTTP_PORT=str(port), AIP_HEALTH_ROUTE=HEALTH, AIP_PREDICT_ROUTE=PREDICT, **env
    )
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "predictor", "--host", "127.0.0.1", *args],
            cwd=REPO,
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        try:
            if request(port, "GET", HEALTH)[0] == 200:
                return process, port, log
        except OSError:
            pass  # not listening yet
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


def jpeg(height: int, width: int) -> dict[str, str]:
    import numpy as np
    import tensorflow as tf

    pixels = np.random.default_rng(height).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return {"b64": base64.b64encode(tf.io.encode_jpeg(pixels).numpy()).decode()}


@pytest.mark.slow
def test_the_twin_splits_traffic_and_says_which_deployed_model_answered_and_sigterm_stops_it(
    tmp_path: Path, model_dir: Path
) -> None:
    model = "projects/local/locations/local/models/horses"
    deployments = [
        {"deployedModelId": deployed, "model": model, "modelVersionId": version,
         "modelDir": str(model_dir), "trafficPercent": percent}
        for deployed, version, percent in (("d1", "1", 60), ("d2", "2", 40), ("d3", "3", 0))
    ]  # fmt: skip
    path = tmp_path / "deployments.json"
    path.write_text(json.dumps(deployments))
    process, port, log = start_server(tmp_path, "--deployments", str(path))
    try:
        answered: Counter[str] = Counter()
        for _ in range(60):
            status, answer = predict(port, {"instances": [jpeg(40, 60), jpeg(90, 20)]})
            assert status == 200, answer
            assert len(answer["predictions"]) == 2
            assert all(len(p) == 2 for p in answer["predictions"])
            version = {"d1": "1", "d2": "2"}[answer["deployedModelId"]]
            assert answer["model"] == model and answer["modelVersionId"] == version
            answered[answer["deployedModelId"]] += 1
        assert set(answered) == {"d1", "d2"}  # d3 has 0 %
        status, answer = predict(port, {"instances": [{"b64": "!!"}]})
        assert (status, answer) == (400, {"error": "instances[0]: 'b64' is not valid base64"})
        assert predict(port, {"instances": [[[[0, 0, 0]]]]})[0] == 200  # still serving
    finally:
        assert stop(process) == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)
    assert "stopped" in log.read_text()
    assert "Traceback" not in log.read_text()


def test_the_serving_image_serves_aip_storage_uri_without_deployment_metadata(
    model_dir: Path,
) -> None:
    """The serving image's way: the model from AIP_STORAGE_URI, no deployments (in process:
    ``python -m predictor`` is the twin's, above, and the loads that fail, below)."""
    args = build_parser({"AIP_STORAGE_URI": str(model_dir)}).parse_args([])
    predictor = Predictor(model_dir=args.model_dir)
    predictor.load()
    assert predictor.ready.is_set()
    answer = predictor.predict(json.dumps({"instances": [jpeg(33, 33)]}).encode())
    assert set(answer) == {"predictions"} and len(answer["predictions"]) == 1


def run_to_exit(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m predictor`` that is expected to stop by itself."""
    return subprocess.run(
        [sys.executable, "-m", "predictor", "--host", "127.0.0.1", "--port", "0", *args],
        cwd=REPO,
        env=server_environment(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_bad_deployments_file_stops_the_server_before_it_listens(tmp_path: Path) -> None:
    path = tmp_path / "deployments.json"
    path.write_text("[]")
    result = run_to_exit("--deployments", str(path))
    assert result.returncode == 2
    assert "expected a non-empty JSON list" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_model_that_cannot_load_ends_the_server_with_its_reason(tmp_path: Path) -> None:
    result = run_to_exit(AIP_STORAGE_URI=str(tmp_path / "missing"))
    assert result.returncode == 1
    assert f"cannot load the model in {tmp_path / 'missing'}" in result.stderr
    assert "Traceback" not in result.stderr
