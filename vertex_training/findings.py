"""The one problem type: what every rule returns (jobs, models, endpoints, the platform,
a stack file), carried as a value to the surface that shows it (the Python exception, a
stack key, a provider's ``CheckFailure``, the policy pack, another language's error),
which renders it there. No surface parses a rendered finding back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem, located by its API field path (and, once a surface knows it, by the
    caller's own path)."""

    path: str
    """API field path, e.g. ``jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount``
    (for a platform setting: its ``TrainingPlatformArgs`` field, e.g. ``workbench.zone``)."""
    message: str
    """What is wrong (and, where ``valid`` is empty, what would be valid)."""
    severity: Severity = "error"
    """``"error"``: known wrong; ``"warning"``: the catalog cannot tell."""
    check: str = ""
    """The check and its subject, e.g. ``accelerator-region:NVIDIA_B200@europe-west4``: a
    stack lists it under ``acknowledgedHardwareChecks`` to turn this one error into a
    warning. An error's message ends in it so that a user can copy it."""
    valid: str = ""
    """What would be valid, where the message does not say it itself."""
    caller: str = ""
    """The caller's own path (``chief.accelerator.count``, a stack key, a component
    property), set by the surface that knows the caller; ``""`` until then."""

    def __post_init__(self) -> None:
        suffix = f" (check {self.check})"
        if self.check and self.severity == "error" and suffix not in self.message:
            # Frozen: the message is completed once, here, for every way a Finding is made.
            object.__setattr__(self, "message", self.message + suffix)

    def at(self, caller: str) -> Finding:
        """This finding at the caller's path ``caller``."""
        return Finding(self.path, self.message, self.severity, self.check, self.valid, caller)

    def __str__(self) -> str:
        where = self.caller or self.path
        valid = f"; valid: {self.valid}" if self.valid else ""
        return f"{where}: {self.message}{valid}" if where else f"{self.message}{valid}"


INT32_MAX = 2**31 - 1
"""The most an int32 field of the protos (a replica count, an accelerator count) holds."""


def beyond(path: str, count: int, most: int) -> Finding:
    """``count`` at ``path``, more than its proto field holds (``most``: an int32's or an
    int64's largest); a number of thousands of digits is said by its length."""
    digits = len(str(count))
    shown = str(count) if digits <= 20 else f"a number of {digits} digits"
    return Finding(path, f"{shown} is more than the field holds", valid=f"1 to {most}")


__all__ = ["INT32_MAX", "Finding", "Severity", "beyond"]
