"""The stand-in ``ServedModel``: a fixed probability pair per instance, no TensorFlow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from predictor import BadRequestError


def use_intra_op_threads(threads: int) -> None:
    """No TensorFlow here: nothing to thread."""


class ServedModel:
    def __init__(self, model_dir: str) -> None:
        if not (Path(model_dir) / "saved_model.pb").is_file():
            raise FileNotFoundError(f"no SavedModel in {model_dir}")

    def prepare(self, instances: Any) -> tuple[str, list[dict[str, Any]]]:
        if not isinstance(instances, list) or not instances:
            raise BadRequestError('"instances" must be a non-empty list')
        return "serving_default", [{"instance": instance} for instance in instances]

    def run(self, signature_name: str, rows: Sequence[Mapping[str, Any]]) -> list[list[float]]:
        return [[0.25, 0.75] for _ in rows]

    def predict(self, instances: Sequence[Any]) -> list[list[float]]:
        return self.run(*self.prepare(instances))
