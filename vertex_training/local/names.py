"""What the local Vertex's services share: the resource names (one project and region, as
on a regional endpoint of Vertex), label filters and pages, and the refusal of what only
Vertex has."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from vertex_training.local.wire import ServiceError

T = TypeVar("T")
_FILTER_TERM = re.compile(r'^labels\.([A-Za-z0-9_-]+)\s*=\s*"?([^"]*)"?$')


@dataclass(frozen=True)
class Names:
    project: str
    location: str

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    def name(self, collection: str, resource_id: str) -> str:
        return f"{self.parent}/{collection}/{resource_id}"

    def check_parent(self, parent: str, field: str = "parent") -> None:
        """A name under another project or region is refused as Vertex refuses it: the
        project is not this caller's, the region not this endpoint's."""
        parts = parent.split("/")
        if len(parts) < 4 or parts[0] != "projects" or parts[2] != "locations":
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{field}: {parent!r} is not a location; valid: {self.parent}",
            )
        if parts[1] != self.project:
            raise ServiceError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{field}: project {parts[1]!r} is not served here; valid: {self.project}",
            )
        if parts[3] != self.location:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{field}: location {parts[3]!r} is not this endpoint's; valid: {self.location}",
            )

    def resource_id(self, name: str, collection: str, field: str = "name") -> str:
        """The id in ``projects/P/locations/L/<collection>/<id>`` (a model's may carry
        ``@version``)."""
        self.check_parent(name, field)
        prefix = f"{self.parent}/{collection}/"
        rest = name[len(prefix) :] if name.startswith(prefix) else ""
        if not rest or "/" in rest:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{field}: {name!r} is not a {collection} name; valid: {prefix}<id>",
            )
        return rest


def parse_label_filter(text: str) -> dict[str, str]:
    """The labels a list filter asks for (``labels.k="v" AND ...``, AIP-160); any other
    filter is refused rather than ignored."""
    labels: dict[str, str] = {}
    for term in filter(None, (t.strip() for t in re.split(r"\s+AND\s+", text.strip()))):
        match = _FILTER_TERM.match(term)
        if match is None:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f'filter: {term!r} is not supported here; valid: labels.KEY="VALUE" terms '
                "joined by AND",
            )
        labels[match[1]] = match[2]
    return labels


def page(items: Sequence[T], size: int, token: str) -> tuple[Sequence[T], str]:
    """One page of ``items`` from ``token`` (an offset) and the next page's token."""
    try:
        start = int(token or 0)
    except ValueError:
        raise ServiceError(
            grpc.StatusCode.INVALID_ARGUMENT, f"page_token: {token!r} is not a token of this list"
        ) from None
    end = start + size if size > 0 else len(items)
    return items[start:end], str(end) if end < len(items) else ""


def runs_here(message: Any, field: str, table: Any = None) -> None:
    """Refuse what only Vertex has in ``message`` (the request's ``field``), by the table
    the providers' preview reads too (a job's when ``table`` is None)."""
    from vertex_training.jobs.local_support import LOCAL_SUPPORT, local_refusals

    if refused := local_refusals(message, table or LOCAL_SUPPORT):
        raise ServiceError(
            grpc.StatusCode.UNIMPLEMENTED, "; ".join(f"{field}.{f}" for f in refused)
        )
