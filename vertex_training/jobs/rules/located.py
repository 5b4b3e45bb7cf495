"""The one rule for a resource name that carries its location (``projects/P/locations/L/``):
well formed, and in the region of what uses it. Plain Python: the job rules and the platform
rules use it (a job's CMEK key, TensorBoard and experiment; the platform's key and
TensorBoard)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Located:
    """A kind of resource name under ``projects/P/locations/L/``."""

    what: str
    """What it names, with its article, for messages (``a Cloud KMS key``)."""
    tail: str
    """The name after the location, as a pattern (named groups where a rule reads one)."""
    shape: str
    """The tail as a message shows it (``keyRings/K/cryptoKeys/C``)."""
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
        match = self.match(name)
        if match is None:
            return f"{name!r} is not {self.what} name", valid
        if region is not None and match["location"] != region:
            where = f"is in {match['location']}, not in the region {region}"
            return f"{name!r} {where} ({self.why})", valid
        return None


_KEY_ID = "[A-Za-z0-9_-]+"
KMS_KEY = Located(
    "a Cloud KMS key",
    f"keyRings/{_KEY_ID}/cryptoKeys/{_KEY_ID}",
    "keyRings/K/cryptoKeys/C",
    "CMEK keys must be in the region of what they encrypt",
)
TENSORBOARD = Located(
    "a TensorBoard",
    "tensorboards/[^/]+",
    "tensorboards/ID",
    "jobs stream only to a TensorBoard in their own region",
)
_CONTEXT = "metadataStores/(?P<store>[^/]+)/contexts/(?P<context>[^/]+)"
_RUNS = "jobs log only to an experiment in their own region"
EXPERIMENT = Located("an experiment", _CONTEXT, "metadataStores/default/contexts/NAME", _RUNS)
EXPERIMENT_RUN = Located(
    "an experiment run", _CONTEXT, "metadataStores/default/contexts/EXPERIMENT-RUN", _RUNS
)

__all__ = ["EXPERIMENT", "EXPERIMENT_RUN", "KMS_KEY", "TENSORBOARD", "Located"]
