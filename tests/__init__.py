"""Tests of this repository."""

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""This checkout: the repository's own Pulumi project, its stacks and examples."""


def run_python(
    code: str,
    *,
    cwd: Path = PROJECT_ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    python: Path | str = sys.executable,
) -> str:
    """``code`` run by a fresh interpreter (``python -c``; another ``python``, a virtual
    environment's, when given): its output. The interpreter must exit 0; otherwise the test
    fails with its stderr."""
    result = subprocess.run(
        [str(python), "-c", code],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def modules_loaded_by(code: str, heavy: tuple[str, ...]) -> list[str]:
    """The modules named in ``heavy`` (or under them) that a fresh interpreter holds after
    running ``code``: what a light import keeps empty."""
    out = run_python(f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    return [m for m in json.loads(out.splitlines()[-1]) if m.startswith(heavy)]
