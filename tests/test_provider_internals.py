"""vertex_training/provider/components.py's one read of a Pulumi internal
(``resolved_now``, ``Output._data``) against the installed SDK: a test that fails when the
version changes underneath it, or when the internal stops behaving as read."""

from __future__ import annotations

import asyncio
import re
from importlib import metadata

import pulumi

from tests import PROJECT_ROOT
from vertex_training.provider.components import PULUMI_READ, resolved_now


def test_the_wrapper_reads_the_pinned_pulumi_sdk() -> None:
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
