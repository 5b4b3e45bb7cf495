"""A recorded Google REST API for the catalog refresh tools: a ``Fetch`` that answers each
GET from the exchanges of a fixture instead of the network."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Replay:
    """The recorded exchanges, by URL and page token; what was asked is kept."""

    def __init__(self, recorded: Mapping[str, Any]) -> None:
        self.recorded = recorded
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, params: Mapping[str, str]) -> Mapping[str, Any]:
        self.asked.append((url, dict(params)))
        for exchange in self.recorded["exchanges"]:
            if exchange["url"] == url and exchange["pageToken"] == params.get("pageToken", ""):
                response: Mapping[str, Any] = exchange["response"]
                return response
        raise AssertionError(f"no recorded response for {url} {params}")
