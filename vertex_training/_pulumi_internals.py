"""Every use of a Pulumi SDK internal in the package, in one place: what the SDK offers no
public way to do. Each is read from the pinned SDK (``PULUMI_READ``, the lock's pin);
tests/test_pulumi_internals.py fails when the installed SDK is another, or when one of
them stops behaving as read here."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import config as _runtime_config
from pulumi.runtime.rpc import UNKNOWN

__all__ = [
    "PULUMI_READ",
    "UNKNOWN",
    "Unknown",
    "docstring_reader",
    "engine_config",
    "pickler_kept_unwrapped",
    "resolved_now",
    "secret_config_keys",
]

PULUMI_READ = "3.272.0"
"""The pulumi SDK whose internals this module reads (the lock's pin)."""

# ``UNKNOWN``: what the engine hands a provider in place of a value not known yet
# (preview); ``Unknown``: the SDK's stand-in for one inside a program's values.


def resolved_now(value: Any) -> Any:
    """``value``, or the value of an Output the engine handed this process already
    resolved (an input from another resource's output arrives so): None where unknown.
    The SDK has no public way to read a resolved Output without waiting on it, and a
    component's constructor cannot wait."""
    if not isinstance(value, pulumi.Output):
        return value
    data = value._data  # the SDK's one future of value, dependencies and known-ness
    return data.result().value if data.done() and data.result().is_known else None


def engine_config() -> dict[str, object]:
    """The whole config map handed to this program: the engine's (``PULUMI_CONFIG``),
    then what ``set_all_config`` set (tests, automation). ``pulumi.Config`` answers only
    for the keys asked about; finding a mistyped key needs them all."""
    raw: dict[str, object] = dict(_runtime_config.get_config_env())
    raw.update(_runtime_config.CONFIG.get())
    return raw


def secret_config_keys(raw: Mapping[str, object]) -> set[str]:
    """The keys of ``raw`` (``engine_config``) whose values are secrets."""
    keys = set(_runtime_config.get_config_secret_keys_env())
    return keys | {k for k in raw if _runtime_config.is_config_secret(k)}


def docstring_reader(name: str) -> Any:
    """Pulumi's component analyzer (experimental), to read a field's docstring as the
    schema does. Imported here, lazily, as in the provider's process: its protos and
    google.api_core's do not mix."""
    from pulumi.provider.experimental.analyzer import Analyzer

    return Analyzer(name)


def pickler_kept_unwrapped() -> None:
    """Make ``pulumi.dynamic``'s ``serialize_provider`` (what every dynamic resource's
    constructor calls) put back the pickler method it wraps. The SDK wraps
    ``pickle._Pickler._batch_setitems`` in a sorting wrapper on every call and never
    restores it: each dynamic resource adds a level, so pickling slows as a program
    declares more of them, and past about 970 in one program it fails with
    ``RecursionError`` (pulumi/pulumi#17803). What it writes stays the same: sorted, by
    the one wrapper of each call. Idempotent."""
    from pulumi.dynamic import dynamic

    serialize = dynamic.serialize_provider
    if getattr(serialize, "keeps_pickler_unwrapped", False):
        return

    def serialize_provider(provider: Any) -> str:
        method = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
        try:
            return str(serialize(provider))
        finally:
            pickle._Pickler._batch_setitems = method  # type: ignore[attr-defined]

    serialize_provider.keeps_pickler_unwrapped = True  # type: ignore[attr-defined]
    serialize_provider.wrapped = serialize  # type: ignore[attr-defined]
    dynamic.serialize_provider = serialize_provider
