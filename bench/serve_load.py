"""Prediction server under load: concurrent keep-alive clients, against the model's own
batched throughput and against the standard library's server it replaced.

    .venv/bin/python bench/serve_load.py [--duration 30] [--image-size 150]
        [--baseline-ref b590535] [--server-flag=--max-wait-ms=2 ...]

Exports the horses_or_humans network (untrained: the weights do not change the cost), then
measures, in the same run, on the same machine:

- the floor: a plain Python process that loads the SavedModel and calls ``serving_default``
  on batches of 16 copies of one 300x300 JPEG, back to back: images/s, just before and just
  after the 16-client run (the servers idle), and their mean;
- the server's calls without the server: the same, but as this server calls the model by
  default (``predictor.batching.Batching``: batches of 8 from 2 threads at once, each op on
  the cores over 2), once after the 16-client run: what HTTP, JSON and the queue cost is
  the gap between this and the server;
- this server (``python -m predictor``) with 1, 4, 16, 64 and 256 concurrent clients, each
  posting ``{"instances": [{"b64": <the JPEG>}]}`` over its own kept-alive connection for
  ``--duration`` seconds: requests/s, median and p99 latency of the answered (200), how
  many were refused (429/503: the client waits ``Retry-After``, as it is told) and how
  many failed (any other status, or a connection error: dropped, reset);
- the baseline: the server as of ``--baseline-ref`` (the standard library's
  ``ThreadingHTTPServer``, one TensorFlow call per request; its ``predictor/`` taken with
  ``git archive``) with 16 clients; at 1 client both servers run side by side and the
  client's requests alternate between them (the machine is shared: each sees it as busy);
- the resident memory (VmRSS) of each server after its 1- and 16-client runs, and this
  server's peak (VmHWM) after all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import aiohttp
from predict import (
    REPO,
    WARM_UP,
    _environment,
    _free_port,
    _resident_kib,
    client_jpeg,
    export_model,
)

sys.path.insert(0, str(REPO))

from predictor.batching import Batching
from predictor.server import default_intra_op_threads

BASELINE_REF = "b59053523e0f1ce3a92adb73a134b702b4942578"
"""The last commit with the standard library's server."""
FLOOR_BATCH = 16
SERVED = Batching()
"""How this server calls the model by default."""
SERVED_INTRA_OP = default_intra_op_threads(SERVED)
CLIENTS = (1, 4, 16, 64, 256)
HEADERS = {"Content-Type": "application/json"}


def floor(
    model_dir: str, image: str, seconds: float, *, threads: int, size: int, intra_op: int | None
) -> None:
    """``--floor``: batches of ``size`` through the SavedModel in this plain process, from
    ``threads`` threads at once, each op on ``intra_op`` threads (None: TensorFlow's
    choice, untouched)."""
    import tensorflow as tf

    if intra_op is not None:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op)
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    batch = tf.constant([Path(image).read_bytes()] * size)
    for _ in range(WARM_UP):
        serve(image_bytes=batch)
    calls, start = [], time.perf_counter()

    def call() -> None:
        while time.perf_counter() - start < seconds:
            serve(image_bytes=batch)["probabilities"].numpy()
            calls.append(size)

    callers = [threading.Thread(target=call) for _ in range(threads)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    print(json.dumps({"images_per_s": sum(calls) / (time.perf_counter() - start)}))


async def _request(
    session: aiohttp.ClientSession, url: str, body: bytes, tally: dict[str, Any]
) -> None:
    """One request, its outcome tallied; a refused client waits as it is told."""
    start = time.perf_counter()
    try:
        async with session.post(url, data=body, headers=HEADERS) as response:
            answer = await response.read()
            elapsed = time.perf_counter() - start
            if response.status == 200 and len(json.loads(answer)["predictions"]) == 1:
                tally["latencies"].append(elapsed)
            elif response.status in (429, 503):
                tally["refused"].append(elapsed)
                await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
            else:
                tally["failed"].append(f"{response.status}: {answer[:200]!r}")
    except (aiohttp.ClientError, OSError) as error:
        tally["failed"].append(f"{type(error).__name__}: {error}")


async def _client(
    session: aiohttp.ClientSession, url: str, body: bytes, until: float, tally: dict[str, Any]
) -> None:
    while time.perf_counter() < until:
        await _request(session, url, body, tally)


def _tally() -> dict[str, Any]:
    return {"latencies": [], "refused": [], "failed": []}


async def _load(port: int, body: bytes, clients: int, seconds: float) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/predict"
    tally = _tally()
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=clients)  # one kept-alive connection a client
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(_client(session, url, body, time.perf_counter() + 2, tally)
                               for _ in range(min(clients, WARM_UP))))  # fmt: skip
        tally = _tally()
        start = time.perf_counter()
        await asyncio.gather(
            *(_client(session, url, body, start + seconds, tally) for _ in range(clients))
        )
        elapsed = time.perf_counter() - start
    return _summary(clients, tally, elapsed)


