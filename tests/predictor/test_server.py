"""The prediction server: its routes and its batching in process (real TensorFlow, the
model's calls held by a gate), then ``python -m predictor`` as the serving image and the
local twin run it (real processes)."""

from __future__ import annotations

import asyncio
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from predictor.batching import Batching
from predictor.deployments import Deployment
from predictor.model import ServedModel
from predictor.server import (
    MAX_REQUEST_BYTES,
    PredictionServer,
    Predictor,
    build_parser,
    default_intra_op_threads,
    serve,
)

REPO = Path(__file__).resolve().parents[2]
HEALTH = "/v1/endpoints/e/deployedModels/d"
PREDICT = "/v1/projects/local/locations/local/endpoints/e:predict"
START_TIMEOUT_S = 120


def run(coroutine: Any) -> Any:
    """``coroutine`` to its end on a loop of its own: not ``asyncio.run``, which leaves the
    thread without a current loop, which the Pulumi mocks of later tests in this process
    ask for."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def request_with_headers(
    port: int, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] = {}
) -> tuple[int, Any, Mapping[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        response = connection.getresponse()
        return response.status, json.loads(response.read()), dict(response.getheaders())
    finally:
        connection.close()


def request(
    port: int, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] = {}
) -> tuple[int, Any]:
    return request_with_headers(port, method, path, body, headers)[:2]


def predict(port: int, document: Any) -> tuple[int, Any]:
    return request(port, "POST", PREDICT, json.dumps(document).encode())


@pytest.fixture
def start_server_in_process() -> Iterator[Callable[[Predictor], int]]:
    """Starts servers on an event loop of their own thread (the test's thread is the
    clients'); stops them after the test."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers: list[PredictionServer] = []

    def start(predictor: Predictor) -> int:
        servers.append(PredictionServer(predictor, HEALTH, PREDICT))
        return asyncio.run_coroutine_threadsafe(servers[-1].start("127.0.0.1", 0), loop).result()

    yield start
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def test_health_is_503_until_the_models_are_loaded(
    start_server_in_process: Callable[[Predictor], int],
) -> None:
    predictor = Predictor(model_dir="/nowhere")  # never loaded: the routes without TensorFlow
    port = start_server_in_process(predictor)
    assert request(port, "GET", HEALTH) == (503, {"error": "the models are loading"})
    assert predict(port, {"instances": [[1]]}) == (503, {"error": "the models are loading"})
    predictor.ready.set()
    assert request(port, "GET", HEALTH) == (200, {})


def test_other_routes_and_bodies_are_refused_in_json(
    start_server_in_process: Callable[[Predictor], int],
) -> None:
    predictor = Predictor(model_dir="/nowhere")
    port = start_server_in_process(predictor)
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


HELD = Batching().batch_threads
"""Calls held at once: one per batch thread."""


class Gate:
    """Holds each call of the model, once closed, until opened; records the calls' sizes.
    The hook that makes concurrency deterministic: requests queue behind a held call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        self.opened = threading.Event()
        self.opened.set()
        run = ServedModel.run

        def gated(model: ServedModel, signature: str, rows: Sequence[Any]) -> list[Any]:
            self.calls.append(len(rows))
            assert self.opened.wait(60), "the test never opened the gate"
            return run(model, signature, rows)

        monkeypatch.setattr(ServedModel, "run", gated)

    def close(self) -> None:
        self.calls.clear()
        self.opened.clear()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    return Gate(monkeypatch)


def wait_until(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    """Until ``condition()`` holds (a state of the server, not a guess at its timing)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the server never reached the state waited for"
        time.sleep(0.005)


def queued(predictor: Predictor) -> int:
    return sum(batcher.queued for batcher in predictor.batchers.values())


def held_with_queued(
    port: int,
    predictor: Predictor,
    gate: Gate,
    documents: Sequence[Any],
    clients: ThreadPoolExecutor,
) -> list[Any]:
    """Opens a connection a document, posts the first documents one by one, each held in a
    call of its own (one per batch thread: several connections are open, so the calls run
    on the batcher's threads), then the others, which queue behind them; the futures of
    their answers."""
    connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for _ in documents]
    for connection in connections:
        connection.connect()
    wait_until(lambda: predictor.open_connections() == len(documents))
    gate.close()

    def post(connection: http.client.HTTPConnection, document: Any) -> tuple[int, Any]:
        try:
            connection.request("POST", PREDICT, body=json.dumps(document).encode())
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    held = []
    for connection, document in zip(connections[:HELD], documents[:HELD], strict=True):
        held.append(clients.submit(post, connection, document))
        wait_until(lambda: len(gate.calls) == len(held))
    rest = [
        clients.submit(post, *pair)
        for pair in zip(connections[HELD:], documents[HELD:], strict=True)
    ]
    wait_until(lambda: queued(predictor) == sum(len(d["instances"]) for d in documents[HELD:]))
    return [*held, *rest]


@pytest.fixture
def loaded(model_dir: Path) -> Predictor:
    predictor = Predictor(model_dir=str(model_dir), batching=Batching(max_queued=4))
    predictor.load()
    return predictor


def test_concurrent_requests_are_answered_each_with_its_own_predictions_from_one_call(
    start_server_in_process: Callable[[Predictor], int], loaded: Predictor, gate: Gate
) -> None:
    port = start_server_in_process(loaded)
    images = [jpeg(20 + 7 * i, 30) for i in range(HELD + 3)]  # different sizes share a call
    (model,) = loaded.models.values()
    alone = [model.predict([image])[0] for image in images]
    with ThreadPoolExecutor(len(images)) as clients:
        answers = held_with_queued(
            port, loaded, gate, [{"instances": [image]} for image in images], clients
        )
        gate.opened.set()
        answers = [answer.result() for answer in answers]
    assert gate.calls == [1] * HELD + [3]
    for (status, answer), expected in zip(answers, alone, strict=True):
        assert status == 200
        np.testing.assert_allclose(answer["predictions"], [expected], rtol=1e-5)


