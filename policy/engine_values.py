"""How the engine hands a policy the values it does not know yet in a preview: the one
place this pack reads pulumi-policy's internals.

CrossGuard's public API has no name for them: the engine passes an unknown as a sentinel
string inside read-only proxies (``pulumi_policy.proxy``) that raise ``UnknownValueError``
when one is read. The budget needs to read past the unknowns that cannot change a price (an
image digest), so it reads the proxies' data as it is and tells the sentinels apart here.
pulumi-policy is pinned in policy/requirements.txt (``PINNED``);
tests/policy/test_engine_values.py fails when the installed version is another, or when
these internals no longer behave as read here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import proxy as _proxy

# What the engine's proxies raise on reading a value not known yet; a policy that raises it
# is reported as one that could not run in this preview.
from pulumi_policy.proxy import UnknownValueError

PINNED = "1.21.0"
"""The pulumi-policy version whose internals this module reads."""


def is_unknown(value: Any) -> bool:
    """Whether ``value`` is the engine's stand-in for a value not known yet."""
    return bool(_proxy._is_unknown(value))


def plain(value: Any) -> Any:
    """The engine's read-only proxies as plain data, unknown values left as their sentinels
    (reading one through a proxy raises)."""
    if isinstance(value, _proxy._DictProxy | _proxy._ListProxy):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    return value


def unknown_at(path: str) -> UnknownValueError:
    """The error the engine's proxies raise on reading the string not known yet at ``path``
    (dotted)."""
    return UnknownValueError(_proxy.UNKNOWN_STRING_VALUE, path.split("."))


def checking_proxy(props: dict[str, Any]) -> Any:
    """``props`` as the engine hands them to a policy (the tests' stand-in for the engine)."""
    return _proxy.unknown_checking_proxy(props)


__all__ = ["PINNED", "UnknownValueError", "checking_proxy", "is_unknown", "plain", "unknown_at"]
