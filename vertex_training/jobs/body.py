"""The body builder: each Args field names the Vertex field it sets, and the request body
of any Args value is derived from that.

A field's place in the REST body (relative to the body of the class that holds it) is its
own name camelCased (``service_account`` -> ``serviceAccount``), or what it declares:
``vertex("machineSpec.machineType")``, or ``vertex(None)`` for a field that says how the
program runs the job instead (``extra_fields`` is merged in whole). From those alone:

- ``to_body`` (here) builds the request body of any Args value (both routes: Python Args
  and stack YAML, which is read into the same Args);
- ``caller_paths.caller_path`` turns an API path
  (``jobSpec.workerPoolSpecs[1].machineSpec.machineType``) back into the caller's own
  path: ``workers.machine_type``, in YAML ``workers.machineType``;
- ``yaml_reader.from_config`` reads a YAML mapping (the same names, camelCased) into the
  Args.

Adding a Vertex field is therefore: one annotated field, one test.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vertex_training._checks import LEAVES, is_known, map_known

__all__ = [
    "Keys",
    "VertexField",
    "camel",
    "duration",
    "int64",
    "layout",
    "merge_fields",
    "path_keys",
    "seconds",
    "to_body",
    "vertex",
]

VERTEX = "vertex"


@dataclass(frozen=True)
class VertexField:
    """Where a field goes in the body and how its value is written there."""

    path: str
    """Relative to the holder's body; ``""`` merges the value's body into the holder's."""
    encode: Callable[[Any], Any] | None = None
    omit: tuple[Any, ...] = ()
    """Known values left out of the body (besides None, False and empty collections)."""
    keep_empty: bool = False
    """Write an empty collection too (``labels: {}``)."""


def vertex(
    path: str | None,
    *,
    encode: Callable[[Any], Any] | None = None,
    omit: tuple[Any, ...] = (),
    keep_empty: bool = False,
) -> dict[str, VertexField | None]:
    """Field metadata: this field sets the Vertex field at ``path``; None: it never
    reaches the body (it says how the program runs the job)."""
    return {VERTEX: None if path is None else VertexField(path, encode, omit, keep_empty)}


def camel(name: str) -> str:
    """``machine_type`` -> ``machineType``: the YAML (and REST) spelling of a field."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def merge_fields(body: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` merged into ``body``: mappings merge key by key, anything else replaces."""
    out = dict(body)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = merge_fields(current, value)
        else:
            out[key] = value
    return out


_TOKEN = re.compile(r"[^.\[\]]+|\[\d+\]")

Keys = tuple[str | int, ...]


def path_keys(path: str) -> Keys:
    """An API path's keys, a list index as an int: ``a[1].b`` -> ``("a", 1, "b")``."""
    return tuple(int(t[1:-1]) if t.startswith("[") else t for t in _TOKEN.findall(path))


def _prefix(cls: type, name: str) -> str:
    """Where the fields a class inherits from a nested spec go (``CustomJobArgs``'s run
    fields live under ``jobSpec``)."""
    for base, where in getattr(cls, "VERTEX_NESTED", {}).items():
        if name in base.__dataclass_fields__:
            return f"{where}."
    return ""


def _omitted(value: Any, spec: VertexField) -> bool:
    if value is None or value is False:
        return True
    if type(value) not in LEAVES:
        if not is_known(value):
            return False
        if isinstance(value, Mapping | list | tuple) and not value and not spec.keep_empty:
            return True
    return bool(spec.omit) and any(value == o and type(value) is type(o) for o in spec.omit)


def _value(value: Any, spec: VertexField | None) -> Any:
    if spec is not None and spec.encode is not None:
        return spec.encode(value)
    if type(value) in LEAVES:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        body = to_body(value)
        key = getattr(type(value), "VERTEX_KEY", None)
        return {key: body} if key else body
    if is_known(value) and isinstance(value, list | tuple):
        return [_value(item, None) for item in value]
    return value


def _put(body: dict[str, Any], keys: tuple[str | int, ...], value: Any) -> None:
    """``value`` at the body path ``keys`` (an int is a list index, and a gap before it
    an empty pool, ``{}``), merged into a mapping already there."""
    node: Any = body
    for key, child in itertools.pairwise(keys):
        if isinstance(key, int):
            node.extend({} for _ in range(key + 1 - len(node)))
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(child, int) else {})
    if not keys:
        body.update(merge_fields(body, value))
        return
    last = keys[-1]
    if isinstance(last, int):
        node.extend({} for _ in range(last + 1 - len(node)))
    current = node[last] if isinstance(last, int) else node.get(last)
    both = isinstance(current, Mapping) and isinstance(value, Mapping)
    node[last] = merge_fields(current, value) if both else value


@functools.cache
def layout(cls: type) -> tuple[tuple[str, VertexField, Keys], ...]:
    """(field name, its Vertex field, its body path's keys) for each Vertex field of
    ``cls``: derived once per class, since every job's body is built from it."""
    return tuple(
        (f.name, spec, path_keys(_prefix(cls, f.name) + spec.path))
        for f in dataclasses.fields(cls)
        if f.name != "extra_fields"
        and (spec := f.metadata.get(VERTEX, VertexField(camel(f.name)))) is not None
    )


def to_body(obj: Any) -> dict[str, Any]:
    """The REST body ``obj`` (an Args dataclass) declares, its ``extra_fields`` merged in
    last. Values not known yet (Outputs) stay in place."""
    body: dict[str, Any] = {}
    cls: type = type(obj)
    for name, spec, keys in layout(cls):
        value = getattr(obj, name)
        if _omitted(value, spec):
            continue
        out = _value(value, spec)
        if out == {} and dataclasses.is_dataclass(value):
            continue  # a nested spec with nothing set (``Scheduling()``)
        _put(body, keys, out)
    extra = getattr(obj, "extra_fields", None)
    return merge_fields(body, extra) if extra else body


# ------------------------------------------------------------ protobuf JSON values


def duration(seconds: float) -> str:
    """A protobuf Duration's JSON: ``3600s``, ``1.5s`` (fractions kept, never rounded)."""
    text = f"{float(seconds):.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def int64(value: Any) -> Any:
    """An int64 field's JSON: a string (``"3"``)."""
    return map_known(value, lambda n: str(int(n)))


def seconds(value: Any) -> Any:
    return map_known(value, duration)
