"""Secrets in a request body: where they stay secret, and where they cannot.

A value given as a secret (``pulumi.Output.secret``, a stack's ``secure:`` config value, a
secret from YAML, TypeScript or Go) stays a secret Output inside the body a resource
registers: the engine keeps it encrypted in the state and shows ``[secret]``. Vertex cannot
keep it so: it shows a job's body (its container ``env`` included), a model's and an
endpoint's, to anyone who may read the resource. So each resource records the API paths of
its body's secrets (its ``secret_paths`` input: what the policy pack reads) and warns of
each at preview.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pulumi

from vertex_training._checks import is_known
from vertex_training.findings import Finding

__all__ = ["SECRET_PATHS", "secret_finding", "secret_paths", "warn_of_secrets"]

SECRET_PATHS = "secret_paths"
"""The resource input listing the API paths of its body's secret values."""

SECRET_CHECK = "secret-in-body"

INSTEAD = (
    "a Secret Manager secret's name in the body (projects/P/secrets/S/versions/latest), "
    "read by the trainer at start with its service account"
)
"""What to use instead of a secret in a body."""


def secret_finding(path: str) -> Finding:
    """The warning for the secret at API path ``path`` of a body."""
    return Finding(
        path,
        "holds a secret: the stack's state keeps it encrypted, but Vertex shows this field "
        "in plain text to anyone who may read the resource (the console, the API)",
        "warning",
        SECRET_CHECK,
        valid=INSTEAD,
    )


def _not_known(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Each value of ``value`` not known yet (an Output), with its API path."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _not_known(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _not_known(item, f"{path}[{index}]")
    elif not is_known(value):
        yield path, value


def secret_paths(body: Mapping[str, Any]) -> pulumi.Output[list[str]]:
    """The API paths of ``body``'s secret values, in the body's order. Whether an Output is
    a secret is known only once it resolves: the list is an Output too (known in preview)."""
    found = list(_not_known(body, ""))

    async def secret() -> list[str]:
        return [path for path, value in found if await pulumi.Output.from_input(value).is_secret()]

    return pulumi.Output.from_input(secret())


def warn_of_secrets(
    resource: pulumi.Resource,
    paths: pulumi.Output[list[str]],
    render: Callable[[Finding], str] = str,
) -> None:
    """A warning on ``resource`` for each secret of its body (``render``: in the caller's
    words)."""

    def warn(found: list[str]) -> None:
        for path in found:
            pulumi.log.warn(render(secret_finding(path)), resource=resource)

    paths.apply(warn)
