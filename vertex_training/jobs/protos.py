"""A job body through the real ``aiplatform_v1`` protos: the schema is Vertex's own.

Loaded only where a body meets the service (the dynamic provider's ``check``, the Vertex
backend): ``google.cloud.aiplatform_v1`` costs about a second to import, which program
evaluation must not pay.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, TypeVar

from google.cloud import aiplatform_v1 as v1
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from vertex_training.findings import Finding
from vertex_training.jobs.records import JobKind

JobMessage = v1.CustomJob | v1.HyperparameterTuningJob


class BodyParseError(ValueError):
    """The body is not a valid message of its kind: ``finding`` names the field."""

    def __init__(self, kind: str, finding: Finding) -> None:
        super().__init__(f"not a valid {kind} body: {finding}")
        self.finding = finding


M = TypeVar("M")


def parse_message(cls: type[M], body: Mapping[str, Any]) -> M:
    """A REST body as the proto-plus message ``cls`` (any Vertex message); unknown fields
    and wrong types raise ``BodyParseError``, which names the field."""
    message = cls()
    pb = cls.pb(message)  # type: ignore[attr-defined]
    try:
        json_format.ParseDict(dict(body), pb, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        # Found again by walking the body against the message's descriptor: protobuf's
        # error keeps the field only in its text, which is not parsed.
        finding = refused_field(pb.DESCRIPTOR, body, "") or Finding("", str(error))
        raise BodyParseError(cls.__name__, finding) from error
    return message


def parse_body(kind: JobKind, body: Mapping[str, Any]) -> JobMessage:
    """The job body as its proto-plus message; unknown fields and wrong types are refused."""
    cls: type[JobMessage] = (
        v1.CustomJob if kind is JobKind.CUSTOM_JOB else v1.HyperparameterTuningJob
    )
    return parse_message(cls, body)


_JSON_FORM = {
    "google.protobuf.Duration": "a duration in seconds ('600s', '0.5s')",
    "google.protobuf.Timestamp": "an RFC 3339 timestamp ('2024-01-31T12:00:00Z')",
    "google.protobuf.FieldMask": "field paths joined by ','",
}
_SCALAR = {
    FieldDescriptor.CPPTYPE_INT32: "an integer",
    FieldDescriptor.CPPTYPE_INT64: "an integer",
    FieldDescriptor.CPPTYPE_UINT32: "a non-negative integer",
    FieldDescriptor.CPPTYPE_UINT64: "a non-negative integer",
    FieldDescriptor.CPPTYPE_DOUBLE: "a number",
    FieldDescriptor.CPPTYPE_FLOAT: "a number",
    FieldDescriptor.CPPTYPE_BOOL: "true or false",
    FieldDescriptor.CPPTYPE_STRING: "text",
}


def refused_field(descriptor: Descriptor, body: Any, path: str = "") -> Finding | None:
    """The first field of ``body`` (a JSON object meant as ``descriptor``) that the message
    has not, or that cannot take its value, at its API path; None where the walk finds
    nothing (the caller shows protobuf's own text)."""
    if not isinstance(body, Mapping):
        return None
    fields = {
        **{f.name: f for f in descriptor.fields},
        **{f.json_name: f for f in descriptor.fields},
    }
    for key, value in body.items():
        at = f"{path}.{key}" if path else str(key)
        field = fields.get(key)
        if field is None:
            valid = sorted(f.json_name for f in descriptor.fields)
            guess = difflib.get_close_matches(str(key), valid, n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            message = f"{descriptor.name} has no field {key!r}{hint}"
            return Finding(at, message, valid=", ".join(valid))
        nested = field.message_type
        walked = (
            nested is not None
            and not nested.GetOptions().map_entry
            and not nested.full_name.startswith("google.protobuf.")
        )
        if walked and field.is_repeated:
            if not isinstance(value, list):
                return _wrong_value(field, value, at)
            for index, item in enumerate(value):
                if found := refused_field(nested, item, f"{at}[{index}]"):
                    return found
        elif walked and isinstance(value, Mapping):
            if found := refused_field(nested, value, at):
                return found
        elif not _takes(descriptor, key, value):
            return _wrong_value(field, value, at)
    return None


def _takes(descriptor: Descriptor, key: str, value: Any) -> bool:
    """Whether the message ``descriptor`` takes ``value`` for its field ``key`` alone."""
    alone = message_factory.GetMessageClass(descriptor)()
    try:
        json_format.ParseDict({key: value}, alone, ignore_unknown_fields=False)
    except json_format.ParseError:
        return False
    return True


def _wrong_value(field: FieldDescriptor, value: Any, at: str) -> Finding:
    """``value`` is not of ``field``'s type: what the field takes."""
    nested = field.message_type
    valid = ", ".join(v.name for v in field.enum_type.values) if field.enum_type else ""
    if nested is not None and nested.GetOptions().map_entry:
        entry = nested.fields_by_name["value"]
        valid = ", ".join(v.name for v in entry.enum_type.values) if entry.enum_type else ""
        expected = f"a mapping, each value {_expected(entry)}"
    elif field.is_repeated:
        expected = f"a list, each {_expected(field)}"
    else:
        expected = _expected(field)
    return Finding(at, f"{value!r} is not {expected}", valid=valid)


def _expected(field: FieldDescriptor) -> str:
    """What one value of ``field`` is, in its JSON form."""
    if field.enum_type is not None:
        return f"a {field.enum_type.name} name"
    if field.message_type is not None:
        name = field.message_type.full_name
        return _JSON_FORM.get(name, f"a {field.message_type.name} in its JSON form")
    return _SCALAR.get(field.cpp_type, "bytes in base64")


__all__ = ["BodyParseError", "JobMessage", "parse_body", "parse_message", "refused_field"]
