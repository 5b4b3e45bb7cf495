"""One SavedModel behind Vertex's predict JSON: instances in, predictions out.

The instance forms are those of the TensorFlow prediction containers:

- ``{"b64": "..."}``: the bytes of a string input whose name ends in ``_bytes`` (an
  encoded image for the trainer's ``serving_default``);
- a value or nested list: the signature's one non-string input (a uint8 image for the
  trainer's ``serving_images``), cast to its dtype after a range check;
- an object of named inputs: the signature with exactly those inputs, each value in one of
  the forms above.

The signature is chosen by what the instances are, ``serving_default`` first. A request
gets one answer per instance: the single output's value, or an object of the outputs.
"""

from __future__ import annotations

import binascii
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pybase64
import tensorflow as tf

from predictor import BadRequestError

__all__ = ["ServedModel", "use_intra_op_threads"]

logger = logging.getLogger(__name__)

DEFAULT_SIGNATURE = "serving_default"
BYTES_SUFFIX = "_bytes"


@dataclass(frozen=True)
class _Signature:
    name: str
    function: Any
    inputs: Mapping[str, tf.TensorSpec]

    def takes_bytes(self, name: str) -> bool:
        return name.endswith(BYTES_SUFFIX) and self.inputs[name].dtype == tf.string

    def describe(self) -> str:
        inputs = ", ".join(
            f"{name} ({spec.dtype.name}{'' if spec.shape.rank is None else list(spec.shape)})"
            for name, spec in sorted(self.inputs.items())
        )
        return f"{self.name}: {inputs}"