def _summary(clients: int, tally: dict[str, Any], elapsed: float) -> dict[str, Any]:
    latencies = sorted(tally["latencies"])
    refused = sorted(tally["refused"])

    def ms(ordered: list[float], q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1e3 if ordered else 0

    return {
        "clients": clients,
        "answered": len(latencies),
        "requests_per_s": len(latencies) / elapsed,
        "median_ms": statistics.median(latencies) * 1e3 if latencies else 0,
        "p99_ms": ms(latencies, 0.99),
        "refused": len(refused),
        "refused_median_ms": ms(refused, 0.5),
        "refused_p99_ms": ms(refused, 0.99),
        "failed": len(tally["failed"]),
        "failures": sorted(set(tally["failed"]))[:3],
    }


async def _paired(ports: list[int], body: bytes, seconds: float) -> list[dict[str, Any]]:
    """One client, its requests alternating between the servers: each sees the machine as
    busy as the other does (it is shared)."""
    tallies = [_tally() for _ in ports]
    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) for _ in ports]
    urls = [f"http://127.0.0.1:{port}/predict" for port in ports]
    try:
        for session, url, tally in zip(sessions, urls, tallies, strict=True):
            await _client(session, url, body, time.perf_counter() + 1, tally)  # warm up
            tally.update(_tally())
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for session, url, tally in zip(sessions, urls, tallies, strict=True):
                await _request(session, url, body, tally)
        elapsed = time.perf_counter() - start
    finally:
        for session in sessions:
            await session.close()
    return [_summary(1, tally, elapsed) for tally in tallies]


