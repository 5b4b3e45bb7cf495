"""Serves the components to the engine (what ``component_provider_host`` does), with the
args' problems handed over as the message alone: the SDK's host appends a Python
traceback to any other error of a component's ``__init__``."""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from pulumi.errors import InputPropertiesError
from pulumi.provider import main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

from vertex_training.provider.components import COMPONENTS, PACKAGE, ArgsError

__all__ = ["VertexTrainingProvider", "serve", "version"]


def version() -> str:
    """The Python package's version: the provider's."""
    try:
        return metadata.version("vertex-training-iac")
    except metadata.PackageNotFoundError:  # run from a checkout
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])


class VertexTrainingProvider(ComponentProvider):
    def construct(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().construct(*args, **kwargs)
        except ComponentInitError as error:
            if isinstance(error.inner, ArgsError):
                # With its problems listed: the SDK cannot send an InputPropertiesError
                # without them (the status it builds then lacks trailing metadata).
                raise InputPropertiesError(error.inner.header, error.inner.errors) from None
            raise


def serve() -> None:
    main(VertexTrainingProvider(COMPONENTS, PACKAGE, version=version()), sys.argv[1:])
