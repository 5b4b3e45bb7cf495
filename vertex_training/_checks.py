"""Runtime type checks for the public Args: a wrong type fails at construction, naming
the Python argument and what it accepts, before any resource is registered.

The Args are frozen dataclasses annotated with ``pulumi.Input[...]``; pydantic judges
their values (strictly: no coercion, ``True`` is not a number). Their annotations are
read back here (``from __future__ import annotations`` keeps them as text) with
``pulumi.Input[T]`` meaning "a T, or a value not known yet (an Output or awaitable),
which is judged where it resolves".
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import pulumi
import typing_extensions
from pydantic import ConfigDict, Strict, TypeAdapter, ValidationError, WrapValidator
from pydantic_core import core_schema

from vertex_training._pulumi_internals import UNKNOWN, Unknown
from vertex_training._spelling import did_you_mean
from vertex_training.findings import Finding, render

__all__ = [
    "LATER",
    "LEAVES",
    "Checked",
    "InvalidArgumentsError",
    "JudgedOnce",
    "Judgement",
    "accepts_unknown",
    "alternatives",
    "arguments",
    "describe",
    "field_types",
    "is_known",
    "map_known",
    "matches",
    "require_args",
    "shown",
    "typo_hint",
    "unchecked_copy",
]


class InvalidArgumentsError(pulumi.RunError, ValueError):
    """Arguments that Vertex (or this module) would refuse, found before anything is
    registered. ``pulumi`` shows the message without a traceback; each line names the
    Python argument, what is wrong and what would be valid. ``findings`` keeps them as
    values for any other surface (a stack key, a provider property): never parse the text."""

    def __init__(self, message: str = "", findings: Sequence[Finding] = ()) -> None:
        self.findings = tuple(findings)
        super().__init__(message or "\n".join(map(str, self.findings)))

    @classmethod
    def of(
        cls,
        owner: str,
        findings: Sequence[Finding],
        heading: str = "",
        hint: Callable[[Finding], str] = lambda _: "",
    ) -> InvalidArgumentsError:
        """The refusal of ``findings`` (each at its ``caller`` path under ``owner``, the
        Args class): one line each, rendered for Python then its ``hint``, under ``heading``."""
        lines = [render(finding, "python", owner) + hint(finding) for finding in findings]
        text = f"{heading}:\n  " + "\n  ".join(lines) if heading else "\n".join(lines)
        return cls(text, findings)


def require_args(resource: str, resource_name: str, args: object, args_type: type) -> None:
    """Refuse ``args`` that are not ``args_type``'s, before anything is registered."""
    if not isinstance(args, args_type):
        article = "an" if args_type.__name__[0] in "AEIOU" else "a"
        raise InvalidArgumentsError(
            f"{resource}({resource_name!r}): args must be {article} {args_type.__name__}, "
            f"got {type(args).__name__}"
        )


LEAVES = frozenset({str, bytes, int, float, bool, type(None)})
"""Exact types of known values that hold no other value (no Output, collection or spec)."""
_PLAIN = LEAVES | {dict, list, tuple}
"""Exact types that are never an Output or awaitable: ``is_known`` answers them without
the (slower) abstract ``Awaitable`` check. Subclasses take the full check."""


LATER: Any = object()
"""A value another resource fills in later, where the job rules judge a job on the facts
of a platform (``PlatformFacts``): not known yet, like an Output."""


def is_known(value: object) -> bool:
    """The one test of "not known yet": False for an Output or awaitable (another resource
    gives it), ``LATER``, and what the engine hands a provider in its place in preview."""
    kind = type(value)
    if kind is str:
        return value != UNKNOWN
    if kind in _PLAIN:
        return True
    return value is not LATER and not isinstance(value, pulumi.Output | Awaitable | Unknown)


