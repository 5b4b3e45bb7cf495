"""``python -m vertex_training.stack policy-config``: the stack's budget reaches the policy
pack through its config (the pack reads no stack file), next to the stack's own pack
config where it has one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import PROJECT_ROOT
from vertex_training.stack.__main__ import main
from vertex_training.stack.engine import EXIT_USAGE


def _project(tmp_path: Path, budget: int | None) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: vertex-training\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    local = (PROJECT_ROOT / "stacks" / "Pulumi.local.yaml").read_text(encoding="utf-8")
    extra = f"  vertex-training:budget: {budget}\n" if budget is not None else ""
    (tmp_path / "stacks" / "Pulumi.local.yaml").write_text(
        local.replace("config:\n", "config:\n" + extra, 1), encoding="utf-8"
    )
    return tmp_path


def _policy_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> dict[str, object]:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "policy-config.json"
    assert main(["policy-config", "--stack", "local", "--out", str(out), *extra]) == 0
    config: dict[str, object] = json.loads(out.read_text())
    return config


def test_the_stack_budget_goes_to_both_budget_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, budget=25)

    assert _policy_config(tmp_path, monkeypatch) == {
        "budget": {"budget": 25.0},
        "budget-prod": {"budget": 25.0},
    }


def test_the_base_config_is_kept_and_its_own_budget_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, budget=25)
    base = tmp_path / "base.json"
    base.write_text(
        json.dumps(
            {
                "required-labels": {"keys": ["app"]},
                "budget": {"workbenchHours": 2},
                "budget-prod": {"budget": 5},
            }
        )
    )

    assert _policy_config(tmp_path, monkeypatch, "--base", str(base)) == {
        "required-labels": {"keys": ["app"]},
        "budget": {"workbenchHours": 2, "budget": 25.0},
        "budget-prod": {"budget": 5},
    }


def test_no_budget_adds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, budget=None)

    assert _policy_config(tmp_path, monkeypatch) == {}


def test_a_missing_stack_or_a_bad_budget_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, budget=-3)
    monkeypatch.chdir(tmp_path)
    out = str(tmp_path / "out.json")

    assert main(["policy-config", "--stack", "nope", "--out", out]) == EXIT_USAGE
    assert "no stack 'nope': " in capsys.readouterr().err
    assert main(["policy-config", "--stack", "local", "--out", out]) == EXIT_USAGE
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "budget" in error and "Traceback" not in error
    assert not Path(out).exists()
