"""The one model of a job: each Args field names the Vertex field it sets, and everything
else is derived from that.

A field's place in the REST body (relative to the body of the class that holds it) is its
own name camelCased (``service_account`` -> ``serviceAccount``), or what it declares:
``vertex("machineSpec.machineType")``, or ``vertex(None)`` for a field that says how the
program runs the job instead (``extra_fields`` is merged in whole). From those alone:

- ``to_body`` builds the request body of any Args value (both routes: Python Args and
  stack YAML, which is read into the same Args);
- ``caller_path`` turns an API path (``jobSpec.workerPoolSpecs[1].machineSpec.machineType``)
  back into the caller's own path: ``workers.machine_type``, in YAML ``workers.machineType``;
- ``from_config`` reads a YAML mapping (the same names, camelCased) into the Args.

Adding a Vertex field is therefore: one annotated field, one test.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_training._checks import (
    LEAVES,
    InvalidArgumentsError,
    alternatives,
    arguments,
    describe,
    field_types,
    is_known,
    map_known,
    matches,
    shown,
    typo_hint,
)
from vertex_training._spelling import did_you_mean
from vertex_training.findings import Finding, render
from vertex_training.jobs.placeholders import drop_unknown, with_placeholders
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.jobs.rules.hardware import acknowledge
from vertex_training.jobs.view import Message, read

__all__ = [
    "VertexField",
    "caller_path",
    "camel",
    "dataclass_members",
    "merge_fields",
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


def _keys(path: str) -> Keys:
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
def _layout(cls: type) -> tuple[tuple[str, VertexField, Keys], ...]:
    """(field name, its Vertex field, its body path's keys) for each Vertex field of
    ``cls``: derived once per class, since every job's body is built from it."""
    return tuple(
        (f.name, spec, _keys(_prefix(cls, f.name) + spec.path))
        for f in dataclasses.fields(cls)
        if f.name != "extra_fields"
        and (spec := f.metadata.get(VERTEX, VertexField(camel(f.name)))) is not None
    )


def to_body(obj: Any) -> dict[str, Any]:
    """The REST body ``obj`` (an Args dataclass) declares, its ``extra_fields`` merged in
    last. Values not known yet (Outputs) stay in place."""
    body: dict[str, Any] = {}
    cls: type = type(obj)
    for name, spec, keys in _layout(cls):
        value = getattr(obj, name)
        if _omitted(value, spec):
            continue
        out = _value(value, spec)
        if out == {} and dataclasses.is_dataclass(value):
            continue  # a nested spec with nothing set (``Scheduling()``)
        _put(body, keys, out)
    extra = getattr(obj, "extra_fields", None)
    return merge_fields(body, extra) if extra else body


# --------------------------------------------------------------------------- types


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


# --------------------------------------------------------------------------- paths


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
    for name, spec, own in _layout(cls):
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
    return _walk(cls, obj, _keys(api_path), spelling == "yaml")[1]


# --------------------------------------------------------------------------- YAML


def config_problem(path: str, problem: str, valid: str = "") -> Finding:
    """One problem in a YAML entry, at the caller's YAML path ``path``: what is wrong and
    what is valid ("" where what is wrong says it); the message names the Vertex field
    where there is one."""
    return Finding("", problem, valid=valid, caller=path)


UNION_KEY = "type"
"""Which class a YAML mapping means where several fit (a parameter, an early-stopping
rule): the Python class name, ``type: DoubleParameter``."""


@functools.cache
def yaml_keys(cls: type, skip: frozenset[str] = frozenset()) -> dict[str, dataclasses.Field[Any]]:
    """The YAML keys of ``cls``: its init fields, camelCased (derived once per class;
    do not change the mapping)."""
    return {camel(f.name): f for f in arguments(cls) if f.name not in skip}


def required(f: dataclasses.Field[Any]) -> bool:
    """A field the Args cannot be built without (no default): a key every entry has."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def yaml_value(value: Any) -> str:
    """``value`` in a YAML user's words: ``null``, ``true``, the number 4, 'text', a list,
    a mapping (never a Python type name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value:g}" if isinstance(value, float) else f"the number {value}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return shown(value)


def _number(expected: object, value: Any, text: bool = False) -> Any:
    """``value`` as the number type ``expected`` takes: YAML writes 1 for 1.0, and a
    mapping key (a conditional parameter's parent value, under a numeric parent) arrives
    as ``text`` where the YAML went through JSON (Pulumi's config) or was quoted."""
    if type(value) is int or (text and isinstance(value, str)):
        options = alternatives(expected)
        for number in (int, float):
            if number in options:
                try:
                    return number(value)
                except (ValueError, OverflowError):  # 1e400 is no float: said as refused
                    continue
    return value


def _scalar(expected: object, value: Any, path: str, out: list[Finding], text: bool = False) -> Any:
    value = _number(expected, value, text)
    if not matches(value, expected):
        hint = typo_hint(value, expected)
        out.append(
            config_problem(path, f"got {yaml_value(value)}{hint}", describe(expected, yaml=True))
        )
    return value


def _convert(expected: object, value: Any, path: str, out: list[Finding], api: str = "") -> Any:
    options = alternatives(expected)
    classes = [o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)]
    if isinstance(value, Mapping) and len(classes) == 1:
        return from_config(classes[0], value, path, out, api=api)
    if isinstance(value, Mapping) and classes:
        by_name = {c.__name__: c for c in classes}
        chosen = by_name.get(str(value.get(UNION_KEY)))
        if chosen is not None:
            rest = {k: v for k, v in value.items() if k != UNION_KEY}
            return from_config(chosen, rest, path, out, api=api)
        given = repr(value[UNION_KEY]) if UNION_KEY in value else "missing"
        kinds = "one of " + ", ".join(by_name)
        out.append(
            config_problem(f"{path}.{UNION_KEY}", f"{given}: says which kind this is", kinds)
        )
        return None
    for option in options:
        origin = typing.get_origin(option)
        if origin in (Sequence, list, tuple) and isinstance(value, list | tuple):
            inner = typing.get_args(option)[0]
            return [
                _convert(inner, item, f"{path}[{i}]", out, f"{api}[{i}]")
                for i, item in enumerate(value)
            ]
        if origin in (Mapping, dict) and isinstance(value, Mapping):
            key_type, value_type = typing.get_args(option)
            return {
                _scalar(key_type, k, f"{path}.{k}", out, text=True): _convert(
                    value_type, v, f"{path}.{k}", out, f"{api}.{k}"
                )
                for k, v in value.items()
            }
    return _scalar(expected, value, path, out)


