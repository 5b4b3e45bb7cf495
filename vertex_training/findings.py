"""The one problem type: what every rule returns (jobs, models, endpoints, the platform,
a stack file), carried as a value to the surface that shows it (the Python exception, a
stack key, a provider's ``CheckFailure``, the policy pack, another language's error),
which renders it there. No surface parses a rendered finding back."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Severity = Literal["error", "warning"]

Surface = Literal["python", "stack", "property", "check", "message"]
"""Where a finding is shown (``render``)."""


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
    acknowledged: bool = False
    """An error of ``check`` that the caller acknowledged: a warning that says so."""

    def at(self, caller: str) -> Finding:
        """This finding at the caller's path ``caller``."""
        return replace(self, caller=caller)

    def __str__(self) -> str:
        return render(self, "check")


def render(
    finding: Finding, surface: Surface, owner: str = "", *, vertex: bool | None = None
) -> str:
    """``finding`` in the words of the ``surface`` that shows it, the one place a finding
    becomes text:

    - ``python`` (an ``InvalidArgumentsError``, a resource's warning): ``Owner.caller:
      message (Vertex field path); valid: ...``, ``owner`` the Args class or resource;
    - ``stack`` (a stack file's key): ``key: message (Vertex field path); valid: ...``;
    - ``property`` (a component's property, which the engine names apart): ``message
      (Vertex field path). Valid: ...``;
    - ``check`` (a provider's ``CheckFailure``, a log line): ``path: message; valid: ...``;
    - ``message``: the words alone, for a finding another surface re-homes at its own key.

    An error's words end in its check id, for the user to copy into an acknowledgement; the
    Vertex field is named where ``vertex`` says (None: where the caller's path is not it;
    never in a ``CheckFailure``, whose property names it)."""
    words = finding.message
    if finding.check and (finding.severity == "error" or finding.acknowledged):
        words += f" (check {finding.check})"
    if finding.acknowledged:
        words += " [acknowledged hardware check: a warning, not refused]"
    if vertex is None:
        vertex = surface in ("python", "stack", "property") and finding.path not in (
            "",
            finding.caller,
        )
    if vertex:
        words += f" (Vertex field {finding.path})"
    if surface == "message":
        return words
    if surface == "property":
        return words + (f". Valid: {finding.valid}" if finding.valid else "")
    valid = f"; valid: {finding.valid}" if finding.valid else ""
    if surface == "python":
        where = ".".join(filter(None, (owner, finding.caller)))
    else:
        where = finding.caller or finding.path
    return f"{where}: {words}{valid}" if where else f"{words}{valid}"


INT32_MAX = 2**31 - 1
"""The most an int32 field of the protos (a replica count, an accelerator count) holds."""


def beyond(path: str, count: int, most: int) -> Finding:
    """``count`` at ``path``, more than its proto field holds (``most``: an int32's or an
    int64's largest); a number of thousands of digits is said by its length."""
    digits = len(str(count))
    shown = str(count) if digits <= 20 else f"a number of {digits} digits"
    return Finding(path, f"{shown} is more than the field holds", valid=f"1 to {most}")


__all__ = ["INT32_MAX", "Finding", "Severity", "Surface", "beyond", "render"]
