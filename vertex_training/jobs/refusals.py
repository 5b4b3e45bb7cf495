"""What the Args refuse where they are built: the rules of a pool, study or parameter run
on its body, every error at the caller's own field."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vertex_training._checks import InvalidArgumentsError
from vertex_training.findings import Finding
from vertex_training.jobs.body import to_body
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.placeholders import drop_unknown, with_placeholders
from vertex_training.jobs.rules.catalog import catalog
from vertex_training.jobs.rules.hardware import acknowledge
from vertex_training.jobs.view import Message, read

__all__ = ["judged_where_built", "refusal"]


def judged_where_built(
    obj: Any,
    model: type[Message],
    rules: Callable[[Any, str], list[Finding]],
    body: dict[str, Any] | None = None,
) -> tuple[Finding, ...]:
    """Where ``obj`` (a pool, study or parameter) is built: the rules of what it must be
    anywhere, on its body (``to_body(obj)`` unless given), its own acknowledged hardware
    checks applied. Raises ``InvalidArgumentsError`` naming the caller's own field for
    every error; returns the warnings, for the job that runs it to show."""
    known, unknown = with_placeholders(to_body(obj) if body is None else body)
    view, found = read(model, known)
    found = drop_unknown(found or (rules(view, "") if view is not None else []), unknown)
    found = acknowledge(found, getattr(obj, "acknowledged_hardware_checks", ()))
    found = [f.at(caller_path(obj, f.path) or f.path) for f in found]
    errors = [f for f in found if f.severity == "error"]
    if errors:
        raise refusal(type(obj).__name__, errors)
    return tuple(found)


def refusal(owner: str, findings: Sequence[Finding], heading: str = "") -> InvalidArgumentsError:
    """``InvalidArgumentsError.of`` the Args class ``owner``; an error of the hardware catalog
    says how to acknowledge it, since a catalog row can be out of date and the message
    alone must say the way out."""

    def acknowledging(finding: Finding) -> str:
        if not finding.check or finding.severity != "error":
            return ""
        return (
            f"; where the hardware catalog (as of {catalog().as_of}) is out of date: "
            f"{owner}(..., acknowledged_hardware_checks=[{finding.check!r}]) only warns"
        )

    return InvalidArgumentsError.of(owner, findings, heading, acknowledging)
