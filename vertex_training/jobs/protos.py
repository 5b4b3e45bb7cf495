"""A job body through the real ``aiplatform_v1`` protos: the schema is Vertex's own.

Loaded only where a body meets the service (the dynamic provider's ``check``, the Vertex
backend): ``google.cloud.aiplatform_v1`` costs about a second to import, which program
evaluation must not pay.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from google.cloud import aiplatform_v1 as v1
from google.protobuf import descriptor_pool, json_format

from vertex_training.jobs.records import JobKind

JobMessage = v1.CustomJob | v1.HyperparameterTuningJob


class BodyParseError(ValueError):
    """The body is not a valid message of its kind; the text names the field."""


M = TypeVar("M")


def parse_message(cls: type[M], body: Mapping[str, Any]) -> M:
    """A REST body as the proto-plus message ``cls`` (any Vertex message); unknown fields
    and wrong types raise ``BodyParseError``, which names the field."""
    message = cls()
    try:
        json_format.ParseDict(dict(body), cls.pb(message), ignore_unknown_fields=False)  # type: ignore[attr-defined]
    except json_format.ParseError as error:
        raise BodyParseError(f"not a valid {cls.__name__} body: {_explain(error)}") from error
    return message


def parse_body(kind: JobKind, body: Mapping[str, Any]) -> JobMessage:
    """The job body as its proto-plus message; unknown fields and wrong types are refused."""
    cls: type[JobMessage] = (
        v1.CustomJob if kind is JobKind.CUSTOM_JOB else v1.HyperparameterTuningJob
    )
    return parse_message(cls, body)


_NESTING = re.compile(r"Failed to parse \w+ field: ")
_UNKNOWN_FIELD = re.compile(r'Message type "([\w.]+)" has no field named "(\w+)" at "([^"]*)"')


def _explain(error: json_format.ParseError) -> str:
    """protobuf's message without its nesting chatter, plus what the field may have been
    meant to be ('... has no field named "x" at "CustomJob.jobSpec"')."""
    text = _NESTING.sub("", str(error).splitlines()[0])
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown is None:
        return text
    type_name, field, where = unknown.groups()
    descriptor = descriptor_pool.Default().FindMessageTypeByName(type_name)
    valid = sorted(f.json_name for f in descriptor.fields)
    guess = difflib.get_close_matches(field, valid, n=1)
    hint = f"did you mean {guess[0]!r}? " if guess else ""
    path = f"{where.split('.', 1)[1]}.{field}" if "." in where else field
    return (
        f"{path}: {type_name.rsplit('.', 1)[-1]} has no field {field!r}; "
        f"{hint}valid: {', '.join(valid)}"
    )


def body_of(message: JobMessage) -> dict[str, Any]:
    """The REST JSON of a message, as the API reference spells it."""
    return json_format.MessageToDict(type(message).pb(message))


def canonical_json(kind: JobKind, body: Mapping[str, Any]) -> str:
    """One text per meaning: numbers that crossed the engine as floats (2.0), keys in either
    spelling and any key order all give the same text."""
    return json.dumps(body_of(parse_body(kind, body)), sort_keys=True)


__all__ = ["BodyParseError", "JobMessage", "body_of", "canonical_json", "parse_body"]