def map_known(value: Any, fn: Any) -> Any:
    """``fn(value)``, or the Output of it when ``value`` is not known yet (``LATER`` stays)."""
    if is_known(value):
        return fn(value)
    if value is LATER:
        return value
    return pulumi.Output.from_input(value).apply(fn)


def _unless_unknown(value: object, handler: Any) -> object:
    return handler(value) if is_known(value) else value


_INPUT = WrapValidator(_unless_unknown)
"""The mark of ``pulumi.Input[T]`` (``Annotated[T, _INPUT]``): a value not known yet passes."""


class _Input:
    def __class_getitem__(cls, inner: object) -> object:
        return Annotated[inner, _INPUT]


_NAMES = {
    "pulumi": types.SimpleNamespace(**{**vars(pulumi), "Input": _Input}),
    "Path": Annotated[Path, Strict(False)],  # a path may be given as text
}
"""What the annotations' names mean here, over their module's."""


@cache
def field_types(cls: type) -> dict[str, object]:
    """Each field's annotation of the dataclass ``cls``, evaluated in the module of the class
    that declares it, so a subclass elsewhere keeps its base's types (``pulumi.Input[T]`` is
    ``Annotated[T, _INPUT]``); derived once per class: do not change the mapping."""

    def evaluated(f: dataclasses.Field[Any]) -> object:
        if not isinstance(f.type, str):
            return f.type
        owner = next(c for c in cls.__mro__ if f.name in inspect.get_annotations(c))
        return eval(f.type, vars(sys.modules[owner.__module__]), _NAMES)

    return {f.name: evaluated(f) for f in dataclasses.fields(cls)}


def accepts_unknown(expected: object) -> bool:
    """Whether an annotation of ``field_types`` is ``pulumi.Input[...]`` (optional or not):
    its value may come from another resource."""
    origin = typing.get_origin(expected)
    if origin is Annotated:
        return _INPUT in expected.__metadata__  # type: ignore[attr-defined]
    if origin is typing.Union or origin is types.UnionType:
        return any(accepts_unknown(option) for option in typing.get_args(expected))
    return False


@cache
def alternatives(expected: object) -> tuple[object, ...]:
    """The alternatives of an annotation (``X | Y``, ``Optional``), nested ones flattened
    and ``Annotated`` unwrapped; ``(expected,)`` for anything else."""
    origin = typing.get_origin(expected)
    if origin is Annotated:
        return alternatives(typing.get_args(expected)[0])
    if origin is typing.Union or origin is types.UnionType:
        return tuple(o for option in typing.get_args(expected) for o in alternatives(option))
    return (expected,)


_CONFIG = ConfigDict(strict=True, arbitrary_types_allowed=True)


def _validator(name: str, fields: dict[str, object]) -> TypeAdapter[Any]:
    # A TypedDict of the fields, not the dataclass: pydantic's schema of a dataclass would
    # build one (its __post_init__ again) where an instance's values are to be judged.
    checked = typing_extensions.TypedDict(name, fields)  # type: ignore[misc]
    checked.__pydantic_config__ = _CONFIG  # type: ignore[attr-defined]
    return TypeAdapter(checked)


@cache
def _adapter(cls: type) -> TypeAdapter[Any]:
    """A validator of the fields of ``cls``, built on first use: pydantic takes a few
    milliseconds per class, which a program pays only for the classes it builds."""
    return _validator(cls.__name__, field_types(cls))


@cache
def _value_adapter(expected: object) -> TypeAdapter[Any]:
    return _validator("Value", {"value": expected})


def matches(value: object, expected: object) -> bool:
    """``value`` has the type ``expected`` (an annotation of ``field_types``)."""
    try:
        _value_adapter(expected).validate_python({"value": value})
    except ValidationError:
        return False
    return True


_YAML_WORDS: dict[object, str] = {
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    Path: "a path",
}


