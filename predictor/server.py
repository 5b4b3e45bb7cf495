"""The HTTP server under Vertex's custom-container contract.

Vertex starts the serving container with ``AIP_HTTP_PORT``, ``AIP_HEALTH_ROUTE``,
``AIP_PREDICT_ROUTE`` and ``AIP_STORAGE_URI`` (where it copied the model), polls the
health route until it answers 200, then posts ``{"instances": [...]}`` to the predict
route and expects ``{"predictions": [...]}``. Flags default from those variables.

The port is bound before TensorFlow loads, so health answers 503 while the models load
and 200 once they are served. SIGTERM (what Vertex and the local twin send to stop a
replica) stops the server cleanly.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from predictor import BadRequestError
from predictor.deployments import Deployment, DeploymentsError, TrafficSplit, read_deployments

__all__ = ["MAX_REQUEST_BYTES", "PredictionServer", "Predictor", "build_parser", "main"]

logger = logging.getLogger("predictor")

MAX_REQUEST_BYTES = 32 * 1024**2
"""Larger bodies are refused (413). Vertex's own limit for online prediction is lower."""


@dataclass
class Predictor:
    """What the server serves: one model (the serving image) or the endpoint's deployed
    models with their traffic split (the local twin)."""

    model_dirs: Sequence[str]
    deployments: Sequence[Deployment] = ()
    """Empty: one model, answered without deployment metadata (Vertex's frontend adds it)."""
    models: dict[str, Any] = field(default_factory=dict)
    load_error: str | None = None
    ready: threading.Event = field(default_factory=threading.Event)

    def load(self) -> None:
        """Load every model (imports TensorFlow); then :attr:`ready` is set."""
        from predictor.model import ServedModel

        for model_dir in dict.fromkeys(self.model_dirs):
            try:
                self.models[model_dir] = ServedModel(model_dir)
            except Exception as error:  # any load failure ends the server with its message
                self.load_error = f"cannot load the model in {model_dir}: {error}"
                logger.error("%s", self.load_error)
                return
        self._split = TrafficSplit(self.deployments) if self.deployments else None
        self.ready.set()
        logger.info("ready: serving %d model(s)", len(self.models))

    def predict(self, body: bytes) -> dict[str, Any]:
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BadRequestError(f"the body is not JSON: {error}") from None
        if not isinstance(request, dict) or "instances" not in request:
            raise BadRequestError('expected a JSON object {"instances": [...]}')
        deployment = self._split.choose() if self._split else None
        model = self.models[deployment.model_dir if deployment else self.model_dirs[0]]
        predictions = model.predict(request["instances"])
        return {"predictions": predictions, **(deployment.metadata() if deployment else {})}


class PredictionServer(ThreadingHTTPServer):
    """Binds at construction; serves ``predictor`` on the two routes."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], predictor: Predictor, health_route: str, predict_route: str
    ) -> None:
        self.predictor = predictor
        self.health_route = health_route
        self.predict_route = predict_route
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: PredictionServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client's requests share one connection
    # Headers and body are two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK (~40 ms on Linux) on every kept-alive request.
    disable_nagle_algorithm = True

    def _reply(self, status: HTTPStatus, document: Mapping[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._reply(status, {"error": message})

    def _route(self) -> str:
        return self.path.split("?", 1)[0]

    def do_GET(self) -> None:
        route = self._route()
        if route == self.server.health_route:
            if self.server.predictor.ready.is_set():
                self._reply(HTTPStatus.OK, {})
            else:
                self._error(HTTPStatus.SERVICE_UNAVAILABLE, "the models are loading")
        elif route == self.server.predict_route:
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"POST to {route}")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route {route}")

    def do_POST(self) -> None:
        route = self._route()
        if route != self.server.predict_route:
            self._error(
                HTTPStatus.NOT_FOUND, f"no route {route}; predict is {self.server.predict_route}"
            )
            return
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
            return
        length = int(length_header)
        if length > MAX_REQUEST_BYTES:
            self.close_connection = True
            self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"{length} bytes; at most {MAX_REQUEST_BYTES} per request",
            )
            return
        body = self.rfile.read(length)
        predictor = self.server.predictor
        if not predictor.ready.is_set():
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "the models are loading")
            return
        try:
            self._reply(HTTPStatus.OK, predictor.predict(body))
        except BadRequestError as error:
            self._error(HTTPStatus.BAD_REQUEST, str(error))
        except Exception as error:  # the client gets a message, the log the traceback
            logger.exception("prediction failed")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m predictor",
        description="Serve SavedModels under Vertex AI's custom-container contract.",
    )
    parser.add_argument("--host", default="0.0.0.0", help="default 0.0.0.0 (all interfaces)")
    parser.add_argument(
        "--port",
        type=int,
        default=int(environ.get("AIP_HTTP_PORT") or 8080),
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
        "trafficPercent}: serve them all as one endpoint, split by traffic",
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
    if args.deployments:
        try:
            deployments = read_deployments(args.deployments)
        except DeploymentsError as error:
            parser.error(str(error))
        predictor = Predictor([d.model_dir for d in deployments], deployments)
    elif args.model_dir:
        predictor = Predictor([args.model_dir])
    else:
        parser.error("no model: set AIP_STORAGE_URI or pass --model-dir or --deployments")

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server = PredictionServer(
            (args.host, args.port), predictor, args.health_route, args.predict_route
        )
    except OSError as error:
        logger.error("cannot listen on %s:%d: %s", args.host, args.port, error)
        return 1
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    host, port = server.server_address[:2]
    logger.info(
        "listening on %s:%d (health %s, predict %s)",
        host,
        port,
        args.health_route,
        args.predict_route,
    )
    threading.Thread(target=predictor.load, name="load", daemon=True).start()
    status = 0
    while not stop.wait(0.2):
        if predictor.load_error is not None:
            status = 1
            break
    server.shutdown()
    server.server_close()
    logger.info("stopped%s", f" ({predictor.load_error})" if status else "")
    return status
