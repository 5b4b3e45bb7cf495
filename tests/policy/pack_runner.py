"""Runs in the policy pack's own environment (policy/venv): every policy of the real pack
on resources from a JSON file, printing {stack: {policy: [violations]}} as JSON.

argv: resources.json config.json. resources.json: {stack: [{type, props, urn, name}]};
config.json: {run: {"stack": stack, "config": {policy name: policy config}}}. A policy that
cannot run on values not known in a preview reports ``unknown: <message>``, as the engine
does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)

from policy.engine_values import UnknownValueError, checking_proxy
from policy.pack import policies


def options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], None, [], None)  # type: ignore[arg-type]


def main() -> None:
    stacks = json.loads(Path(sys.argv[1]).read_text())
    configs = json.loads(Path(sys.argv[2]).read_text())
    out: dict[str, dict[str, list[str]]] = {}
    meta = {
        p.name: {
            "level": p.enforcement_level.value if p.enforcement_level else None,
            "config": sorted(p.config_schema.properties) if p.config_schema else None,
            "stack": not isinstance(p, ResourceValidationPolicy),
        }
        for p in policies()
    }
    for run, spec in configs.items():
        resources = stacks[spec["stack"]]
        found: dict[str, list[str]] = {}
        for policy in policies():
            config = spec["config"].get(policy.name, {})
            messages: list[str] = []

            def report(
                message: str, urn: str | None = None, messages: list[str] = messages
            ) -> None:
                messages.append(message)

            try:
                if isinstance(policy, ResourceValidationPolicy):
                    for r in resources:
                        # Read-only proxies that raise on an unknown value, as the engine's.
                        props = checking_proxy(r["props"])
                        args = ResourceValidationArgs(
                            r["type"], props, r["urn"], r["name"], options(), None, config
                        )
                        policy.validate(args, report)
                else:
                    items = [
                        PolicyResource(
                            r["type"],
                            checking_proxy(r["props"]),
                            r["urn"],
                            r["name"],
                            options(),
                            None,
                            None,
                            [],
                            {},
                        )
                        for r in resources
                    ]
                    policy.validate(StackValidationArgs(items, config), report)
            except UnknownValueError as error:
                messages.append(f"unknown: {error.message}")
            if messages:
                found[policy.name] = messages
        out[run] = found
    # Which modules of these families the pack loaded, once every policy has run.
    families = (
        "vertex_training.cost.estimate",
        "vertex_training.stack",
        "vertex_training._project",
    )
    loaded = {
        f: sorted(m for m in sys.modules if m == f or m.startswith(f + ".")) for f in families
    }
    print(json.dumps({"policies": meta, "runs": out, "loaded": loaded}))


if __name__ == "__main__":
    main()
