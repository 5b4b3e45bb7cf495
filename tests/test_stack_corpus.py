"""Stack files tried with a corpus of mutated files: every stack of ``stacks/`` and of the
examples, each key path given huge and negative numbers, wrong types, empty values, a
misspelt or unknown key beside it, a wrong enum value, and the keys of another environment.

Each mutation ends in a ``ConfigError`` that names the key path it broke (or one that holds
it), or is accepted on purpose; never in another exception. The stack reader, the Args it
declares and the estimate (``python -m vertex_training.stack estimate``) all run on it, and
so does the form the Pulumi CLI hands a program (scalars as text, structures as JSON).
"""

from __future__ import annotations

import copy
import json
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_pulumi
from vertex_training.stack.config import (
    PROJECT_NAME,
    ConfigError,
    known_config_keys,
    parse_stack_config,
)
from vertex_training.stack.definition import stack_definition
from vertex_training.stack.estimate import estimate_stack
from vertex_training.stack.serving import SERVING_KEYS

STACK_FILES = sorted(
    [
        *(PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml"),
        *(PROJECT_ROOT / "examples").glob("*/Pulumi.*.yaml"),
    ]
)
"""The stacks, and the examples' (whose own namespaces our reader leaves to their programs:
``test_the_example_programs_refuse_a_mutated_config_cleanly`` runs those)."""

Path_ = tuple[str | int, ...]
"""A key path in the ``config`` mapping: the full key, then keys and list indexes."""

HUGE = 10**400
"""Beyond a float: ``float(HUGE)`` is an OverflowError."""


def _config(stack_file: Path) -> tuple[str, dict[str, Any]]:
    stack = stack_file.name.split(".")[1]
    config = (yaml.safe_load(stack_file.read_text(encoding="utf-8")) or {}).get("config") or {}
    return stack, config


def _leaves(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every key path of ``value`` and the value there (mappings and lists too)."""
    if path:
        yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, (*path, index))


def _set(config: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    mutated = copy.deepcopy(config)
    holder: Any = mutated
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = value
    return mutated


def _misspelt(key: str) -> str:
    return key[:-2] + key[-1] if len(key) > 3 else key + "x"


def _values(value: Any) -> list[tuple[str, Any]]:
    """The wrong (or odd) values tried in place of ``value``."""
    out: list[tuple[str, Any]] = [
        ("null", None),
        ("empty", ""),
        ("a mapping", {"bogus": 1}),
        ("a list", ["x"]),
        ("true", True),
    ]
    if isinstance(value, bool):
        out += [("text", "maybe"), ("a number", 2)]
    elif isinstance(value, int | float):
        out += [
            ("negative", -1),
            ("zero", 0),
            ("huge", HUGE),
            ("big", 2**63),
            ("fraction", 0.5),
            ("text", "many"),
            ("infinity", float("inf")),
        ]
    elif isinstance(value, str):
        out += [
            ("misspelt", _misspelt(value)),
            ("upper case", value.upper() + "_X"),
            ("a number", 7),
            ("huge", HUGE),
            ("spaces", f" {value} "),
        ]
    return out


def _mutations(config: dict[str, Any]) -> Iterator[tuple[str, Path_, dict[str, Any]]]:
    """(what, the key path it breaks, the mutated config)."""
    for path, value in _leaves(config):
        for what, wrong in _values(value):
            yield f"{what} at {path}", path, _set(config, path, wrong)
        if isinstance(value, dict):
            unknown = {**value, "bogusKey": 1}
            yield f"unknown key under {path}", (*path, "bogusKey"), _set(config, path, unknown)
            for key in value:
                if isinstance(key, str) and len(key) > 3:
                    renamed = {(_misspelt(k) if k == key else k): v for k, v in value.items()}
                    yield f"{key} misspelt", (*path, _misspelt(key)), _set(config, path, renamed)
    for key, value in config.items():
        if ":" in key:
            rest = {k: v for k, v in config.items() if k != key}
            yield f"{key} removed", (key,), rest
            # Another namespace is its provider's: misspelt, the key is missing.
            where = _misspelt(key) if key.startswith(f"{PROJECT_NAME}:") else key
            yield f"{key} misspelt", (where,), {**rest, _misspelt(key): value}
    for key, info in known_config_keys().items():
        full = f"{PROJECT_NAME}:{key}"
        if full not in config and key not in SERVING_KEYS:
            example = info.default if info.default not in (None, (), "") else "x"
            for what, wrong in _values(example):
                yield f"{what} at {full} (not in the file)", (full,), {**config, full: wrong}


def _other_environments(stack: str) -> Iterator[tuple[str, Path_, dict[str, Any]]]:
    """This stack with each key of another stack's file (``stacks/``) added."""
    _, own = _config(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    for other in sorted((PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")):
        name, config = _config(other)
        for key, value in config.items():
            if name != stack and key not in own and key.startswith(f"{PROJECT_NAME}:"):
                yield f"{name}'s {key}", (key,), {**own, key: value}


def _as_the_cli_passes_it(config: dict[str, Any]) -> dict[str, Any]:
    """The engine's form: every scalar as text, lists and mappings as JSON text."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, dict | list):
            return json.dumps(value)
        return "" if value is None else str(value)

    return {key: text(value) for key, value in config.items()}


def _key_path(path: Path_) -> str:
    head, *rest = path
    key = str(head) if ":" in str(head) else f"{PROJECT_NAME}:{head}"
    return key + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)


def _judge(stack: str, config: dict[str, Any]) -> ConfigError | None:
    """The stack read, its Args declared and priced: None when all of it passes."""
    try:
        read = parse_stack_config(stack, config)
        stack_definition(read)
        estimate_stack(read)
        _ = read.budget  # the estimate's verdict and the policy pack's config read it
    except ConfigError as error:
        return error
    return None


REFERENCES = {"jobs": "models", "models": "endpoints"}
"""A stack's entries that others name: a model names its job, a deployment its model."""

RELATED = {"workbenchGpuType": "workbenchGpuCount"}
"""Keys judged together: a count without a type is the count's problem."""


def _names(error: ConfigError, path: Path_) -> bool:
    """Whether ``error`` names the key path ``path`` breaks, one that holds it, one inside
    it (a structure's problem is at the entry it breaks), a key of the same entry (a rule
    between its keys), or the entry that names a list or an entry name it breaks."""
    wanted = _key_path(path)
    parent = _key_path(path[:-1]) if len(path) > 2 else wanted
    short = str(path[0]).removeprefix(f"{PROJECT_NAME}:")
    names = len(path) == 1 or (len(path) == 3 and path[2] == "name")
    also = [f"{PROJECT_NAME}:{RELATED[short]}"] if short in RELATED else []
    if names and short in REFERENCES:
        also.append(f"{PROJECT_NAME}:{REFERENCES[short]}[")
    for where in (f.caller for f in error.findings):
        if wanted.startswith(where) or where.startswith((wanted, parent, *also)):
            return True
    return False


CASES: list[tuple[str, str, Path_, dict[str, Any]]] = []
for _file in STACK_FILES:
    _stack, _own = _config(_file)
    for _what, _path, _mutated in _mutations(_own):
        CASES.append((_stack, f"{_file.parent.name}/{_file.name}: {_what}", _path, _mutated))
for _stack in ("local", "dev", "prod"):
    for _what, _path, _mutated in _other_environments(_stack):
        CASES.append((_stack, f"{_stack}: {_what}", _path, _mutated))


ACCEPTED: list[tuple[str, Callable[[str, Path_], bool]]] = []


@pytest.mark.slow
@pytest.mark.parametrize("form", ["file", "cli"])
def test_every_mutation_is_a_clean_error_at_its_key_or_accepted(form: str) -> None:
    """One test for the whole corpus (a few thousand files): its failures listed together."""
    wrong: list[str] = []
    accepted: list[str] = []
    for stack, what, path, config in CASES:
        given = config if form == "file" else _as_the_cli_passes_it(config)
        try:
            error = _judge(stack, given)
        except Exception as crash:
            wrong.append(f"{what}: {type(crash).__name__}: {crash}"[:300])
            continue
        if error is None:
            accepted.append(what)
        elif not _names(error, path):
            wrong.append(f"{what}: not at {_key_path(path)}: {error}"[:400])
    assert wrong == [], "\n".join(wrong)


EXAMPLE_PROGRAMS = sorted(
    path.parent
    for path in (PROJECT_ROOT / "examples").glob("*/Pulumi.example.yaml")
    if (path.parent / "__main__.py").is_file()
)


@pytest.mark.slow
@pytest.mark.parametrize("directory", EXAMPLE_PROGRAMS, ids=lambda p: p.name)
def test_the_example_programs_refuse_a_mutated_config_cleanly(directory: Path) -> None:
    """An example's own keys (``byo-gpu-job:bucket``) are its program's to read: each
    mutation of its stack file ends in a ``pulumi.RunError`` (the CLI shows it without a
    traceback: ``vt.InvalidArgumentsError``, a missing key) or is accepted, never in
    another exception."""
    stack_file = directory / "Pulumi.example.yaml"
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())["name"]
    _, own = _config(stack_file)
    crashed: list[str] = []
    for what, _path, config in _mutations(own):
        if not str(_path[0]).startswith(f"{project}:"):
            continue  # the stack reader's keys: the test above
        try:
            run_pulumi(
                lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
                stack="example",
                config=_as_the_cli_passes_it(config),
                project=project,
            )
        except pulumi.RunError:
            continue
        except Exception as crash:
            crashed.append(f"{what}: {type(crash).__name__}: {crash}"[:300])
    assert crashed == [], "\n".join(crashed)
