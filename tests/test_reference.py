"""docs/reference.md is generated from the docstrings: it must match the code."""

from __future__ import annotations

import subprocess
import sys

from tests import PROJECT_ROOT


def test_the_reference_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "reference.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_reference_names_every_public_name() -> None:
    import vertex_training as vt

    text = (PROJECT_ROOT / "docs" / "reference.md").read_text()
    for name in vt.__all__:
        assert f"## `{name}`" in text, name
