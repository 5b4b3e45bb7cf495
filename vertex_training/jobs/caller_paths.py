"""The caller-path mapper: an API path of a job's body
(``jobSpec.workerPoolSpecs[1].machineSpec.machineType``) back to the caller's own path,
``workers.machine_type`` in Python, ``workers.machineType`` in YAML; derived from the Vertex
field each Args field declares (``body``), never written by hand."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from vertex_training._checks import alternatives, field_types
from vertex_training.jobs.body import Keys, camel, layout, path_keys

__all__ = ["caller_path", "dataclass_members"]


def dataclass_members(expected: object) -> list[type]:
    """The dataclasses an annotation may hold, directly or as items of a sequence or the
    values of a mapping (``Sequence[Parameter]`` -> the four parameter classes)."""
    out: list[type] = []
    for option in alternatives(expected):
        origin = typing.get_origin(option)
        if origin in (Sequence, list, tuple):
            out += dataclass_members(typing.get_args(option)[0])
        elif origin in (Mapping, dict):
            out += dataclass_members(typing.get_args(option)[1])
        elif isinstance(option, type) and dataclasses.is_dataclass(option):
            out.append(option)
    return list(dict.fromkeys(out))


def _holds(expected: object, *origins: object) -> bool:
    return any(typing.get_origin(o) in origins for o in alternatives(expected))


def _extra_sets(extra: Any, keys: Keys) -> bool:
    """Whether ``extra`` (``extra_fields``) sets the whole API path ``keys``."""
    node = extra
    for key in keys:
        in_list = isinstance(node, list) and isinstance(key, int) and key < len(node)
        if not (in_list or (isinstance(node, Mapping) and key in node)):
            return False
        node = node[key]
    return True


def _walk(cls: type, obj: Any, keys: Keys, yaml: bool) -> tuple[int, str]:
    """(keys consumed, caller path) of the deepest field of ``cls`` that sets a prefix of
    ``keys``; the ``extra_fields`` of ``obj`` (a ``cls``, or None) that set them all come
    first, as the body merges them in last."""
    if keys and _extra_sets(getattr(obj, "extra_fields", None), keys):
        if yaml:
            return len(keys) + 1, "extraFields." + ".".join(map(str, keys))
        return len(keys) + 1, "extra_fields" + "".join(f"[{k!r}]" for k in keys)
    best = (0, "")
    types_of = field_types(cls)
    for name, spec, own in layout(cls):
        if keys[: len(own)] != own:
            continue
        used, here, rest = len(own), camel(name) if yaml else name, keys[len(own) :]
        if rest and isinstance(rest[0], int) and _holds(types_of[name], Sequence, list, tuple):
            used, here, rest = used + 1, f"{here}[{rest[0]}]", rest[1:]
        if rest and spec.encode is None and _holds(types_of[name], Mapping, dict):
            # A key of a plain mapping (``labels.team``) is the caller's own key.
            used, here, rest = used + len(rest), ".".join([here, *map(str, rest)]), ()
        if used > best[0]:
            best = (used, here)
        value = getattr(obj, name, None)
        for member in dataclass_members(types_of[name]):
            key = getattr(member, "VERTEX_KEY", None)
            if key and rest[:1] != (key,):
                continue
            skip = 1 if key else 0
            inner = value if isinstance(value, member) else None
            depth, path = _walk(member, inner, rest[skip:], yaml)
            if depth and used + skip + depth > best[0]:
                best = (used + skip + depth, f"{here}.{path}")
    return best


def caller_path(args: Any, api_path: str, spelling: str = "python") -> str:
    """The caller's path to what sets ``api_path`` in the body of ``args`` (Args, or their
    class): the ``extra_fields`` that set it (Python ``chief.extra_fields['env'][0]``, YAML
    ``chief.extraFields.env.0``), else the deepest field whose Vertex path is a prefix of
    it, in Python (snake_case) or YAML (camelCase) spelling; ``""`` when none does."""
    cls, obj = (args, None) if isinstance(args, type) else (type(args), args)
    return _walk(cls, obj, path_keys(api_path), spelling == "yaml")[1]
