"""Serves the components to the engine (what ``component_provider_host`` does), with the
args' problems handed over as the message alone: the SDK's host appends a Python
traceback to any other error of a component's ``__init__``."""

from __future__ import annotations

import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from pulumi.errors import InputPropertiesError
from pulumi.provider import main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

from vertex_training.provider.components import COMPONENTS, PACKAGE, REFERENCES, ArgsError
from vertex_training.provider.schema import inherited_descriptions, markdown

__all__ = ["VertexTrainingProvider", "finished_schema", "schema", "serve", "version"]

LANGUAGES = {
    "nodejs": {
        "packageName": "@vertex-training/sdk",
        "respectSchemaVersion": True,
        # The oldest @pulumi/pulumi it is built and run with (examples/ts-local's lock).
        "dependencies": {"@pulumi/pulumi": "^3.248.0"},
    },
    "go": {
        "importBasePath": "vertex-training/sdk/go/vertextraining",
        "modulePath": "vertex-training/sdk/go",
        "respectSchemaVersion": True,
        "generateResourceContainerTypes": True,
    },
}
"""What each generated SDK is called: an npm package and a Go module (sdk/, `make sdk`)."""


def version() -> str:
    """The Python package's version: the provider's."""
    try:
        return metadata.version("vertex-training-iac")
    except metadata.PackageNotFoundError:  # run from a checkout
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])


def finished_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's schema, finished: the descriptions of inherited fields, each of
    ``REFERENCES`` a reference to the
    components it names, a type's name without ``Args`` (the SDKs add their own:
    ``DeploymentArgs`` would be ``DeploymentArgsArgs``), descriptions in Markdown (an
    array's items and a map's values not repeating their property's), a map's object
    values and a component's list items Inputs (the Go generator writes no input type for
    an object reached only through a plain map, or a component's plain list), and the
    SDKs' names (``LANGUAGES``)."""
    types = f"#/types/{PACKAGE}:index:"
    for name, descriptions in inherited_descriptions().items():
        token = f"{PACKAGE}:index:{name}"
        component = schema["resources"].get(token.removesuffix("Args"), {})
        properties = schema["types"].get(token, {}).get("properties", {}) | component.get(
            "inputProperties", {}
        )
        for key, description in descriptions.items():
            if key in properties:
                properties[key].setdefault("description", description)
    schema["types"] = {key.removesuffix("Args"): value for key, value in schema["types"].items()}
    for component, references in REFERENCES.items():
        inputs = schema["resources"][f"{PACKAGE}:index:{component}"]["inputProperties"]
        for key, kinds in references.items():
            refs = [{"$ref": f"#/resources/{PACKAGE}:index:{kind}"} for kind in kinds.split("|")]
            inputs[key] = refs[0] if len(refs) == 1 else {"oneOf": refs}
    for resource in schema["resources"].values():
        for value in resource["inputProperties"].values():
            items = value.get("items")
            if isinstance(items, dict) and str(items.get("$ref")).startswith(types):
                items.pop("plain", None)

    def finish(node: Any) -> None:
        if isinstance(node, dict):
            values = node.get("additionalProperties")
            if isinstance(values, dict) and str(values.get("$ref")).startswith(types):
                values.pop("plain", None)
            for key in ("items", "additionalProperties"):
                inner = node.get(key)
                if isinstance(inner, dict) and inner.get("description") == node.get("description"):
                    inner.pop("description", None)
            if isinstance(node.get("$ref"), str) and node["$ref"].startswith(types):
                node["$ref"] = node["$ref"].removesuffix("Args")
            if "description" in node and not node["description"]:
                del node["description"]  # an enumeration's member without one
            if isinstance(node.get("description"), str):
                node["description"] = markdown(node["description"])
            for value in node.values():
                finish(value)
        elif isinstance(node, list):
            for value in node:
                finish(value)

    finish(schema)
    schema["description"] = (
        "Vertex AI TensorFlow training, capacity, models and endpoints as components."
    )
    schema["language"] = LANGUAGES
    return schema


class VertexTrainingProvider(ComponentProvider):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = json.dumps(finished_schema(json.loads(self.schema or "{}")))

    def construct(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().construct(*args, **kwargs)
        except ComponentInitError as error:
            if isinstance(error.inner, ArgsError):
                # With its problems listed: the SDK cannot send an InputPropertiesError
                # without them (the status it builds then lacks trailing metadata).
                raise InputPropertiesError(error.inner.header, error.inner.errors) from None
            raise


def _provider() -> VertexTrainingProvider:
    return VertexTrainingProvider(COMPONENTS, PACKAGE, version=version())


def schema() -> str:
    """The package's schema (what the engine gets), as sdk/schema.json holds it."""
    return json.dumps(json.loads(_provider().schema or "{}"), indent=2, sort_keys=True)


def serve() -> None:
    main(_provider(), sys.argv[1:])
