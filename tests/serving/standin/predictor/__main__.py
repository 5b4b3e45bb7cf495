"""A stand-in for ``python -m predictor`` (the real server loads SavedModels with
TensorFlow): the same command line, environment and JSON, answering a fixed probability
pair per instance. Tests put its directory first on PYTHONPATH."""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--host", required=True)
parser.add_argument("--deployments", required=True)
options = parser.parse_args()
deployments = json.loads(Path(options.deployments).read_text())
for deployment in deployments:
    if not (Path(deployment["modelDir"]) / "saved_model.pb").is_file():
        raise SystemExit(f"no SavedModel in {deployment['modelDir']}")
chosen = max(deployments, key=lambda d: d["trafficPercent"])
health, predict = os.environ["AIP_HEALTH_ROUTE"], os.environ["AIP_PREDICT_ROUTE"]


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200 if self.path == health else 404, {})

    def do_POST(self) -> None:
        if self.path != predict:
            self._send(404, {"error": self.path})
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(
            200,
            {
                "predictions": [[0.25, 0.75] for _ in request["instances"]],
                "deployedModelId": chosen["deployedModelId"],
                "model": chosen["model"],
                "modelVersionId": chosen["modelVersionId"],
            },
        )

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer((options.host, int(os.environ["AIP_HTTP_PORT"])), Handler).serve_forever()
