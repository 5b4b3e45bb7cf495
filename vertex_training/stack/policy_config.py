"""The policy pack's config for a stack (``make preview|up POLICY=1``).

The pack reads no file of the project it judges (it runs on a platform team's program as
on this one): the stack's ``budget`` reaches it through the pack config written here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["BUDGET_POLICIES", "policy_config", "write_policy_config"]

BUDGET_POLICIES = ("budget", "budget-prod")
"""The pack's policies that judge the stack's estimate against its budget."""


def policy_config(stack_file: Path, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (e.g. ``policy/config/<stack>.json``) with the stack's ``budget`` given to
    the budget policies that do not set their own."""
    from vertex_training.stack.config import load_stack_config

    config = {name: dict(settings) for name, settings in (base or {}).items()}
    budget = load_stack_config(stack_file).budget
    if budget is not None:
        for name in BUDGET_POLICIES:
            config.setdefault(name, {}).setdefault("budget", budget)
    return config


def write_policy_config(stack_file: Path, base_file: Path | None, out: Path) -> None:
    """``policy_config`` of ``base_file`` (a JSON pack config, or none) into ``out``."""
    base = json.loads(base_file.read_text(encoding="utf-8")) if base_file else None
    out.write_text(json.dumps(policy_config(stack_file, base), indent=2) + "\n", encoding="utf-8")
