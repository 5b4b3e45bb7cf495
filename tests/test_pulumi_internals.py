"""vertex_training/_pulumi_internals.py, every use of a Pulumi internal, against the
installed SDK: each test fails when the SDK changes underneath it, or when the internal
stops behaving as read there."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from importlib import metadata

import pulumi
import pytest

from tests import PROJECT_ROOT
from vertex_training._checks import is_known
from vertex_training._pulumi_internals import (
    PULUMI_READ,
    UNKNOWN,
    Unknown,
    engine_config,
    resolved_now,
    secret_config_keys,
)


def test_the_internals_are_read_from_the_pinned_pulumi_sdk() -> None:
    lock = (PROJECT_ROOT / "requirements.lock").read_text()
    pinned = re.search(r"^pulumi==(\S+)$", lock, re.MULTILINE)
    assert pinned is not None
    assert metadata.version("pulumi") == pinned[1] == PULUMI_READ


def test_a_resolved_output_is_read_and_an_unknown_one_is_not() -> None:
    async def read() -> tuple[object, object, object]:
        known = pulumi.Output.from_input("warm-t4")
        await known.future()
        unknown = pulumi.Output(set(), asyncio.Future(), asyncio.Future())
        return resolved_now(known), resolved_now(unknown), resolved_now("plain")

    loop = asyncio.new_event_loop()  # not asyncio.run: it unsets the loop the mocks use
    try:
        assert loop.run_until_complete(read()) == ("warm-t4", None, "plain")
    finally:
        loop.close()


def test_what_the_engine_hands_for_a_value_not_known_yet_is_not_known() -> None:
    # The engine's wire value for "unknown" (preview), as a provider's inputs hold it.
    assert UNKNOWN == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    # In preview a program's inputs hold the SDK's stand-in for it.
    kept = pulumi.runtime.rpc.deserialize_property(UNKNOWN, keep_unknowns=True)  # type: ignore[attr-defined]
    assert isinstance(kept, Unknown)
    assert not is_known(UNKNOWN) and not is_known(kept)
    assert is_known("04da6b54")


def test_the_whole_config_map_and_its_secret_keys_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"p:from-engine": "1", "p:token": "s"}))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["p:token"]))
    pulumi.runtime.set_all_config({"p:set": "2"}, ["p:set"])
    try:
        raw = engine_config()
        assert {k: raw[k] for k in ("p:from-engine", "p:token", "p:set")} == {
            "p:from-engine": "1",
            "p:token": "s",
            "p:set": "2",
        }
        assert secret_config_keys(raw) >= {"p:token", "p:set"}
        assert "p:from-engine" not in secret_config_keys(raw)
    finally:
        pulumi.runtime.set_all_config({}, [])


def test_the_analyzer_reads_a_fields_docstring() -> None:
    # In a process of its own, as in the provider's: its protos and google.api_core's do
    # not mix.
    program = (
        "from vertex_training._pulumi_internals import docstring_reader\n"
        "from vertex_training.findings import Finding\n"
        "print(docstring_reader('t').get_docstring(Finding, 'valid'))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", program],
        check=False,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "What would be valid, where the message does not say it itself."


def test_the_sdk_still_leaves_its_pickler_wrapped_deeper_on_every_provider() -> None:
    """What ``pickler_kept_unwrapped`` works around: when this fails, the SDK restores
    the method itself and the workaround can go."""
    import pickle

    from pulumi.dynamic import dynamic

    import vertex_training._dynamic  # noqa: F401  (it installs the workaround)

    method = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    try:
        dynamic.serialize_provider.wrapped(dynamic.ResourceProvider())  # the SDK's own
        assert pickle._Pickler._batch_setitems is not method  # type: ignore[attr-defined]
    finally:
        pickle._Pickler._batch_setitems = method  # type: ignore[attr-defined]


def test_a_program_pickles_a_thousand_providers_the_same_way_each_time() -> None:
    import pickle

    from pulumi.dynamic import dynamic

    from vertex_training.jobs.records import JobKind
    from vertex_training.jobs.resources import JobProvider

    method = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    provider = JobProvider(JobKind.CUSTOM_JOB)
    first = dynamic.serialize_provider(provider)
    for _ in range(1_000):  # the SDK alone fails near 970 (RecursionError)
        assert dynamic.serialize_provider(provider) == first
    assert pickle._Pickler._batch_setitems is method  # type: ignore[attr-defined]
