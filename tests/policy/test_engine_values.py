"""policy/engine_values.py, the pack's one reader of pulumi-policy internals, against the
pinned pulumi-policy in the pack's own environment: a test that fails when the version
changes underneath it, or when the internals stop behaving as read."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests import PROJECT_ROOT

POLICY_PYTHON = PROJECT_ROOT / "policy" / "venv" / "bin" / "python"

_PROBE = """
import json, sys
from importlib import metadata
sys.path.insert(0, sys.argv[1])
from policy import engine_values as ev
sentinel = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
props = ev.checking_proxy({"a": {"b": [sentinel, 2]}, "c": "x"})
try:
    props["a"]["b"][0]
    raised = None
except ev.UnknownValueError as error:
    raised = error.message
print(json.dumps({
    "installed": metadata.version("pulumi-policy"),
    "pinned": ev.PINNED,
    "plain": ev.plain(props),
    "unknown": [ev.is_unknown(sentinel), ev.is_unknown("x")],
    "raised": raised,
    "made": ev.unknown_at("spec.image").message,
}))
"""


def test_the_pinned_pulumi_policy_behaves_as_the_wrapper_reads_it() -> None:
    if not POLICY_PYTHON.is_file():
        pytest.skip("no policy/venv (make policy-venv makes it)")
    done = subprocess.run(
        [str(POLICY_PYTHON), "-c", _PROBE, str(PROJECT_ROOT)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    seen = json.loads(done.stdout)
    requirement = re.search(
        r"^pulumi-policy==(\S+)$",
        (PROJECT_ROOT / "policy" / "requirements.txt").read_text(),
        re.MULTILINE,
    )
    assert requirement is not None
    assert seen["installed"] == seen["pinned"] == requirement.group(1)
    assert seen["plain"] == {"a": {"b": ["04da6b54-80e4-46f7-96ec-b56ff0331ba9", 2]}, "c": "x"}
    assert seen["unknown"] == [True, False]
    assert seen["raised"] == "string value at .a.b.0 can't be known during preview"
    assert seen["made"] == "string value at .spec.image can't be known during preview"
