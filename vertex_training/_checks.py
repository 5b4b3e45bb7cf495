"""Runtime type checks for the public Args: a wrong type fails at construction, naming
the Python argument and what it accepts, before any resource is registered.

The Args are frozen dataclasses annotated with ``pulumi.Input[...]``; their annotations
are read back here (``from __future__ import annotations`` keeps them as text) with a
stand-in for ``pulumi`` whose ``Input[T]`` means "a T, or an Output/awaitable of one".
A value that is not known yet (an Output) is accepted wherever an Input is.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pulumi

from vertex_training._spelling import did_you_mean

__all__ = ["Checked", "InvalidArgumentsError", "check_fields", "is_known"]


class InvalidArgumentsError(pulumi.RunError, ValueError):
    """Arguments that Vertex (or this module) would refuse, found before anything is
    registered. ``pulumi`` shows the message without a traceback; each line names the
    Python argument, what is wrong and what would be valid."""


_PLAIN = frozenset({str, int, float, bool, type(None), bytes, dict, list, tuple})
"""Exact types that are never an Output or awaitable: ``is_known`` answers them without
the (slower) abstract ``Awaitable`` check. Subclasses take the full check."""


def is_known(value: object) -> bool:
    """False for an Output or awaitable: its value comes from another resource."""
    return type(value) in _PLAIN or not isinstance(value, pulumi.Output | Awaitable)


class _AnyOf:
    def __init__(self, *options: object) -> None:
        self.options = options

    def __or__(self, other: object) -> _AnyOf:
        return _AnyOf(*self.options, other)

    def __ror__(self, other: object) -> _AnyOf:
        return _AnyOf(other, *self.options)


class _Later:
    """An Output or awaitable of ``inner``: checked when it resolves, not now."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __or__(self, other: object) -> _AnyOf:
        return _AnyOf(self, other)

    def __ror__(self, other: object) -> _AnyOf:
        return _AnyOf(other, self)


class _Subscript:
    def __init__(self, make: Any) -> None:
        self.make = make

    def __getitem__(self, item: object) -> object:
        return self.make(item)


class _PulumiShim:
    Input = _Subscript(lambda inner: _AnyOf(inner, _Later(inner)))
    Output = _Subscript(_Later)
    Resource = pulumi.Resource
    ResourceOptions = pulumi.ResourceOptions


@cache
def _field_types(cls: type) -> dict[str, object]:
    module = sys.modules[cls.__module__]
    namespace = {**vars(module), "pulumi": _PulumiShim}
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        out[f.name] = eval(f.type, namespace) if isinstance(f.type, str) else f.type
    return out


def _matches(value: object, expected: object) -> bool:
    if expected is Any or expected is object:
        return True
    if isinstance(expected, _AnyOf):
        return any(_matches(value, option) for option in expected.options)
    if isinstance(expected, _Later):
        return not is_known(value)
    if expected is None or expected is type(None):
        return value is None
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin is typing.Union or origin is types.UnionType:
        return any(_matches(value, option) for option in args)
    if origin is typing.Literal:
        return any(value == option and type(value) is type(option) for option in args)
    if origin in (Sequence, list, tuple):
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            return False
        inner = args[0] if args else Any
        return all(_matches(item, inner) for item in value)
    if origin in (Mapping, dict):
        if not isinstance(value, Mapping):
            return False
        key_type, value_type = args or (Any, Any)
        return all(_matches(k, key_type) and _matches(v, value_type) for k, v in value.items())
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is Path:
        return isinstance(value, str | Path)
    if inspect.isclass(expected):
        return isinstance(value, expected)
    return True  # a construct this checker does not know: let the rules judge


def _describe(expected: object) -> str:
    if isinstance(expected, _AnyOf):
        return " or ".join(dict.fromkeys(_describe(o) for o in expected.options))
    if isinstance(expected, _Later):
        return f"an Output of {_describe(expected.inner)}"
    if expected is None or expected is type(None):
        return "None"
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(dict.fromkeys(_describe(o) for o in args))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Sequence, list, tuple):
        return f"a list of ({_describe(args[0])})" if args else "a list"
    if origin in (Mapping, dict):
        return (
            f"a mapping of {_describe(args[0])} to ({_describe(args[1])})" if args else "a mapping"
        )
    if inspect.isclass(expected):
        return expected.__name__
    return str(expected)


def _literals(expected: object) -> list[str]:
    """The string options of every ``Literal`` in ``expected``."""
    if isinstance(expected, _AnyOf):
        return [o for option in expected.options for o in _literals(option)]
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return [o for option in typing.get_args(expected) for o in _literals(option)]
    if origin is typing.Literal:
        return [a for a in typing.get_args(expected) if isinstance(a, str)]
    return []


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_Check = Callable[[object], bool]


