"""Where a stack file holds secrets: the ``secure:`` values ``pulumi config set --secret``
writes, at any depth (``--path 'vertex-training:jobs[0].chief.env.API_TOKEN'``).

The engine tells a program only which top-level keys hold a secret (the whole of
``vertex-training:jobs``); the stack file says which value inside one is. The config reader
marks exactly those values secret (``stack.config``), and the stack runner asks for the
user's passphrase where there is any (``stack.engine``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["ConfigPath", "is_secure", "secure_paths"]

ConfigPath = tuple[str | int, ...]
"""A value's place in a stack's config: its full key, then the keys and list indexes
inside it (``("vertex-training:jobs", 0, "chief", "env", "API_TOKEN")``)."""


def is_secure(value: Any) -> bool:
    """Whether ``value`` is a stack file's encrypted value (``{secure: v1:...}``)."""
    return isinstance(value, Mapping) and list(value) == ["secure"]


def secure_paths(config: Any, path: ConfigPath = ()) -> Iterator[ConfigPath]:
    """The path of each encrypted value of a stack file's ``config`` mapping."""
    if is_secure(config):
        yield path
    elif isinstance(config, Mapping):
        for key, value in config.items():
            yield from secure_paths(value, (*path, str(key)))
    elif isinstance(config, list):
        for index, value in enumerate(config):
            yield from secure_paths(value, (*path, index))