def _numeric(value: Any, spec: tf.TensorSpec, where: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except ValueError as error:  # ragged nesting
        raise BadRequestError(f"{where}: not a rectangular array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise BadRequestError(f"{where}: expected numbers for a {spec.dtype.name} input")
    dtype = spec.dtype.as_numpy_dtype
    if np.issubdtype(dtype, np.integer):
        if array.dtype.kind == "f" and not np.all(np.isfinite(array) & (array == np.round(array))):
            raise BadRequestError(f"{where}: expected integers for a {spec.dtype.name} input")
        limits = np.iinfo(dtype)
        if array.size and (array.min() < limits.min or array.max() > limits.max):
            raise BadRequestError(
                f"{where}: values must be within [{limits.min}, {limits.max}] "
                f"for a {spec.dtype.name} input"
            )
    if not spec.shape[1:].is_compatible_with(array.shape):
        expected = [d if d is not None else "any" for d in spec.shape[1:].as_list()]
        raise BadRequestError(f"{where}: shape {list(array.shape)}; expected {expected}")
    return array.astype(dtype)


def _input_value(signature: _Signature, name: str, value: Any, where: str) -> Any:
    spec = signature.inputs[name]
    if signature.takes_bytes(name):
        if not (
            isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str)
        ):
            raise BadRequestError(f'{where}: input {name!r} takes {{"b64": "<base64 string>"}}')
        try:
            # SIMD: the standard library's decoder takes ~0.3 ms for a 300x300 JPEG.
            return pybase64.b64decode(value["b64"], validate=True)
        except (binascii.Error, ValueError):
            raise BadRequestError(f"{where}: 'b64' is not valid base64") from None
    if spec.dtype == tf.string:
        if not isinstance(value, str):
            raise BadRequestError(f"{where}: input {name!r} takes a string")
        return value.encode()
    return _numeric(value, spec, where)


def _output_value(name: str, value: np.ndarray) -> Any:
    if value.dtype.kind in "SO":
        items = value.tolist()
        decode = (
            (lambda b: {"b64": pybase64.b64encode(b).decode()})
            if name.endswith(BYTES_SUFFIX)
            else (lambda b: b.decode(errors="replace"))
        )
        return _map_nested(items, decode)
    return value.tolist()


def _map_nested(items: Any, function: Any) -> Any:
    if isinstance(items, list):
        return [_map_nested(item, function) for item in items]
    return function(items)


def use_intra_op_threads(threads: int) -> None:
    """Each op of a call on ``threads`` threads (0: TensorFlow's choice); only before
    TensorFlow has run anything in this process (a warning after)."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError as error:
        logger.warning("intra-op threads stay as they are (%s)", error)


class ServedModel:
    """A loaded SavedModel and its signatures that take inputs."""

    def __init__(self, model_dir: str) -> None:
        self.model_dir = model_dir
        loaded = tf.saved_model.load(model_dir)
        signatures = {
            name: _Signature(name, function, dict(function.structured_input_signature[1]))
            for name, function in loaded.signatures.items()
            if function.structured_input_signature[1]
        }
        if not signatures:
            raise ValueError(f"the SavedModel in {model_dir} has no serving signature")
        # Keep the loaded object alive: its signatures hold only weak references to it.
        self._loaded = loaded
        # serving_default is tried first, the rest in name order.
        self._signatures = sorted(
            signatures.values(), key=lambda s: (s.name != DEFAULT_SIGNATURE, s.name)
        )
        logger.info(
            "loaded %s; signatures: %s",
            model_dir,
            "; ".join(s.describe() for s in self._signatures),
        )

    def _signature_for(self, instance: Any) -> _Signature:
        def single(predicate: Any) -> list[_Signature]:
            return [s for s in self._signatures if len(s.inputs) == 1 and predicate(s)]

        if isinstance(instance, dict) and set(instance) == {"b64"}:
            found = single(lambda s: s.takes_bytes(next(iter(s.inputs))))
            form = 'a {"b64": ...} instance'
        elif isinstance(instance, dict):
            found = [s for s in self._signatures if set(s.inputs) == set(instance)]
            form = f"an instance with inputs {sorted(instance)}"
        elif isinstance(instance, str):
            found = single(
                lambda s: (
                    next(iter(s.inputs.values())).dtype == tf.string
                    and not s.takes_bytes(next(iter(s.inputs)))
                )
            )
            form = "a string instance"
        else:
            found = single(lambda s: next(iter(s.inputs.values())).dtype != tf.string)
            form = "a numeric instance"
        if not found:
            raise BadRequestError(
                f"no signature of this model takes {form}; its signatures: "
                + "; ".join(s.describe() for s in self._signatures)
            )
        return found[0]

    def prepare(self, instances: Any) -> tuple[str, list[dict[str, Any]]]:
        """The signature that serves ``instances`` and each instance's inputs, checked;
        :class:`BadRequestError` when they cannot be served. Cheap next to :meth:`run`."""
        if not isinstance(instances, list) or not instances:
            raise BadRequestError('"instances" must be a non-empty list')
        signature = self._signature_for(instances[0])
        rows = []
        for index, instance in enumerate(instances):
            if self._signature_for(instance) is not signature:
                raise BadRequestError(
                    f"instances[{index}] has another form than instances[0]; "
                    "one request takes one form"
                )
            named = instance if _is_named(instance, signature) else None
            rows.append(
                {
                    name: _input_value(
                        signature,
                        name,
                        named[name] if named is not None else instance,
                        f"instances[{index}]" + (f".{name}" if named is not None else ""),
                    )
                    for name in signature.inputs
                }
            )
        return signature.name, rows

    def predict(self, instances: Any) -> list[Any]:
        """One prediction per instance, in one call of the model (no server, no batching)."""
        return self.run(*self.prepare(instances))

    def run(self, signature_name: str, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The predictions for prepared ``rows`` of one signature (possibly of several
        requests); :class:`BadRequestError` when the model refuses one of them."""
        signature = next(s for s in self._signatures if s.name == signature_name)
        count = len(rows)
        columns = {name: [row[name] for row in rows] for name in signature.inputs}
        # (bytes have no shape: np.shape would copy each into an array to say so)
        same_shapes = all(
            len({getattr(v, "shape", ()) for v in values}) == 1 for values in columns.values()
        )
        # Arrays of different sizes (images, say) go one at a time; the rest as one batch.
        batches = (
            [columns]
            if same_shapes
            else [
                {name: values[i : i + 1] for name, values in columns.items()} for i in range(count)
            ]
        )
        outputs: dict[str, list[np.ndarray]] = {}
        for batch in batches:
            tensors = {
                name: _tensor(values, signature.inputs[name]) for name, values in batch.items()
            }
            try:
                result = signature.function(**tensors)
            except tf.errors.InvalidArgumentError as error:
                raise BadRequestError(f"the model refused the input: {_reason(error)}") from None
            for name, tensor in result.items():
                outputs.setdefault(name, []).append(tensor.numpy())
        merged = {name: np.concatenate(parts) for name, parts in outputs.items()}
        for name, value in merged.items():
            if value.shape[:1] != (count,):
                raise RuntimeError(
                    f"signature {signature.name} output {name!r} has shape {list(value.shape)}; "
                    f"expected one row per instance ({count})"
                )
        if len(merged) == 1:
            ((name, value),) = merged.items()
            return list(_output_value(name, value))
        outputs_by_name = {name: _output_value(name, value) for name, value in merged.items()}
        return [
            {name: outputs_by_name[name][i] for name in sorted(outputs_by_name)}
            for i in range(count)
        ]


def _reason(error: tf.errors.OpError) -> str:
    """The op's own words, without the graph's node names and stack (which would only say
    how the model is built)."""
    lines = [line for line in error.message.splitlines() if line.strip()]
    kept = [
        line
        for line in lines
        if not line.startswith(("Graph execution error", "Detected at node", "<", "\t", " "))
    ]
    return (kept or lines or ["invalid input"])[-1].strip()


def _tensor(values: list[Any], spec: tf.TensorSpec) -> tf.Tensor:
    if spec.dtype == tf.string:
        return tf.constant(values, dtype=tf.string)
    return tf.constant(np.stack(values), dtype=spec.dtype)


def _is_named(instance: Any, signature: _Signature) -> bool:
    """A one-input signature takes a named instance too: ``{"image_bytes": {"b64": ...}}``."""
    return (
        isinstance(instance, dict)
        and set(instance) == set(signature.inputs)
        and set(instance) != {"b64"}
    )