def _always(_value: object) -> bool:
    return True


def _any_of(checks: list[_Check]) -> _Check:
    if len(checks) == 1:
        return checks[0]
    if _always in checks:
        return _always
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) or second(value)
    return lambda value: any(check(value) for check in checks)


def _options(expected: object) -> list[object]:
    """The alternatives of a union (``_AnyOf``, ``X | Y``, ``Optional``), nested ones
    flattened; ``[expected]`` for anything else."""
    if isinstance(expected, _AnyOf):
        return [o for option in expected.options for o in _options(option)]
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return [o for option in typing.get_args(expected) for o in _options(option)]
    return [expected]


def _compile(expected: object) -> _Check:
    """``lambda value: _matches(value, expected)``, with the annotation read once: the
    same answer for every value, without taking the annotation apart on each call."""
    options = _options(expected)
    if len(options) != 1:
        # Cheapest first (the answer does not depend on the order): None, then one
        # isinstance over every plain class, then the rest.
        nones = [_compile(o) for o in options if o is None or o is type(None)]
        classes = tuple(typing.cast(type, o) for o in options if _plain_class(o))
        rest = [
            _compile(o)
            for o in options
            if not _plain_class(o) and o is not None and o is not type(None)
        ]
        if classes:
            rest.insert(0, lambda value: isinstance(value, classes))
        return _any_of(nones[:1] + rest)
    expected = options[0]
    if expected is Any or expected is object:
        return _always
    if isinstance(expected, _Later):
        return lambda value: not is_known(value)
    if expected is None or expected is type(None):
        return lambda value: value is None
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin is typing.Literal:
        return lambda value: any(value == o and type(value) is type(o) for o in args)
    if origin in (Sequence, list, tuple):
        item = _compile(args[0]) if args else _always
        if item is _always:
            return lambda value: isinstance(value, list | tuple)
        return lambda value: isinstance(value, list | tuple) and all(item(i) for i in value)
    if origin in (Mapping, dict):
        key, val = (_compile(args[0]), _compile(args[1])) if args else (_always, _always)
        return lambda value: (
            isinstance(value, Mapping) and all(key(k) and val(v) for k, v in value.items())
        )
    if expected is float:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if expected is Path:
        return lambda value: isinstance(value, str | Path)
    if inspect.isclass(expected):
        return lambda value: isinstance(value, expected)
    return _always  # a construct this checker does not know: let the rules judge


def _plain_class(expected: object) -> bool:
    """A class whose check is exactly ``isinstance`` (not ``int``/``float``, which refuse
    ``bool``, nor ``Path``, which takes text, nor ``object``, which takes anything)."""
    return (
        inspect.isclass(expected)
        and expected is not Any
        and not any(expected is special for special in (int, float, Path, object, type(None)))
        and typing.get_origin(expected) is None
    )


_COMPILED: dict[object, _Check] = {}


def matches(value: object, expected: object) -> bool:
    """``value`` has the type ``expected`` (an annotation of ``_field_types``)."""
    try:
        check = _COMPILED[expected]
    except KeyError:
        check = _COMPILED[expected] = _compile(expected)
    except TypeError:  # an annotation that cannot be a key
        return _matches(value, expected)
    return check(value)


@cache
def _field_checks(cls: type) -> tuple[tuple[str, object, _Check], ...]:
    """(name, annotation, its compiled check) for each field of the dataclass ``cls``."""
    return tuple(
        (name, expected, _compile(expected))
        for name, expected in _field_types(cls).items()  # type: ignore[arg-type]
    )


def check_fields(obj: object) -> None:
    """Raise ``InvalidArgumentsError`` naming every field of the dataclass ``obj`` whose
    value does not have its declared type (values not known yet pass)."""
    cls = type(obj)
    problems: list[str] = []
    for name, expected, check in _field_checks(cls):  # type: ignore[arg-type]
        value = getattr(obj, name)
        if not check(value):
            hint = did_you_mean(value, _literals(expected)) if isinstance(value, str) else ""
            problems.append(
                f"{cls.__name__}.{name}: got {type(value).__name__} {_show(value)}{hint}; "
                f"valid: {_describe(expected)}"
            )
    if problems:
        raise InvalidArgumentsError("\n".join(problems))


class Checked:
    """A dataclass base whose fields' types are checked at construction (``check_fields``)."""

    def __post_init__(self) -> None:
        check_fields(self)
