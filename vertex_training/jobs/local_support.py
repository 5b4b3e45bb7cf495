"""What a local backend does with each field of a body, by the real protos' fields.

A support table (``support_table``: a JSON file support -> why -> fields) classifies every
field a local backend can meet, by its proto name (``<Message>.<field>``) in
``google.cloud.aiplatform.v1``; a field inside a refused or ignored one is never met.
``LOCAL_SUPPORT`` (``local_support.json``) is the jobs' (``CustomJob`` and
``HyperparameterTuningJob``); the local serving twin has its own, read the same way:

- HONOURED: run as Vertex runs it (see ``environment`` for the replica environment).
- APPROXIMATED: run, but not exactly as Vertex would (the reason is logged once). An unset
  ``studySpec.algorithm`` is Vertex's Bayesian search, Optuna's TPE here.
- IGNORED: only matters on Google Cloud (networking, identity, encryption, VM
  provisioning) or is output only; one info line lists the ones a body sets.
- REFUSED: the job needs what this machine cannot give it; refused before any process
  starts, naming the field and saying it runs on Vertex only.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import proto
from google.cloud.aiplatform_v1 import AcceleratorType
from google.protobuf.message import Message

from vertex_training.findings import Finding
from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.protos import JobMessage

_log = logging.getLogger(__name__)


class Support(enum.Enum):
    HONOURED = "honoured"
    APPROXIMATED = "approximated"
    IGNORED = "ignored"
    REFUSED = "refused"


class FieldSupport(NamedTuple):
    support: Support
    why: str = ""


SupportTable = Mapping[str, FieldSupport]


def support_table(path: Path) -> SupportTable:
    """The table in ``path`` (support -> why -> proto field names), by field."""
    return {
        name: FieldSupport(Support(support), why)
        for support, reasons in json.loads(path.read_text(encoding="utf-8")).items()
        for why, names in reasons.items()
        for name in names
    }


LOCAL_SUPPORT = support_table(Path(__file__).with_name("local_support.json"))
"""How the local job backend treats each field (see the module docstring)."""
_SAID = {
    Support.APPROXIMATED: lambda support: support.why,
    Support.IGNORED: lambda support: "only matters on Google Cloud",
    Support.REFUSED: lambda support: f"{support.why}; it runs on Vertex only",
}
"""What is said of a field the body sets, by its support (nothing of an honoured one)."""


def _walk(
    message: Message, path: str, table: SupportTable, found: dict[Support, list[Finding]]
) -> None:
    """Classify every field ``message`` sets, down through the fields the backend runs."""
    for descriptor, value in message.ListFields():
        field_path = f"{path}.{descriptor.json_name}" if path else descriptor.json_name
        owner = descriptor.containing_type.full_name.removeprefix("google.cloud.aiplatform.v1.")
        support = table.get(f"{owner}.{descriptor.name}")
        if support is None:
            found[Support.REFUSED].append(
                Finding(field_path, "the local backend does not know this field yet")
            )
            continue
        if support.support in _SAID:
            found[support.support].append(Finding(field_path, _SAID[support.support](support)))
        if support.support in (Support.REFUSED, Support.IGNORED):
            continue  # nothing inside it is met
        if descriptor.full_name == "google.cloud.aiplatform.v1.MachineSpec.accelerator_type":
            name = AcceleratorType(value).name
            if name.startswith("TPU"):
                found[Support.REFUSED].append(
                    Finding(
                        field_path,
                        f"{name} is a TPU; TPUs exist on Google Cloud only; it runs on Vertex only",
                    )
                )
        nested = descriptor.message_type
        if (
            nested is None
            or nested.GetOptions().map_entry
            or not nested.full_name.startswith("google.cloud.aiplatform.")
        ):
            continue  # a scalar, a map (labels), or a well-known type (Duration)
        repeated = descriptor.label == descriptor.LABEL_REPEATED
        for i, item in enumerate(value if repeated else [value]):
            _walk(item, f"{field_path}[{i}]" if repeated else field_path, table, found)


def classify(message: proto.Message, table: SupportTable) -> dict[Support, list[Finding]]:
    """What ``message`` sets that is refused, ignored or approximated here, by support."""
    found: dict[Support, list[Finding]] = {support: [] for support in Support}
    _walk(type(message).pb(message), "", table, found)
    return found


def local_refusals(message: proto.Message, table: SupportTable = LOCAL_SUPPORT) -> list[Finding]:
    """What in a body only Vertex has, at its API path (empty: this machine can run it).
    The providers' ``check`` reports these at preview."""
    return classify(message, table)[Support.REFUSED]


def check_local_support(message: JobMessage) -> None:
    """Refuse a job that needs what only Vertex has; log what is ignored or approximated."""
    found = classify(message, LOCAL_SUPPORT)
    if refused := found[Support.REFUSED]:
        raise JobRefusedError(
            "the local backend cannot run this job: " + "; ".join(map(str, refused))
        )
    if ignored := found[Support.IGNORED]:
        _log.info(
            "the local backend ignores what only matters on Google Cloud: %s",
            ", ".join(f.path for f in ignored),
        )
    if approximated := found[Support.APPROXIMATED]:
        _log.info("the local backend approximates: %s", "; ".join(map(str, approximated)))


__all__ = [
    "LOCAL_SUPPORT",
    "FieldSupport",
    "Support",
    "SupportTable",
    "check_local_support",
    "classify",
    "local_refusals",
    "support_table",
]
