"""The HTTP server under Vertex's custom-container contract.

Vertex starts the serving container with ``AIP_HTTP_PORT``, ``AIP_HEALTH_ROUTE``,
``AIP_PREDICT_ROUTE`` and ``AIP_STORAGE_URI`` (where it copied the model), polls the
health route until it answers 200, then posts ``{"instances": [...]}`` to the predict
route and expects ``{"predictions": [...]}``. Flags default from those variables.

The port is bound before TensorFlow loads, so health answers 503 while the models load
and 200 once they are served. One asyncio event loop (aiohttp) holds the connections and
reads the requests; concurrent requests for a deployed model are answered from shared calls
of the model (:mod:`predictor.batching`); a request beyond what the queue holds is refused
at once with 429. SIGTERM (what Vertex and the local twin send to stop a replica) stops
taking connections and answers the requests in flight, for at most ``DRAIN_TIMEOUT_S``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from http import HTTPStatus
from typing import Any

import orjson
from aiohttp import web

from predictor import BadRequestError
from predictor.batching import Batcher, Batching, QueueFullError
from predictor.deployments import Deployment, DeploymentsError, TrafficSplit, read_deployments

__all__ = [
    "DRAIN_TIMEOUT_S",
    "MAX_REQUEST_BYTES",
    "PredictionServer",
    "Predictor",
    "build_parser",
    "default_intra_op_threads",
    "main",
    "serve",
]

logger = logging.getLogger("predictor")

MAX_REQUEST_BYTES = 32 * 1024**2
"""Larger bodies are refused (413). Vertex's own limit for online prediction is lower."""
DRAIN_TIMEOUT_S = 10.0
"""After SIGTERM, how long the requests in flight may take (the local twin sends SIGKILL
15 s after SIGTERM)."""
PARSE_ON_LOOP_BYTES = 256 * 1024
"""Bodies up to this size (a dozen JPEGs) are parsed on the event loop, in well under a
millisecond; larger ones on a worker thread (two thread switches more a request)."""
RETRY_AFTER_S = 1
"""What a refused client is told to wait (``Retry-After``), in seconds."""


