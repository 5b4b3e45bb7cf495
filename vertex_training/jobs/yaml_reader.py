"""The YAML reader: a stack file's mapping (the Args' field names, camelCased) read into
the same Args the Python route builds, every problem at the user's YAML key."""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from vertex_training._checks import (
    InvalidArgumentsError,
    alternatives,
    arguments,
    describe,
    field_types,
    matches,
    shown,
    typo_hint,
)
from vertex_training._spelling import did_you_mean
from vertex_training.findings import Finding, render
from vertex_training.jobs.body import camel, layout
from vertex_training.jobs.caller_paths import caller_path

__all__ = [
    "UNION_KEY",
    "config_problem",
    "config_problems",
    "from_config",
    "required",
    "yaml_keys",
    "yaml_value",
]


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
        for name, _, keys in layout(cls)
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
