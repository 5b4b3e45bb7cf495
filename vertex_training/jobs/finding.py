"""A problem found in a job body: what every rule returns, whatever layer checks it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem with a job body, located by its API field path."""

    path: str
    """API field path, e.g. ``jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount``."""
    message: str
    """What is wrong and what would be valid."""
    severity: Severity
    """``"error"``: the catalog knows it is wrong; ``"warning"``: it cannot tell."""
    check: str = ""
    """The check and its subject, e.g. ``accelerator-region:NVIDIA_B200@europe-west4``: a
    stack lists it under ``acknowledgedHardwareChecks`` to turn this one error into a
    warning. An error's message ends in it so that a user can copy it."""

    def __post_init__(self) -> None:
        suffix = f" (check {self.check})"
        if self.check and self.severity == "error" and suffix not in self.message:
            # Frozen: the message is completed once, here, for every way a Finding is made.
            object.__setattr__(self, "message", self.message + suffix)


__all__ = ["Finding", "Severity"]