def from_config(
    cls: type,
    data: Any,
    path: str,
    out: list[Finding],
    skip: frozenset[str] = frozenset(),
    *,
    api: str = "",
) -> Any:
    """``cls`` built from a YAML mapping of its fields in camelCase; every problem (unknown
    or missing keys, wrong types, what ``cls`` refuses when built) appended to ``out``
    with its YAML path (and the API path of the Vertex field, under ``api``, the place of
    ``cls`` in the body); None when there was one."""
    if not isinstance(data, Mapping):
        out.append(config_problem(path, f"got {yaml_value(data)}", f"a mapping ({cls.__name__})"))
        return None
    keys = yaml_keys(cls, skip)
    types_of = field_types(cls)
    before = len(out)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        f = keys.get(str(key))
        if f is None:
            hint = did_you_mean(str(key), list(keys))
            out.append(
                config_problem(f"{path}.{key}", f"unknown key{hint}", "one of " + ", ".join(keys))
            )
            continue
        at = _api_paths(cls).get(f.name, "")
        inner = ".".join(filter(None, (api, at))) if at else ""
        kwargs[f.name] = _convert(types_of[f.name], value, f"{path}.{key}", out, inner)
    for key, f in keys.items():
        if required(f) and f.name not in kwargs:
            out.append(config_problem(f"{path}.{key}", "missing", f"a {cls.__name__} needs it"))
    if len(out) > before:
        return None
    try:
        return cls(**kwargs)
    except InvalidArgumentsError as error:
        out += config_problems(cls, error.findings, path, api)
        return None


