"""What the local backend does with each field of a job body, by the real protos' fields.

``LOCAL_SUPPORT`` (the table ``local_support.json``: support -> why -> fields) classifies
every field of ``CustomJob`` and ``HyperparameterTuningJob`` the local backend can meet, by
its proto name (``<Message>.<field>``) in ``google.cloud.aiplatform.v1``; a field inside a
refused or ignored one is never met:

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

from google.cloud.aiplatform_v1 import AcceleratorType
from google.protobuf.message import Message

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


LOCAL_SUPPORT: Mapping[str, FieldSupport] = {
    name: FieldSupport(Support(support), why)
    for support, reasons in json.loads(
        Path(__file__).with_name("local_support.json").read_text(encoding="utf-8")
    ).items()
    for why, names in reasons.items()
    for name in names
}
"""How the local backend treats each field (see the module docstring)."""
_SAID = {
    Support.APPROXIMATED: "{path} ({why})",
    Support.IGNORED: "{path}",
    Support.REFUSED: "{path}: {why}; it runs on Vertex only",
}
"""How a field the body sets is listed, by its support (an honoured one is not)."""


def _walk(message: Message, path: str, found: dict[Support, list[str]]) -> None:
    """Classify every field ``message`` sets, down through the fields the backend runs."""
    for descriptor, value in message.ListFields():
        field_path = f"{path}.{descriptor.json_name}" if path else descriptor.json_name
        owner = descriptor.containing_type.full_name.removeprefix("google.cloud.aiplatform.v1.")
        support = LOCAL_SUPPORT.get(f"{owner}.{descriptor.name}")
        if support is None:
            found[Support.REFUSED].append(
                f"{field_path}: the local backend does not know this field yet"
            )
            continue
        if support.support in _SAID:
            said = _SAID[support.support].format(path=field_path, why=support.why)
            found[support.support].append(said)
        if support.support in (Support.REFUSED, Support.IGNORED):
            continue  # nothing inside it is met
        if descriptor.full_name == "google.cloud.aiplatform.v1.MachineSpec.accelerator_type":
            name = AcceleratorType(value).name
            if name.startswith("TPU"):
                found[Support.REFUSED].append(
                    f"{field_path}: {name} is a TPU; TPUs exist on Google Cloud only; "
                    "it runs on Vertex only"
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
            _walk(item, f"{field_path}[{i}]" if repeated else field_path, found)


def _found(message: JobMessage) -> dict[Support, list[str]]:
    """What ``message`` sets that is refused, ignored or approximated here, by support."""
    found: dict[Support, list[str]] = {support: [] for support in Support}
    _walk(type(message).pb(message), "", found)
    return found


def local_refusals(message: JobMessage) -> list[str]:
    """What in a job only Vertex has, each naming its API path (empty: this machine can
    run it). The provider's ``check`` reports these at preview."""
    return _found(message)[Support.REFUSED]


def check_local_support(message: JobMessage) -> None:
    """Refuse a job that needs what only Vertex has; log what is ignored or approximated."""
    found = _found(message)
    if refused := found[Support.REFUSED]:
        raise JobRefusedError("the local backend cannot run this job: " + "; ".join(refused))
    if ignored := found[Support.IGNORED]:
        _log.info(
            "the local backend ignores what only matters on Google Cloud: %s", ", ".join(ignored)
        )
    if approximated := found[Support.APPROXIMATED]:
        _log.info("the local backend approximates: %s", "; ".join(approximated))


__all__ = ["LOCAL_SUPPORT", "FieldSupport", "Support", "check_local_support", "local_refusals"]
