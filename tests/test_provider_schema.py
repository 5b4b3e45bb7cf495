"""The provider's schema, as the CLI reads it from the executable (``pulumi package
get-schema``), has every field of the Python Args, under its camelCase name and with its
type (an Input where the Args take another resource's output, an enumeration where they
take one of some words): a field added to the Args reaches every language. The schema
the SDKs were generated from (sdk/schema.json) is this one."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
from pulumi import Resource

from vertex_training._checks import accepts_unknown, alternatives, arguments, field_types
from vertex_training.capacity.api import PersistentResourceArgs
from vertex_training.jobs import api, pools
from vertex_training.jobs.body import camel
from vertex_training.platform.platform import TrainingPlatformArgs
from vertex_training.serving.api import EndpointArgs, ModelArgs

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugins" / "vertex-training" / "pulumi-resource-vertex-training"
CLI = REPO / ".tools" / "bin" / "pulumi"
PACKAGE = "vertex-training"
COMPONENTS = {
    "TrainingPlatform": TrainingPlatformArgs,
    "CustomJob": api.CustomJobArgs,
    "HyperparameterTuningJob": api.HyperparameterTuningJobArgs,
    "Model": ModelArgs,
    "Endpoint": EndpointArgs,
    "PersistentResource": PersistentResourceArgs,
}
PLACED = frozenset({"platform", "project", "region", "job"})
"""A model or endpoint is placed by its platform (a model's job is a reference)."""
NOT_ARGS = {"Model": PLACED, "Endpoint": PLACED}
ANY = {"$ref": "pulumi.json#/Any"}
SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "string"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    if not CLI.is_file():
        pytest.skip("no Pulumi CLI in .tools/bin (make pulumi-cli)")
    done = subprocess.run(
        [str(CLI), "package", "get-schema", str(PLUGIN)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(Path.home())},
    )
    return json.loads(done.stdout)


def _options(hint: object) -> list[object]:
    """The values a field may hold, ``pulumi.Input``'s mark and None dropped; of a resource
    or its name (a deployment's model), the name; and a Python object behind a protocol (a
    job's ``JobCapacity``), which no other language can give."""
    found = [
        o
        for o in alternatives(hint)
        if o is not None and o is not type(None) and not getattr(o, "_is_protocol", False)
    ]
    if str in found:
        found = [o for o in found if not (isinstance(o, type) and issubclass(o, Resource))]
    return list(dict.fromkeys(found))


def _expected(hint: object) -> dict[str, Any]:
    """The schema property a field of this annotation must be."""
    options = [SCALARS.get(o, o) for o in _options(hint)]  # type: ignore[call-overload]
    options = list(dict.fromkeys(options))
    if len(options) != 1:
        members = [o for o in options if dataclasses.is_dataclass(o)]
        if members and len(members) == len(options):
            return {"$ref": "union"}
        return ANY
    (option,) = options
    origin = typing.get_origin(option)
    if isinstance(option, str):
        return {"type": option}
    if origin is Literal and all(isinstance(v, str) for v in typing.get_args(option)):
        return {"$ref": "enum", "enum": list(typing.get_args(option))}
    if origin is Literal:
        return {"type": SCALARS[type(typing.get_args(option)[0])]}
    if origin in (Sequence, list, tuple):
        return {"type": "array", "items": _expected(typing.get_args(option)[0])}
    if origin in (Mapping, dict):
        return {"type": "object", "additionalProperties": _expected(typing.get_args(option)[1])}
    if dataclasses.is_dataclass(option):
        name = typing.cast(type, option).__name__.removesuffix("Args")
        return {"$ref": f"#/types/{PACKAGE}:index:{name}"}
    return ANY


def _matches(expected: dict[str, Any], prop: dict[str, Any], schema: dict[str, Any]) -> bool:
    if expected.get("$ref") == "union":
        ref = prop.get("$ref", "")
        return ref.startswith(f"#/types/{PACKAGE}:index:") and "type" in _type(schema, ref)
    if expected.get("$ref") == "enum":
        ref = prop.get("$ref", "").removeprefix("#/types/")
        return [v["value"] for v in schema["types"].get(ref, {}).get("enum", [])] == expected[
            "enum"
        ]
    if "$ref" in expected:
        return prop.get("$ref") == expected["$ref"]
    if prop.get("type") != expected["type"]:
        return False
    for key in ("items", "additionalProperties"):
        if key in expected and not _matches(expected[key], prop[key], schema):
            return False
    return True


def _type(schema: dict[str, Any], ref: str) -> dict[str, Any]:
    return schema["types"][ref.removeprefix("#/types/")]["properties"]


def _problems(
    cls: type,
    properties: dict[str, Any],
    schema: dict[str, Any],
    seen: set[type],
    in_union: bool = False,
    skip: frozenset[str] = frozenset({"platform"}),
) -> list[str]:
    """Each field of ``cls`` missing from ``properties`` or of another type there, or an
    Input where the field is plain (or plain where it is an Input); in a union's object, a
    field two members type differently may be any value."""
    seen.add(cls)
    problems = []
    for f in arguments(cls):
        if f.name in skip:
            continue
        hint = field_types(cls)[f.name]
        prop = properties.get(camel(f.name))
        expected = _expected(hint)
        if prop is None:
            problems.append(f"{cls.__name__}.{f.name}: not in the schema as {camel(f.name)}")
        elif not _matches(expected, prop, schema) and not (
            in_union and prop.get("$ref") == ANY["$ref"]
        ):
            problems.append(f"{cls.__name__}.{f.name}: {prop} in the schema, not {expected}")
        elif expected != ANY and prop.get("plain", False) == accepts_unknown(hint):
            input_or_plain = "an Input" if accepts_unknown(hint) else "plain"
            problems.append(f"{cls.__name__}.{f.name}: {prop} in the schema, not {input_or_plain}")
        for option in _options(hint):
            for inner in [option, *typing.get_args(option)]:
                for member in _options(inner):
                    if (
                        isinstance(member, type)
                        and dataclasses.is_dataclass(member)
                        and member not in seen
                        and prop
                    ):
                        ref = prop.get("$ref") or (prop.get("items") or {}).get("$ref")
                        ref = ref or ((prop.get("additionalProperties") or {}).get("$ref"))
                        if ref and ref.startswith("#/types/"):
                            union = "type" in _type(schema, ref) and member.__name__ not in ref
                            problems += _problems(member, _type(schema, ref), schema, seen, union)
    return problems


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_args_field_is_in_the_schema_with_its_name_and_type(
    schema: dict[str, Any], component: str
) -> None:
    resource = schema["resources"][f"{PACKAGE}:index:{component}"]
    skip = NOT_ARGS.get(component, frozenset({"platform"}))
    inputs = resource["inputProperties"]
    assert _problems(COMPONENTS[component], inputs, schema, set(), skip=skip) == []


def test_the_provider_has_the_packages_version(schema: dict[str, Any]) -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert schema["version"] == project["version"]


def _resource(kind: str) -> dict[str, str]:
    return {"$ref": f"#/resources/{PACKAGE}:index:{kind}"}


def test_a_job_model_or_endpoint_takes_its_platform_and_a_model_its_job_as_the_component(
    schema: dict[str, Any],
) -> None:
    for kind in ("CustomJob", "HyperparameterTuningJob", "Model", "Endpoint", "PersistentResource"):
        resource = schema["resources"][f"{PACKAGE}:index:{kind}"]
        assert resource["inputProperties"]["platform"] == _resource("TrainingPlatform")
        assert "platform" in resource["requiredInputs"]
    model = schema["resources"][f"{PACKAGE}:index:Model"]
    jobs = [_resource("CustomJob"), _resource("HyperparameterTuningJob")]
    assert model["inputProperties"]["job"] == {"oneOf": jobs}
    assert "job" not in model["requiredInputs"]


def test_descriptions_are_markdown_and_words_are_enumerations(schema: dict[str, Any]) -> None:
    text = json.dumps(schema)
    assert "``" not in text  # reStructuredText's literal
    enums = {name.rpartition(":")[2] for name, t in schema["types"].items() if "enum" in t}
    assert enums >= {
        "MetricGoal",
        "ParameterScale",
        "StudyAlgorithm",
        "StudyMeasurementSelection",
        "ReservationAffinityType",
        "SchedulingStrategy",
        "TrainingPlatformEnvironment",
        "JobState",
    }
    goal = schema["types"][f"{PACKAGE}:index:MetricGoal"]["enum"]
    assert goal == [
        {"name": "Maximize", "value": "maximize"},
        {"name": "Minimize", "value": "minimize"},
    ]


def test_a_field_a_class_inherits_keeps_its_description(schema: dict[str, Any]) -> None:
    # Pulumi's analyzer reads a class's own body: the machine fields both pools inherit
    # from ``Machines`` (and a job's from its base) are described by the provider itself.
    for pool in ("WorkerPool", "ResourcePool"):
        disk = schema["types"][f"{PACKAGE}:index:{pool}"]["properties"]["bootDiskType"]
        assert disk.get("description") == "None: the service's default (`pd-ssd`)."
    job = schema["resources"][f"{PACKAGE}:index:CustomJob"]["inputProperties"]
    assert "the chief" in job["chief"].get("description", "")


def test_the_sdks_schema_is_the_providers() -> None:
    """sdk/schema.json, which the committed SDKs were generated from (make sdk), as the
    provider prints it (in its own process: the provider's protos and Google's clash)."""
    printed = subprocess.run(
        [sys.executable, "-m", "vertex_training.provider", "schema"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    ).stdout
    committed = (REPO / "sdk" / "schema.json").read_text(encoding="utf-8")
    assert json.loads(committed) == json.loads(printed), "the SDKs are stale: run make sdk"


def test_a_missing_or_retyped_field_is_caught(schema: dict[str, Any]) -> None:
    pool = schema["types"][f"{PACKAGE}:index:WorkerPool"]["properties"]
    without = {k: v for k, v in pool.items() if k != "machineType"}
    retyped = {**pool, "replicaCount": {"type": "string"}}
    assert _problems(pools.WorkerPool, without, schema, set()) == [
        "WorkerPool.machine_type: not in the schema as machineType"
    ]
    assert [p.split(":")[0] for p in _problems(pools.WorkerPool, retyped, schema, set())] == [
        "WorkerPool.replica_count"
    ]


def test_protected_artifact_location_reaches_the_body_and_every_language(
    schema: dict[str, Any],
) -> None:
    """Added to the Args alone (one field in api.py): the body, stack YAML and the
    provider's schema (YAML, TypeScript, Go) have it, with no other file touched."""
    from vertex_training.jobs.api import PlatformFacts, resolve
    from vertex_training.jobs.declarations import read_job
    from vertex_training.jobs.protos import parse_body
    from vertex_training.jobs.records import JobKind

    args = api.CustomJobArgs(
        project="p",
        region="us-central1",
        chief=pools.WorkerPool(machine_type="n1-standard-4", image="r/i@sha256:" + "0" * 64),
        protected_artifact_location_id="us-central1",
    )
    platform = PlatformFacts(environment="dev", region="us-central1", project="p", bucket_url=None)
    body = resolve(args, "j", platform).body
    parse_body(JobKind.CUSTOM_JOB, body)
    assert body["jobSpec"]["protectedArtifactLocationId"] == "us-central1"
    entry = {
        "name": "j",
        "chief": {"machineType": "n1-standard-4"},
        "protectedArtifactLocationId": "eu",
    }
    job, problems = read_job(entry, "jobs[0]")
    assert problems == [] and job is not None
    assert job.args.protected_artifact_location_id == "eu"  # type: ignore[union-attr]
    for kind, where in (("CustomJob", "inputProperties"), ("TrialJob", "properties")):
        owner = (
            schema["resources"].get(f"{PACKAGE}:index:{kind}")
            or schema["types"][f"{PACKAGE}:index:{kind}"]
        )
        assert owner[where]["protectedArtifactLocationId"]["type"] == "string"
