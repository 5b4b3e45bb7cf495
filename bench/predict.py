"""Prediction bench: the local predict latency and the server's memory, against the floor.

    .venv/bin/python bench/predict.py [--requests 200] [--image-size 150]

Exports the horses_or_humans network (untrained: the weights do not change the cost) with
the trainer's serving signatures, then measures, in the same run, on the same machine:

- through the server: ``python -m predictor`` on 127.0.0.1, ``--requests`` POSTs of
  ``{"instances": [{"b64": <one 300x300 JPEG>}]}`` over one keep-alive connection (as a
  client library would), median and p99 latency, and the server's resident memory after
  them (VmRSS; VmHWM is the peak);
- the floor: a plain Python process that loads the same SavedModel and calls its
  ``serving_default`` on the same bytes as many times: its latency and resident memory.

The ratios say what the HTTP server, the JSON and the base64 cost on top of TensorFlow.
Each side warms up with 10 calls first (the first call of a loaded function is slower).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WARM_UP = 10
CLIENT_IMAGE_SIZE = 300


def _resident_kib(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB (Linux)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(ordered) * 1e3, "p99_ms": p99 * 1e3}


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIP_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    return env


def export_model(model_dir: Path, image_size: int) -> None:
    """In a child process: this one stays free of TensorFlow."""
    code = f"""
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
from trainer.cluster import ClusterRole
from trainer.config import parse_config
from trainer.distribution import save_model
from trainer.export import serving_signatures
from trainer.models import build_model
config = parse_config(
    ["--workload", "horses_or_humans", "--image-size", "{image_size}"],
    environ={{"AIP_MODEL_DIR": {str(model_dir)!r}}},
)
model = build_model(config)
signatures = serving_signatures(model, image_size={image_size}, num_classes=2)
save_model(model, config.paths.model_dir, ClusterRole(), signatures)
"""
    subprocess.run([sys.executable, "-c", code], env=_environment(), check=True)


def client_jpeg(path: Path) -> None:
    code = f"""
import numpy as np, tensorflow as tf
pixels = np.random.default_rng(0).integers(0, 256, ({CLIENT_IMAGE_SIZE}, {CLIENT_IMAGE_SIZE}, 3))
open({str(path)!r}, "wb").write(tf.io.encode_jpeg(pixels.astype(np.uint8)).numpy())
"""
    subprocess.run([sys.executable, "-c", code], env=_environment(), check=True)


def floor(model_dir: str, image: str, requests: int) -> None:
    """``--floor``: load the SavedModel in this plain process and call it directly."""
    import tensorflow as tf

    loaded = tf.saved_model.load(model_dir)
    serve = loaded.signatures["serving_default"]
    encoded = Path(image).read_bytes()
    for _ in range(WARM_UP):
        serve(image_bytes=tf.constant([encoded]))
    seconds = []
    for _ in range(requests):
        start = time.perf_counter()
        serve(image_bytes=tf.constant([encoded]))["probabilities"].numpy()
        seconds.append(time.perf_counter() - start)
    print(json.dumps({**_percentiles(seconds), **_resident_kib()}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def through_server(model_dir: str, image: Path, requests: int) -> dict[str, float]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "predictor", "--host", "127.0.0.1", "--port", str(port)],
        env={**_environment(), "AIP_STORAGE_URI": model_dir},
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the prediction server did not start")
            try:
                connection.request("GET", "/health")
                response = connection.getresponse()
                response.read()
                if response.status == 200:
                    break
            except OSError:
                connection.close()
            time.sleep(0.1)
        instance = {"b64": base64.b64encode(image.read_bytes()).decode()}
        body = json.dumps({"instances": [instance]}).encode()
        headers = {"Content-Type": "application/json"}
        seconds = []
        for index in range(WARM_UP + requests):
            start = time.perf_counter()
            connection.request("POST", "/predict", body=body, headers=headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
            elapsed = time.perf_counter() - start
            if response.status != 200 or len(answer["predictions"][0]) != 2:
                raise SystemExit(f"unexpected answer {response.status}: {answer}")
            if index >= WARM_UP:
                seconds.append(elapsed)
        connection.close()
        return {**_percentiles(seconds), **_resident_kib(server.pid)}
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--image-size", type=int, default=150, help="the model's input size")
    parser.add_argument("--floor", nargs=2, metavar=("MODEL_DIR", "IMAGE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        floor(*args.floor, args.requests)
        return
    with tempfile.TemporaryDirectory(prefix="bench-predict-") as scratch:
        model_dir = Path(scratch) / "model"
        image = Path(scratch) / "client.jpg"
        export_model(model_dir, args.image_size)
        client_jpeg(image)
        floor_args = ["--requests", str(args.requests), "--floor", str(model_dir), str(image)]
        floor_run = subprocess.run(
            [sys.executable, __file__, *floor_args],
            env=_environment(),
            check=True,
            capture_output=True,
            text=True,
        )
        direct = json.loads(floor_run.stdout.strip().splitlines()[-1])
        served = through_server(str(model_dir), image, args.requests)
    print(
        f"predict, horses_or_humans CNN at {args.image_size}px, one {CLIENT_IMAGE_SIZE}x"
        f"{CLIENT_IMAGE_SIZE} JPEG per request, {args.requests} requests after {WARM_UP} warm-up"
    )
    for label, run in (("server (HTTP+JSON+b64)", served), ("floor (direct call)", direct)):
        print(
            f"  {label:24s} median {run['median_ms']:7.2f} ms  p99 {run['p99_ms']:7.2f} ms  "
            f"RSS {run['VmRSS'] / 1024:6.0f} MiB (peak {run['VmHWM'] / 1024:.0f} MiB)"
        )
    print(
        f"  ratio    latency median {served['median_ms'] / direct['median_ms']:.2f}x, "
        f"p99 {served['p99_ms'] / direct['p99_ms']:.2f}x; "
        f"resident memory {served['VmRSS'] / direct['VmRSS']:.2f}x the floor"
    )


if __name__ == "__main__":
    main()