@functools.cache
def _api_paths(cls: type) -> dict[str, str]:
    """Each Vertex field of ``cls`` by name: its API path under the body of ``cls``."""
    return {
        name: "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
        for name, _, keys in _layout(cls)
    }


_STEP = re.compile(r"\['([^']*)'\]|\[(\d+)\]|([^.\[\]]+)")


def yaml_path(caller: str) -> str:
    """A caller's Python path in YAML spelling: ``extra_fields['env'][0]`` ->
    ``extraFields.env[0]``, ``chief.accelerator.count`` as it is."""
    steps = [
        key if key else f"[{index}]" if index else camel(name)
        for key, index, name in _STEP.findall(caller)
    ]
    return "".join(s if s.startswith("[") else f".{s}" for s in steps).lstrip(".")


def config_problems(
    cls: type, findings: Sequence[Finding], root: str = "", api: str = ""
) -> list[Finding]:
    """What the Args ``cls`` refused (``findings``), each at the YAML key under ``root`` that
    sets it (derived from its API path; a field's own type at its camelCased name) and
    naming the Vertex field (under ``api``, the place of ``cls`` in the body)."""
    problems = []
    for finding in findings:
        key = yaml_path(finding.caller) or caller_path(cls, finding.path, "yaml")
        vertex = ""
        if finding.path != finding.caller:  # else about the field itself (its type)
            vertex = ".".join(filter(None, (api, finding.path)))
        where = ".".join(filter(None, (root, key)))
        said = render(finding, "message")  # its check in its words: not acknowledged here
        problems.append(Finding(vertex, said, valid=finding.valid, caller=where))
    return problems


def judged_where_built(
    obj: Any,
    model: type[Message],
    rules: Callable[[Any, str], list[Finding]],
    body: dict[str, Any] | None = None,
) -> tuple[Finding, ...]:
    """Where ``obj`` (a pool, study or parameter) is built: the rules of what it must be
    anywhere, on its body (``to_body(obj)`` unless given), its own acknowledged hardware
    checks applied. Raises ``InvalidArgumentsError`` naming the caller's own field for
    every error; returns the warnings, for the job that runs it to show."""
    known, unknown = with_placeholders(to_body(obj) if body is None else body)
    view, found = read(model, known)
    found = drop_unknown(found or (rules(view, "") if view is not None else []), unknown)
    found = acknowledge(found, getattr(obj, "acknowledged_hardware_checks", ()))
    found = [f.at(caller_path(obj, f.path) or f.path) for f in found]
    errors = [f for f in found if f.severity == "error"]
    if errors:
        raise refusal(type(obj).__name__, errors)
    return tuple(found)


def refusal(owner: str, findings: Sequence[Finding], heading: str = "") -> InvalidArgumentsError:
    """``InvalidArgumentsError.of`` the Args class ``owner``; an error of the hardware catalog
    says how to acknowledge it, since a catalog row can be out of date and the message
    alone must say the way out."""

    def acknowledging(finding: Finding) -> str:
        if not finding.check or finding.severity != "error":
            return ""
        return (
            f"; where the hardware catalog (as of {catalog().as_of}) is out of date: "
            f"{owner}(..., acknowledged_hardware_checks=[{finding.check!r}]) only warns"
        )

    return InvalidArgumentsError.of(owner, findings, heading, acknowledging)


def duration(seconds: float) -> str:
    """A protobuf Duration's JSON: ``3600s``, ``1.5s`` (fractions kept, never rounded)."""
    text = f"{float(seconds):.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def int64(value: Any) -> Any:
    """An int64 field's JSON: a string (``"3"``)."""
    return map_known(value, lambda n: str(int(n)))


def seconds(value: Any) -> Any:
    return map_known(value, duration)
