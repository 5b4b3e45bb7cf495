"""Tests of this repository."""

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""This checkout: the repository's own Pulumi project, its stacks and examples."""


def run_python(
    *args: str,
    cwd: Path = PROJECT_ROOT,
    env: Mapping[str, str] | None = None,
    python: Path | str = sys.executable,
) -> str:
    """A fresh interpreter (another ``python``, a virtual environment's, when given) run
    with ``args`` (``-c code``, ``-m module ...``): its output. It must exit 0 within two
    minutes; otherwise the test fails with its stderr."""
    command = [str(python), *args]
    result = subprocess.run(
        command, check=False, capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def modules_loaded_by(code: str, heavy: tuple[str, ...]) -> list[str]:
    """The modules named in ``heavy`` (or under them) that a fresh interpreter holds after
    running ``code``: what a light import keeps empty."""
    out = run_python("-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    return [m for m in json.loads(out.splitlines()[-1]) if m.startswith(heavy)]