def describe(expected: object, yaml: bool = False) -> str:
    """What a value of type ``expected`` is, in a Python user's words, or a YAML user's
    (``null``, "a number", "a mapping (WorkerPool)"; an Output is no YAML value: never
    named)."""
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if origin is Annotated:
        inner = describe(args[0], yaml)
        return f"{inner} or an Output of {inner}" if _INPUT in args[1:] and not yaml else inner
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(dict.fromkeys(describe(option, yaml) for option in args))
    if expected is None or expected is type(None):
        return "null" if yaml else "None"
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Sequence, list, tuple):
        return f"a list of ({describe(args[0], yaml)})" if args else "a list"
    if origin in (Mapping, dict):
        return f"a mapping of {describe(args[0], yaml)} to ({describe(args[1], yaml)})"
    name = getattr(expected, "__name__", str(expected))
    if not yaml:
        return name
    return (
        f"a mapping ({name})"
        if dataclasses.is_dataclass(expected)
        else _YAML_WORDS.get(expected, name)
    )


def typo_hint(value: object, expected: object) -> str:
    """`` (did you mean 'x'?)`` where the text ``value`` is near a string option of a
    ``Literal`` in ``expected``; ``""`` otherwise."""
    if not isinstance(value, str):
        return ""
    options = [
        a
        for option in alternatives(expected)
        if typing.get_origin(option) is typing.Literal
        for a in typing.get_args(option)
        if isinstance(a, str)
    ]
    return did_you_mean(value, options)


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a huge number is thousands of digits)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Checked:
    """A dataclass base whose fields' types are checked at construction: an
    ``InvalidArgumentsError`` names every field whose value does not have its declared
    type (values not known yet pass)."""

    def __post_init__(self) -> None:
        cls: type = type(self)
        try:
            _adapter(cls).validate_python(self.__dict__)
        except ValidationError as error:
            names = dict.fromkeys(str(e["loc"][0]) for e in error.errors())
            findings = []
            for name in names:
                value, expected = getattr(self, name), field_types(cls)[name]
                message = f"got {type(value).__name__} {shown(value)}{typo_hint(value, expected)}"
                findings.append(Finding(name, message, valid=describe(expected), caller=name))
            raise InvalidArgumentsError.of(cls.__name__, findings) from None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        # A field holding Args is checked by isinstance: the Args checked themselves.
        return core_schema.is_instance_schema(cls)


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What a resource's rules found of its Args, and what else they read."""

    on: Any
    """What the rules read besides the Args: a job's name and platform facts, a model's or
    an endpoint's environment and region."""
    findings: tuple[Any, ...] = ()
    """What the resource still has to show of what was found (a job's were shown by the
    stack that judged it: none)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.is_instance_schema(cls)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JudgedOnce(Checked):
    """Args of a resource whose rules may run before the resource is declared (the stack
    reader judges its jobs, models and endpoints where it reads them): a resource on the
    same facts does not judge them again."""

    judged: Judgement | None = dataclasses.field(
        default=None, compare=False, repr=False, metadata={"vertex": None, "argument": False}
    )
    """Where these Args were judged and what was found; set by the program that judged
    them, kept by every copy (``dataclasses.replace``, ``unchecked_copy``)."""

    def findings_on(self, on: Any) -> tuple[Any, ...] | None:
        """What was found of these Args judged on ``on``; None where they were not."""
        judged = self.judged
        return judged.findings if judged is not None and judged.on == on else None


def arguments(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of the Args ``cls`` a caller gives (``judged`` is the program's)."""
    return [f for f in dataclasses.fields(cls) if f.init and f.metadata.get("argument", True)]


_T = typing.TypeVar("_T")


def unchecked_copy(obj: _T, **changes: Any) -> _T:
    """``obj`` (``Checked`` Args) with ``changes`` its caller took from where the Args run
    (a platform's values, whose types it checked) or its ``judged``: not checked, nor
    judged, again."""
    out = copy.copy(obj)
    vars(out).update(changes)  # the declared fields of a frozen copy of ours
    return out