def default_intra_op_threads(batching: Batching) -> int:
    """The cores this process may use over the calls that run at once, at least 1. Several
    calls at once, each on fewer threads, keep the cores busier than one call on all of
    them, whose threads wait for each other at every op (docs/predictor.md)."""
    return max(1, len(os.sched_getaffinity(0)) // batching.batch_threads)


class Predictor:
    """What the server serves: one model (the serving image) or the endpoint's deployed
    models with their traffic split (the local twin)."""

    def __init__(
        self,
        *,
        model_dir: str | None = None,
        deployments: Sequence[Deployment] = (),
        batching: Batching | None = None,
        intra_op_threads: int | None = None,
    ) -> None:
        self.deployments = tuple(deployments)
        """Empty: one model, answered without deployment metadata (Vertex's frontend adds
        it)."""
        self._split = TrafficSplit(self.deployments) if self.deployments else None
        if self.deployments:
            self.model_dirs = list(dict.fromkeys(d.model_dir for d in self.deployments))
        elif model_dir:
            self.model_dirs = [model_dir]
        else:
            raise ValueError("nothing to serve: give a model_dir or deployments")
        self.batching = batching or Batching()
        """The deployed models' batching, unless their deployment says otherwise."""
        self.intra_op_threads = (
            default_intra_op_threads(self.batching)
            if intra_op_threads is None
            else intra_op_threads
        )
        """Threads one call of a model uses (TensorFlow's intra-op pool; 0: its choice)."""
        self.models: dict[str, Any] = {}
        self.load_error: str | None = None
        self.ready = threading.Event()
        """Set once every model is loaded: health answers 200 from then on."""
        self.batchers: dict[tuple[str, str], Batcher] = {}
        """By deployed model (its id, or the model dir) and signature."""
        self.open_connections: Callable[[], int] = lambda: 0
        """How many connections the server holds (set by the server): with one, the
        model's calls run on the event loop's thread."""

    def load(self) -> None:
        """Load every model (imports TensorFlow); then :attr:`ready` is set."""
        from predictor.model import ServedModel, use_intra_op_threads

        use_intra_op_threads(self.intra_op_threads)
        logger.info(
            "each call of a model on %s intra-op thread(s), %d call(s) of a model at once",
            self.intra_op_threads or "TensorFlow's choice of",
            self.batching.batch_threads,
        )
        for model_dir in self.model_dirs:
            try:
                self.models[model_dir] = ServedModel(model_dir)
            except Exception as error:  # any load failure ends the server with its message
                self.load_error = f"cannot load the model in {model_dir}: {error}"
                logger.error("%s", self.load_error)
                return
        self.ready.set()
        logger.info("ready: serving %d model(s)", len(self.models))

    def _parse(self, body: bytes) -> tuple[Deployment | None, str, list[Any]]:
        try:
            request = orjson.loads(body)  # twice the standard library's speed on a JPEG's string
        except orjson.JSONDecodeError as error:
            raise BadRequestError(f"the body is not JSON: {error}") from None
        if not isinstance(request, dict) or "instances" not in request:
            raise BadRequestError('expected a JSON object {"instances": [...]}')
        deployment = self._split.choose() if self._split else None
        return deployment, *self._model(deployment).prepare(request["instances"])

    def _model(self, deployment: Deployment | None) -> Any:
        return self.models[deployment.model_dir if deployment else self.model_dirs[0]]

    def _batcher(self, deployment: Deployment | None, signature: str) -> Batcher:
        key = (deployment.deployed_model_id if deployment else self.model_dirs[0], signature)
        if key not in self.batchers:
            batching = self.batching
            if deployment:
                batching = replace(
                    batching,
                    **{
                        f.name: getattr(deployment, f.name)
                        for f in fields(Batching)
                        if getattr(deployment, f.name) is not None
                    },
                )
            model = self._model(deployment)
            self.batchers[key] = Batcher(
                lambda rows: model.run(signature, rows),
                batching,
                lambda: self.open_connections() == 1,
            )
        return self.batchers[key]

    async def predict(self, body: bytes) -> dict[str, Any]:
        """The answer to one predict request's body: :class:`BadRequestError` for a bad
        one, :class:`QueueFullError` when its model's queue is full."""
        if len(body) <= PARSE_ON_LOOP_BYTES:
            deployment, signature, rows = self._parse(body)
        else:  # JSON and base64 off the event loop: it would hold every connection meanwhile
            loop = asyncio.get_running_loop()
            deployment, signature, rows = await loop.run_in_executor(None, self._parse, body)
        predictions = await self._batcher(deployment, signature).predict(rows)
        return {"predictions": predictions, **(deployment.metadata() if deployment else {})}


def _answer(
    status: HTTPStatus, document: Mapping[str, Any], headers: Mapping[str, str] = {}
) -> web.Response:
    return web.Response(
        body=orjson.dumps(document), status=status, headers=headers, content_type="application/json"
    )


def _error(status: HTTPStatus, message: str, headers: Mapping[str, str] = {}) -> web.Response:
    return _answer(status, {"error": message}, headers)


_RETRY = {"Retry-After": str(RETRY_AFTER_S)}


class PredictionServer:
    """Serves ``predictor`` on the two routes; :meth:`start` binds the port."""

    def __init__(self, predictor: Predictor, health_route: str, predict_route: str) -> None:
        self.predictor = predictor
        self.health_route = health_route
        self.predict_route = predict_route
        self.draining = False
        """Set by :meth:`stop`: requests still arriving on open connections get 503."""
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=DRAIN_TIMEOUT_S
        )
        predictor.open_connections = lambda: (
            len(self._runner.server.connections) if self._runner.server else 0
        )

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (``OSError`` if it cannot); the port bound."""
        await self._runner.setup()
        # A deep backlog: a burst of new connections waits to be accepted, never reset.
        site = web.TCPSite(self._runner, host, port, backlog=1024)
        await site.start()
        return int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop listening, answer the requests in flight (for ``DRAIN_TIMEOUT_S`` at most),
        close the connections."""
        self.draining = True
        await self._runner.cleanup()
        for batcher in self.predictor.batchers.values():
            await batcher.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        route = request.path
        if route == self.health_route and request.method == "GET":
            if self.predictor.ready.is_set():
                return _answer(HTTPStatus.OK, {})
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "the models are loading", _RETRY)
        if route != self.predict_route:
            if request.method == "GET":
                return _error(HTTPStatus.NOT_FOUND, f"no route {route}")
            return _error(
                HTTPStatus.NOT_FOUND, f"no route {route}; predict is {self.predict_route}"
            )
        if request.method != "POST":
            return _error(HTTPStatus.METHOD_NOT_ALLOWED, f"POST to {route}")
        if (request.content_length or 0) > MAX_REQUEST_BYTES:
            return _too_large(f"{request.content_length} bytes")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:  # a chunked body, counted as it came
            return _too_large("a larger body")
        if self.draining:
            return _error(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "the server is stopping",
                {**_RETRY, "Connection": "close"},
            )
        if not self.predictor.ready.is_set():
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "the models are loading", _RETRY)
        try:
            return _answer(HTTPStatus.OK, await self.predictor.predict(body))
        except BadRequestError as error:
            return _error(HTTPStatus.BAD_REQUEST, str(error))
        except QueueFullError as error:
            return _error(HTTPStatus.TOO_MANY_REQUESTS, str(error), _RETRY)
        except Exception as error:  # the client gets a message, the log the traceback
            logger.exception("prediction failed")
            return _error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")