def _server(cwd: Path, model_dir: str, flags: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """``python -m predictor`` from ``cwd``, once healthy, and its port."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "predictor", "--host", "127.0.0.1", "--port", str(port), *flags],
        env={**_environment(), "AIP_STORAGE_URI": model_dir},
        cwd=cwd,  # the first entry of sys.path: this checkout's predictor, or the baseline's
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180

    async def healthy() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}/health") as response,
            ):
                return response.status == 200
        except aiohttp.ClientError:
            return False

    while not asyncio.run(healthy()):
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the prediction server in {cwd} did not start")
        time.sleep(0.2)
    return server, port


def _runs(port: int, body: bytes, clients: tuple[int, ...], seconds: float) -> list[Any]:
    runs = []
    for count in clients:
        runs.append(asyncio.run(_load(port, body, count, seconds)))
        print(f"    {_row(runs[-1])}", file=sys.stderr)  # progress
    return runs


def _row(run: dict[str, Any]) -> str:
    row = (
        f"{run['clients']:4d} clients  {run['requests_per_s']:7.1f} req/s  "
        f"median {run['median_ms']:7.2f} ms  p99 {run['p99_ms']:7.2f} ms  "
        f"answered {run['answered']:6d}  refused {run['refused']:5d}"
    )
    if run["refused"]:
        row += f" (median {run['refused_median_ms']:.1f} ms, p99 {run['refused_p99_ms']:.1f} ms)"
    row += f"  failed {run['failed']}"
    return row + (f" {run['failures']}" if run["failed"] else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30, help="seconds per run (30)")
    parser.add_argument("--image-size", type=int, default=150, help="the model's input size")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="the server to beat")
    parser.add_argument(
        "--server-flag", action="append", default=[], help="a flag for this server, repeatable"
    )
    parser.add_argument("--floor", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        model_dir, image, threads, size, intra_op = args.floor
        floor(
            model_dir,
            image,
            args.duration,
            threads=int(threads),
            size=int(size),
            intra_op=json.loads(intra_op),
        )
        return
    with tempfile.TemporaryDirectory(prefix="bench-serve-load-") as scratch:
        model_dir = Path(scratch) / "model"
        image = Path(scratch) / "client.jpg"
        export_model(model_dir, args.image_size)
        client_jpeg(image)
        baseline = Path(scratch) / "baseline"
        archive = subprocess.run(
            ["git", "archive", args.baseline_ref, "predictor"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(baseline, filter="data")
        floor_args = ["--duration", str(min(args.duration, 10)), "--floor", str(model_dir)]

        def batched_floor(threads: int = 1, size: int = FLOOR_BATCH, intra: Any = None) -> float:
            """Images/s; measured between the servers' runs, with both servers idle."""
            how = (str(threads), str(size), json.dumps(intra))
            done = subprocess.run(
                [sys.executable, __file__, *floor_args, str(image), *how],
                env=_environment(),
                check=True,
                capture_output=True,
                text=True,
            )
            return float(json.loads(done.stdout.strip().splitlines()[-1])["images_per_s"])

        instance = {"b64": base64.b64encode(image.read_bytes()).decode()}
        body = json.dumps({"instances": [instance]}).encode()
        new, new_port = _server(REPO, str(model_dir), args.server_flag)
        old, old_port = _server(baseline, str(model_dir), [])
        try:
            paired = asyncio.run(_paired([new_port, old_port], body, args.duration))
            runs = [paired[0], *_runs(new_port, body, CLIENTS[1:2], args.duration)]
            floors = [batched_floor()]
            runs += _runs(new_port, body, CLIENTS[2:3], args.duration)
            floors.append(batched_floor())  # before and after: the machine may be shared
            batched = statistics.mean(floors)
            calls = batched_floor(SERVED.batch_threads, SERVED.max_batch_size, SERVED_INTRA_OP)
            memory_16 = _resident_kib(new.pid)
            runs += _runs(new_port, body, CLIENTS[3:], args.duration)
            memory_end = _resident_kib(new.pid)
            old_runs = [paired[1], *_runs(old_port, body, (16,), args.duration)]
            old_memory = _resident_kib(old.pid)
        finally:
            for server in (new, old):
                server.terminate()
                server.wait(timeout=60)
    print(
        f"serve under load, horses_or_humans CNN at {args.image_size}px, one 300x300 JPEG per "
        f"request, {args.duration:g} s per run, clients kept alive"
    )
    print(
        f"  floor: the SavedModel on batches of {FLOOR_BATCH}: {batched:.1f} images/s "
        f"(before and after the 16-client run: {floors[0]:.1f}, {floors[1]:.1f})"
    )
    print(
        f"  the server's calls without the server: batches of {SERVED.max_batch_size} from "
        f"{SERVED.batch_threads} threads, {SERVED_INTRA_OP} intra-op thread(s) each: "
        f"{calls:.1f} images/s"
    )
    print(f"  this server{' ' + ' '.join(args.server_flag) if args.server_flag else ''}")
    for run in runs:
        print(f"    {_row(run)}")
    print(f"  baseline {args.baseline_ref[:12]} (ThreadingHTTPServer, a call per request)")
    for run in old_runs:
        print(f"    {_row(run)}")
    by_clients = {run["clients"]: run for run in runs}
    by_clients_old = {run["clients"]: run for run in old_runs}
    print(
        f"  ratio  16 clients: {by_clients[16]['requests_per_s'] / batched:.2f}x the batched "
        f"floor (baseline {by_clients_old[16]['requests_per_s'] / batched:.2f}x); 1 client "
        f"median {by_clients[1]['median_ms'] / by_clients_old[1]['median_ms']:.2f}x the "
        "baseline's; failed at "
        f"16/64 clients: {by_clients[16]['failed']}/{by_clients[64]['failed']}; 16 clients "
        f"{by_clients[16]['requests_per_s'] / calls:.2f}x the server's calls without it"
    )
    print(
        f"  memory after 1+16 clients: RSS {memory_16['VmRSS'] / 1024:.0f} MiB against "
        f"{old_memory['VmRSS'] / 1024:.0f} MiB ({memory_16['VmRSS'] / old_memory['VmRSS']:.2f}x "
        f"the baseline); after 256 clients {memory_end['VmRSS'] / 1024:.0f} MiB, peak "
        f"{memory_end['VmHWM'] / 1024:.0f} MiB ({memory_end['VmHWM'] / old_memory['VmHWM']:.2f}x "
        "the baseline's peak)"
    )


if __name__ == "__main__":
    main()
