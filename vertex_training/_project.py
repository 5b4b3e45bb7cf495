"""The one answer to "which project is this": the directory a Pulumi program runs in.

The library may be imported from a checkout, or from a wheel in site-packages, so the
project (``Pulumi.yaml``, ``stacks/``, ``docker/``, ``trainer/``) is never looked for
beside the package: it is the nearest directory holding ``Pulumi.yaml`` from the working
directory up (the engine starts programs and providers there), or the working directory
itself when there is none.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROJECT_FILE", "project_root"]

PROJECT_FILE = "Pulumi.yaml"


def project_root(start: Path | None = None) -> Path:
    """The Pulumi project directory of ``start`` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / PROJECT_FILE).is_file():
            return directory
    return here
