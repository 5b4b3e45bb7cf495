"""The component provider's argument and output types, derived from the Python Args.

Pulumi infers a provider's schema from ``TypedDict`` annotations (components receive
their args as plain dicts), so each Args dataclass (``CustomJobArgs``, ``WorkerPool``,
``TrainingPlatformArgs`` ...) is turned into a ``TypedDict`` of the same name and the
same fields, here, when this module is imported: a field added to the Args is in every
language's schema with no other file touched. The schema cannot say everything a Python
annotation says, so each annotation is spelt in the schema's terms:

- ``pulumi.Input[T]``: ``pulumi.Input[T]`` (another resource's output may be passed),
  any other field is plain; ``T | None``: ``T`` (a field with a default is optional);
- ``Literal["a", "b"]`` (text): an enumeration, named by its class and field
  (``MetricGoal``, ``SchedulingStrategy``), whose members are the literals; ``Path``:
  ``str``;
- a resource or its name (``pulumi.Resource | pulumi.Input[str]``): the name;
- ``Sequence[T]``: ``list[T]``; ``Mapping[K, V]``: ``dict[str, V]`` (schema keys are
  strings);
- a union of dataclasses (a parameter, an early-stopping rule): one object with every
  member's fields and ``type``, the class name, as in stack YAML;
- any other union (``str | Literal[False]``, ``ImageBuild | str``) and ``Any``: any value.

The generated classes keep the dataclass's module and name, so the schema's
descriptions are the Args' own docstrings.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import os
import re
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, TypedDict

import pulumi

from vertex_training._checks import accepts_unknown, alternatives, arguments, field_types
from vertex_training._pulumi_internals import docstring_reader
from vertex_training.jobs.body import camel
from vertex_training.jobs.yaml_reader import UNION_KEY, required

__all__ = [
    "args_type",
    "inherited_descriptions",
    "markdown",
    "output_type",
    "schema_type",
    "yaml_spelling",
]


def _options(hint: object) -> tuple[list[object], bool]:
    """(the options of ``hint``, an annotation of ``field_types``, whether None is one):
    ``pulumi.Input[T]`` is ``T``, and a path is text."""
    unique = list(dict.fromkeys(str if _is_path(o) else o for o in alternatives(hint)))
    # A Python object behind a protocol (a job's ``JobCapacity``) does not cross into
    # another language: there its id, the other option, is what is given.
    unique = [o for o in unique if not getattr(o, "_is_protocol", False)]
    # A resource or its name (a deployment's model): the name, from the resource's output.
    named = [o for o in unique if not (isinstance(o, type) and issubclass(o, pulumi.Resource))]
    unique = named if str in named else unique
    return [o for o in unique if o is not type(None)], type(None) in unique


def _is_path(hint: object) -> bool:
    return isinstance(hint, type) and issubclass(hint, os.PathLike | Path)


def _is_record(hint: object) -> bool:
    return isinstance(hint, type) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint))


def schema_type(hint: object, name: str = "") -> tuple[object, bool]:
    """(the schema's spelling of the annotation ``hint``, whether it may be absent);
    ``name`` names an enumeration of its literals (``MetricGoal``)."""
    spelt, optional = _plain_type(hint, name)
    if accepts_unknown(hint) and spelt is not Any:
        return pulumi.Input[spelt], optional  # type: ignore[misc, valid-type]
    return spelt, optional


def _plain_type(hint: object, name: str) -> tuple[object, bool]:
    options, optional = _options(hint)
    if len(options) > 1:
        if all(_is_record(o) for o in options):
            return _union_type(tuple(options)), optional  # type: ignore[arg-type]
        return Any, optional
    (option,) = options or [Any]
    origin = typing.get_origin(option)
    if option is Any or option is object:
        return Any, optional
    if origin is Literal:
        values = typing.get_args(option)
        if all(isinstance(v, str) for v in values):
            return _enum_type(name, values), optional
        kinds = {type(v) for v in values}
        return (kinds.pop() if len(kinds) == 1 else Any), optional
    if origin is pulumi.Output:
        return schema_type(typing.get_args(option)[0], name)[0], optional
    if origin in (Sequence, list, tuple):
        return list[schema_type(typing.get_args(option)[0], name)[0]], optional  # type: ignore[misc]
    if origin in (Mapping, dict):
        return dict[str, schema_type(typing.get_args(option)[1], name)[0]], optional  # type: ignore[misc]
    if option in (str, int, float, bool):
        return option, optional
    if _is_path(option):
        return str, optional
    if _is_record(option):
        return _record_type(option), optional  # type: ignore[arg-type]
    if isinstance(option, type) and issubclass(option, enum.Enum):
        return option, optional
    raise TypeError(f"no schema spelling for {option!r}")


_ENUMS: dict[str, type[enum.Enum]] = {}


def _enum_type(name: str, values: tuple[str, ...]) -> type[enum.Enum]:
    """The enumeration ``name`` of ``values``: each member named in PascalCase
    (``reverse_log``: ``ReverseLog``, ``SPOT``: ``Spot``), its value the literal."""
    if name not in _ENUMS:
        words: Any = enum.Enum(name, {_pascal(v): v for v in values}, module=__name__)  # type: ignore[misc]
        words.__doc__ = "One of " + ", ".join(f"`{v}`" for v in values) + "."
        _ENUMS[name] = words
    found = _ENUMS[name]
    if tuple(m.value for m in found) != values:
        raise TypeError(f"two enumerations are named {name}: {values} and {list(found)}")
    return found


def _pascal(word: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_\W]+", word) if part)


def markdown(text: str) -> str:
    """A docstring as the schema's Markdown: reStructuredText's double backticks as
    single ones, and the lines of a paragraph joined (docstrings wrap at 88 columns)."""
    text = re.sub(r"``(.+?)``", r"`\1`", text, flags=re.DOTALL)
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _hints(cls: type) -> dict[str, tuple[object, bool]]:
    """``cls``'s fields: name -> (annotation, whether it has a default)."""
    if typing.is_typeddict(cls):
        hints = typing.get_type_hints(cls)
        optional: frozenset[str] = getattr(cls, "__optional_keys__", frozenset())
        return {name: (hints[name], name in optional) for name in hints}
    types_of = field_types(cls)
    return {f.name: (types_of[f.name], not required(f)) for f in arguments(cls)}


def _typed_dict(name: str, home: type | None) -> Any:
    """An empty ``TypedDict`` named ``name`` (filled in by the caller: types refer to
    themselves), placed where ``home`` is defined so that its docstrings are found."""
    made: Any = TypedDict(name, {})  # type: ignore[misc]
    if home is not None:
        made.__module__ = home.__module__
        made.__qualname__ = home.__qualname__
        made.__doc__ = home.__doc__
    return made


def _fill(made: Any, fields: Mapping[str, tuple[object, bool]]) -> Any:
    annotations = {
        name: NotRequired[hint] if optional else Required[hint]
        for name, (hint, optional) in fields.items()
    }
    made.__annotations__ = annotations
    made.__required_keys__ = frozenset(n for n, (_, o) in fields.items() if not o)
    made.__optional_keys__ = frozenset(n for n, (_, o) in fields.items() if o)
    return made


_MADE: dict[object, Any] = {}
_MEMBERS: dict[Any, dict[str, type]] = {}
"""A union's type -> its members by class name."""
_BUILDING: set[Any] = set()


def _record_type(cls: type, skip: frozenset[str] = frozenset()) -> Any:
    key = (cls, skip)
    if key in _MADE:
        return _MADE[key]
    made = _MADE[key] = _typed_dict(cls.__name__, cls)
    fields: dict[str, tuple[object, bool]] = {}
    owner = cls.__name__.removesuffix("Args")
    for name, (hint, has_default) in _hints(cls).items():
        if name in skip:
            continue
        spelt, optional = schema_type(hint, owner + _pascal(name))
        fields[name] = (spelt, has_default or optional)
    return _fill(made, fields)


def _union_type(members: tuple[type, ...]) -> Any:
    """One object type for a union of dataclasses: ``type`` (which member, by class name)
    and every member's fields, each optional (the member named by ``type`` says which it
    needs); a field two members type differently is any value."""
    if members in _MADE:
        made = _MADE[members]
        # Within its own fields (a parameter's conditional children), by name: Pulumi's
        # analyzer follows a type to itself only through a forward reference.
        return typing.ForwardRef(made.__name__) if made in _BUILDING else made
    names = [m.__name__ for m in members]
    # The members' shared ending names the union: DoubleParameter ... -> Parameter.
    suffix = os.path.commonprefix([n[::-1] for n in names])[::-1]  # noqa: RUF071
    made = _MADE[members] = _typed_dict(suffix or "Or".join(names), None)
    made.__doc__ = f"One of {', '.join(names)}, named by `{UNION_KEY}`."
    _MEMBERS[made] = {m.__name__: m for m in members}
    _BUILDING.add(made)
    fields: dict[str, tuple[object, bool]] = {UNION_KEY: (str, False)}
    for member in members:
        for name, (hint, _) in _hints(member).items():
            spelt = schema_type(hint, made.__name__ + _pascal(name))[0]
            if name in fields and fields[name][0] != spelt:
                spelt = Any
            fields[name] = (spelt, True)
    _BUILDING.discard(made)
    return _fill(made, fields)


@functools.cache
def inherited_descriptions() -> dict[str, dict[str, str]]:
    """What Pulumi's analyzer cannot see: the docstrings of the fields a record type's
    class inherits (it reads the class's own body), by type name and property, read as
    it reads them, from the base class that declares each field."""
    reader = docstring_reader("inherited")
    found: dict[str, dict[str, str]] = {}
    for key, made in _MADE.items():
        if not (isinstance(key, tuple) and isinstance(key[0], type)):
            continue  # a union's members: their own classes'
        cls = key[0]
        for name in _hints(cls):
            owner = next(c for c in cls.__mro__ if name in inspect.get_annotations(c))
            if owner is not cls and (doc := reader.get_docstring(owner, name)):
                found.setdefault(made.__name__, {})[camel(name)] = doc
    return found


def args_type(cls: type, skip: frozenset[str] = frozenset()) -> Any:
    """The ``TypedDict`` of the Args dataclass ``cls`` (without the fields ``skip``)."""
    return _record_type(cls, skip)


def output_type(hint: object) -> Any:
    """``pulumi.Output`` of the schema's spelling of ``hint`` (a component's output)."""
    return pulumi.Output[schema_type(hint)[0]]  # type: ignore[misc]


def yaml_spelling(value: Any, hint: object) -> Any:
    """``value``, received for the schema type ``hint`` with Python's field names
    (the provider maps the schema's camelCase back), with stack YAML's camelCase names:
    what the stack config reader takes. Keys of a plain mapping stay as they are."""
    if isinstance(value, enum.Enum):
        return value.value
    options, _ = _options(hint)
    option = options[0] if options else Any
    origin = typing.get_origin(option)
    if isinstance(value, Mapping) and option in _MEMBERS:
        member = _MEMBERS[option].get(str(value.get(UNION_KEY)))
        option = _record_type(member) if member is not None else option
    if isinstance(option, typing.ForwardRef):
        option = next(m for m in _MEMBERS if m.__name__ == option.__forward_arg__)
    if isinstance(value, Mapping) and typing.is_typeddict(option):
        fields = {name: typing.get_args(hint)[0] for name, hint in option.__annotations__.items()}
        fields.setdefault(UNION_KEY, str)
        return {
            (camel(k) if k in fields else k): yaml_spelling(v, fields.get(k, Any))
            for k, v in value.items()
        }
    if isinstance(value, Mapping) and origin is dict:
        inner = typing.get_args(option)[1]
        return {k: yaml_spelling(v, inner) for k, v in value.items()}
    if isinstance(value, list) and origin is list:
        inner = typing.get_args(option)[0]
        return [yaml_spelling(v, inner) for v in value]
    if option is int and isinstance(value, float) and value.is_integer():
        return int(value)  # numbers cross the engine as floats
    return value
