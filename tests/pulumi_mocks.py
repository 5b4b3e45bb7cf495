"""Run Pulumi code under ``pulumi.runtime.set_mocks`` and record what it registered.

``run_pulumi`` evaluates a function (a component's construction, or the whole program
via ``run_program``) against a fresh mock monitor and returns every registration with
its inputs (camelCase keys, as the engine sees them) and its resource options
(parent, protect, retain on delete, ignore_changes, dependencies), plus the stack
outputs. Each call resets the Pulumi settings, so tests do not leak into each other.
"""

from __future__ import annotations

import hashlib
import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from tests import PROJECT_ROOT

MOCK_ACCESS_TOKEN = "ya29.mock-access-token"


@dataclass(frozen=True)
class Registration:
    """One RegisterResource call, as the engine would have received it."""

    type: str
    name: str
    urn: str
    custom: bool
    parent: str
    inputs: Mapping[str, Any]
    protect: bool
    retain_on_delete: bool
    ignore_changes: tuple[str, ...]
    dependencies: tuple[str, ...]
    """URNs from ``depends_on`` (components expanded to their children by the SDK)."""


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that also keeps the resource options of every registration."""

    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    custom=bool(request.custom),
                    parent=request.parent,
                    inputs=rpc.deserialize_properties(request.object),
                    protect=bool(request.protect),
                    retain_on_delete=bool(request.retainOnDelete),
                    ignore_changes=tuple(request.ignoreChanges),
                    dependencies=tuple(request.dependencies),
                )
            )
        return response


class PlatformMocks(pulumi_mocks.Mocks):
    """Echo inputs and fill in the computed outputs the platform reads."""

    def __init__(self) -> None:
        self.calls: list[pulumi_mocks.MockCallArgs] = []

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict]:
        state = dict(args.inputs)
        resource_id = f"{args.name}-id"
        if args.typ == "gcp:storage/bucket:Bucket":
            state["url"] = f"gs://{state['name']}"
        elif args.typ == "gcp:serviceaccount/account:Account":
            email = f"{state['accountId']}@{state['project']}.iam.gserviceaccount.com"
            state["email"] = email
            state["member"] = f"serviceAccount:{email}"
            state["name"] = f"projects/{state['project']}/serviceAccounts/{email}"
        elif args.typ == "gcp:artifactregistry/repository:Repository":
            state["name"] = state["repositoryId"]
        elif args.typ == "gcp:workbench/instance:Instance":
            state["proxyUri"] = f"{state['name']}-dot-{state['location'][:-2]}.notebooks.example"
        elif args.typ == "gcp:vertex/aiTensorboard:AiTensorboard":
            # The provider reports the instance id alone; its resource id is the full path.
            state["name"] = "1234567890"
            resource_id = (
                f"projects/{state['project']}/locations/{state['region']}/tensorboards/1234567890"
            )
        elif args.typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
            state["name"] = f"projects/{state['project']}/roles/{state['roleId']}"
        elif args.typ == "docker-build:index:Image":
            digest = hashlib.sha256(repr(state.get("tags")).encode()).hexdigest()
            state["digest"] = f"sha256:{digest}"
        return resource_id, state

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        self.calls.append(args)
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"accessToken": MOCK_ACCESS_TOKEN, "project": "mock", "region": ""}, []
        return {}, []


@dataclass
class PulumiRun:
    registrations: list[Registration]
    outputs: dict[str, Any] = field(default_factory=dict)
    calls: list[pulumi_mocks.MockCallArgs] = field(default_factory=list)

    def of_type(self, resource_type: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == resource_type]

    def one(self, resource_type: str) -> Registration:
        found = self.of_type(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, got {[r.name for r in found]}"
        return found[0]

    def named(self, name: str) -> Registration:
        found = [r for r in self.registrations if r.name == name]
        assert len(found) == 1, f"expected one resource named {name}, got {len(found)}"
        return found[0]

    def children_of(self, parent: Registration) -> list[Registration]:
        return [r for r in self.registrations if r.parent == parent.urn]


def run_pulumi(
    fn: Callable[[], Any],
    *,
    stack: str = "test",
    config: Mapping[str, str] | None = None,
    monitor_sink: list[RecordingMonitor] | None = None,
    project: str | None = None,
    secret_keys: list[str] | None = None,
) -> PulumiRun:
    """Evaluate ``fn`` under fresh mocks; ``config`` is the flat map the CLI would pass.

    ``monitor_sink`` receives the monitor before ``fn`` runs, so a test can still look
    at what was registered when ``fn`` raises. ``project`` defaults to this repository's
    (looked up only then, so that a benchmark's floor runs these mocks with no code of ours).
    ``secret_keys``: the config keys the CLI would say hold a secret.
    """
    if project is None:
        from vertex_training.stack.config import PROJECT_NAME

        project = PROJECT_NAME
    settings.reset_options(project=project, stack=stack)
    set_all_config(dict(config or {}), list(secret_keys or []))
    mocks = PlatformMocks()
    monitor = RecordingMonitor(mocks)
    if monitor_sink is not None:
        monitor_sink.append(monitor)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()

    def program() -> None:
        result = fn()
        if result is not None:
            _sync_await(pulumi.Output.from_input(result).future())

    try:
        _sync_await(run_pulumi_func(program))
        root = settings.get_root_resource()
        outputs: dict[str, Any] = {}
        if root is not None:
            raw_outputs = getattr(root, "outputs", {})
            resolved: Any = _sync_await(pulumi.Output.from_input(raw_outputs).future())
            outputs = dict(resolved or {})
    finally:
        # Later tests must not see this run's config.
        set_all_config({}, [])
    return PulumiRun(list(monitor.registrations), dict(outputs), list(mocks.calls))


def stack_file_config(stack_file: Path) -> dict[str, str]:
    """A stack file's config as the CLI passes it to a program: flat, values as text."""
    import json

    import yaml

    document = yaml.safe_load(stack_file.read_text(encoding="utf-8")) or {}
    flat: dict[str, str] = {}
    for key, value in (document.get("config") or {}).items():
        if isinstance(value, bool):
            flat[str(key)] = "true" if value else "false"
        elif isinstance(value, str):
            flat[str(key)] = value
        else:
            flat[str(key)] = json.dumps(value)
    return flat


def run_program(
    stack: str,
    config: Mapping[str, str],
    monitor_sink: list[RecordingMonitor] | None = None,
    secret_keys: list[str] | None = None,
) -> PulumiRun:
    """Evaluate ``__main__.py`` the way the language host does, under mocks."""
    return run_pulumi(
        lambda: runpy.run_path(str(PROJECT_ROOT / "__main__.py"), run_name="__main__"),
        stack=stack,
        config=config,
        monitor_sink=monitor_sink,
        secret_keys=secret_keys,
    )