def test_a_request_larger_than_its_deployments_batch_is_split_across_calls(
    start_server_in_process: Callable[[Predictor], int], model_dir: Path, gate: Gate
) -> None:
    deployment = Deployment("d", "m", "1", str(model_dir), 100, max_batch_size=2)
    predictor = Predictor(deployments=[deployment], batching=Batching(max_batch_size=8))
    predictor.load()
    port = start_server_in_process(predictor)
    status, answer = predict(port, {"instances": [jpeg(9 + i, 9) for i in range(5)]})
    assert status == 200 and len(answer["predictions"]) == 5
    assert gate.calls == [2, 2, 1]  # the deployment's size, not the server's


def test_an_instance_the_model_refuses_fails_only_its_own_request(
    start_server_in_process: Callable[[Predictor], int], loaded: Predictor, gate: Gate
) -> None:
    port = start_server_in_process(loaded)
    not_an_image = {"b64": base64.b64encode(b"xx").decode()}
    documents = [{"instances": [jpeg(20 + i, 20)]} for i in range(HELD)]
    documents += [{"instances": [not_an_image]}, {"instances": [jpeg(30, 30)]}]
    with ThreadPoolExecutor(len(documents)) as clients:
        answers = held_with_queued(port, loaded, gate, documents, clients)
        gate.opened.set()
        *held, bad, good = (answer.result() for answer in answers)
    assert [status for status, _ in held] == [200] * HELD and good[0] == 200
    assert bad[0] == 400
    assert bad[1]["error"].startswith("the model refused the input: Unknown image file format")
    # The spoilt call, then each of its requests on its own.
    assert gate.calls == [1] * HELD + [2, 1, 1]


def test_a_full_queue_refuses_at_once_with_429_and_retry_after(
    start_server_in_process: Callable[[Predictor], int], loaded: Predictor, gate: Gate
) -> None:
    port = start_server_in_process(loaded)
    documents = [{"instances": [jpeg(20 + i, 20)]} for i in range(HELD)]
    documents.append({"instances": [jpeg(21, 21)] * 4})
    with ThreadPoolExecutor(len(documents)) as clients:
        answers = held_with_queued(port, loaded, gate, documents, clients)
        # The call is still held: the refusal cannot have waited for it.
        status, answer, headers = request_with_headers(
            port, "POST", PREDICT, json.dumps({"instances": [jpeg(22, 22)]}).encode()
        )
        assert not gate.opened.is_set()
        gate.opened.set()
        assert [answer.result()[0] for answer in answers] == [200] * len(documents)
    assert status == 429 and headers["Retry-After"] == "1"
    assert answer == {"error": "4 instances are waiting for this model; at most 4"}


def test_sigterm_stops_listening_and_answers_the_requests_in_flight(
    model_dir: Path, gate: Gate
) -> None:
    """In this process, whose main thread runs the server's loop (signals reach only it)."""
    server = PredictionServer(Predictor(model_dir=str(model_dir)), HEALTH, PREDICT)
    port = free_port()

    async def scenario() -> None:
        serving = asyncio.create_task(serve(server, "127.0.0.1", port))
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(8) as clients:
            await loop.run_in_executor(clients, wait_until, server.predictor.ready.is_set)
            # Held in their calls, then one queued behind them.
            documents = [{"instances": [jpeg(20 + 10 * i, 20)]} for i in range(HELD + 1)]
            answers = await loop.run_in_executor(
                clients, held_with_queued, port, server.predictor, gate, documents, clients
            )
            os.kill(os.getpid(), signal.SIGTERM)
            await loop.run_in_executor(clients, wait_until, lambda: server.draining)
            gate.opened.set()
            assert [(await asyncio.wrap_future(a))[0] for a in answers] == [200] * len(documents)
        assert await serving == 0

    run(scenario())
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


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
    process, port, log = start_server(
        tmp_path, "--deployments", str(path), "--batch-threads", "3", "--intra-op-threads", "1"
    )
    assert "each call of a model on 1 intra-op thread(s), 3 call(s)" in log.read_text()
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
    answer = run(predictor.predict(json.dumps({"instances": [jpeg(33, 33)]}).encode()))
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


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--batch-threads", "0"], "batch_threads must be at least 1"),
        (["--intra-op-threads", "-1"], "--intra-op-threads -1: at least 0"),
    ],
)
def test_bad_threads_stop_the_server_before_it_listens(flags: list[str], message: str) -> None:
    result = run_to_exit(*flags, "--model-dir", "unused")
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_cores_are_shared_out_between_the_calls_that_run_at_once() -> None:
    cores = len(os.sched_getaffinity(0))
    assert default_intra_op_threads(Batching(batch_threads=1)) == cores
    assert default_intra_op_threads(Batching(batch_threads=cores)) == 1
    assert default_intra_op_threads(Batching(batch_threads=cores + 1)) == 1  # at least one
    assert Predictor(model_dir="m", intra_op_threads=0).intra_op_threads == 0


def test_a_model_that_cannot_load_ends_the_server_with_its_reason(tmp_path: Path) -> None:
    result = run_to_exit(AIP_STORAGE_URI=str(tmp_path / "missing"))
    assert result.returncode == 1
    assert f"cannot load the model in {tmp_path / 'missing'}" in result.stderr
    assert "Traceback" not in result.stderr
