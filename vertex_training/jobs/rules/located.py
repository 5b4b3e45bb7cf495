"""The one rule for a resource name that carries its location (``projects/P/locations/L/``):
well formed, and in the region of what uses it."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Located:
    """A kind of resource name: ``projects/P/locations/L/``, then ``tail``."""

    what: str
    """What it names, with its article (``a Cloud KMS key``)."""
    tail: str
    """A pattern, with named groups where a rule reads one."""
    shape: str
    """The tail as messages show it (``keyRings/K/cryptoKeys/C``)."""
    why: str
    """Why it must be in the region of what uses it."""

    def match(self, name: str) -> re.Match[str] | None:
        return re.match(rf"^projects/[^/]+/locations/(?P<location>[a-z0-9-]+)/{self.tail}$", name)

    def problem(self, name: str | None, region: str | None) -> tuple[str, str] | None:
        """(what is wrong, what would be valid) with ``name``, or None (as for no name);
        ``region`` None: not known, any."""
        if name is None:
            return None
        valid = f"projects/P/locations/{region or 'L'}/{self.shape}"
        if (match := self.match(name)) is None:
            return f"{name!r} is not {self.what} name", valid
        if region is not None and match["location"] != region:
            return (
                f"{name!r} is in {match['location']}, not in the region {region} ({self.why})",
                valid,
            )
        return None


_ID = "[A-Za-z0-9_-]+"
_CONTEXT = "metadataStores/(?P<store>[^/]+)/contexts/(?P<context>[^/]+)"
_CONTEXTS = "metadataStores/default/contexts"
_RUNS = "jobs log only to an experiment in their own region"
KMS_KEY = Located(
    "a Cloud KMS key",
    f"keyRings/{_ID}/cryptoKeys/{_ID}",
    "keyRings/K/cryptoKeys/C",
    "CMEK keys must be in the region of what they encrypt",
)
_STREAM = "jobs stream only to a TensorBoard in their own region"
TENSORBOARD = Located("a TensorBoard", "tensorboards/[^/]+", "tensorboards/ID", _STREAM)
EXPERIMENT = Located("an experiment", _CONTEXT, f"{_CONTEXTS}/NAME", _RUNS)
EXPERIMENT_RUN = Located("an experiment run", _CONTEXT, f"{_CONTEXTS}/EXPERIMENT-RUN", _RUNS)

__all__ = ["EXPERIMENT", "EXPERIMENT_RUN", "KMS_KEY", "TENSORBOARD", "Located"]