def _too_large(size: str) -> web.Response:
    response = _error(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"{size}; at most {MAX_REQUEST_BYTES} per request"
    )
    response.force_close()  # the rest of the body is not read
    return response


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m predictor",
        description="Serve SavedModels under Vertex AI's custom-container contract.",
    )
    parser.add_argument("--host", default="0.0.0.0", help="default 0.0.0.0 (all interfaces)")
    parser.add_argument(
        "--port",
        type=int,
        # A string default goes through ``type`` too: a bad $AIP_HTTP_PORT is a usage error.
        default=environ.get("AIP_HTTP_PORT") or "8080",
        help="default $AIP_HTTP_PORT, else 8080",
    )
    parser.add_argument(
        "--health-route",
        default=environ.get("AIP_HEALTH_ROUTE") or "/health",
        help="default $AIP_HEALTH_ROUTE, else /health",
    )
    parser.add_argument(
        "--predict-route",
        default=environ.get("AIP_PREDICT_ROUTE") or "/predict",
        help="default $AIP_PREDICT_ROUTE, else /predict",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--model-dir",
        default=environ.get("AIP_STORAGE_URI") or None,
        help="the SavedModel, local or gs:// (default $AIP_STORAGE_URI)",
    )
    source.add_argument(
        "--deployments",
        metavar="FILE",
        help="a JSON list of {deployedModelId, model, modelVersionId, modelDir, "
        "trafficPercent[, maxBatchSize, maxWaitMs, maxQueued, batchThreads]}: serve them all "
        "as one endpoint, split by traffic",
    )
    batching = parser.add_argument_group(
        "batching", "concurrent requests share calls of the model (per deployment in FILE)"
    )
    for name, kind, what in (
        ("max_batch_size", int, "instances in one call at most"),
        ("max_wait_ms", float, "how long an idle thread waits for its batch to fill"),
        ("max_queued", int, "instances waiting for the model at most; more get 429"),
        ("batch_threads", int, "calls of a model that run at once"),
    ):
        default = getattr(Batching(), name)
        batching.add_argument(
            f"--{name.replace('_', '-')}",
            type=kind,
            default=default,
            help=f"{what} (default {default:g})",
        )
    parser.add_argument(
        "--intra-op-threads",
        type=int,
        help="threads one call of a model uses; 0: TensorFlow's choice, all the cores "
        "(default: the cores over --batch-threads, at least 1)",
    )
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    env = os.environ if environ is None else environ
    parser = build_parser(env)
    args = parser.parse_args(argv)
    try:
        batching = Batching(**{f.name: getattr(args, f.name) for f in fields(Batching)})
    except ValueError as error:
        parser.error(str(error))
    if args.intra_op_threads is not None and args.intra_op_threads < 0:
        parser.error(f"--intra-op-threads {args.intra_op_threads}: at least 0")
    if args.deployments:
        try:
            deployments = read_deployments(args.deployments)
        except DeploymentsError as error:
            parser.error(str(error))
        source: dict[str, Any] = {"deployments": deployments}
    elif args.model_dir:
        source = {"model_dir": args.model_dir}
    else:
        parser.error("no model: set AIP_STORAGE_URI or pass --model-dir or --deployments")
    predictor = Predictor(**source, batching=batching, intra_op_threads=args.intra_op_threads)
    server = PredictionServer(predictor, args.health_route, args.predict_route)
    return asyncio.run(serve(server, args.host, args.port))


async def serve(server: PredictionServer, host: str, port: int) -> int:
    """Listen, load the models, serve until SIGTERM or SIGINT (0) or a model that cannot
    load (1); 1 also when the port cannot be bound."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        bound = await server.start(host, port)
    except OSError as error:
        logger.error("cannot listen on %s:%d: %s", host, port, error)
        return 1
    logger.info(
        "listening on %s:%d (health %s, predict %s)",
        host,
        bound,
        server.health_route,
        server.predict_route,
    )
    predictor = server.predictor

    def load() -> None:
        predictor.load()
        if predictor.load_error is not None:
            loop.call_soon_threadsafe(stop.set)

    # A daemon thread, not the loop's executor: SIGTERM during a long load need not wait.
    threading.Thread(target=load, name="load", daemon=True).start()
    await stop.wait()
    status = 1 if predictor.load_error is not None else 0
    await server.stop()
    logger.info("stopped%s", f" ({predictor.load_error})" if status else "")
    return status
