"""The job provider's diff, called directly: what replaces a job and what updates it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bodies import cassava
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider

PROVIDER = JobProvider(JobKind.CUSTOM_JOB)


def state(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "spec": spec,
        "backend_target": {"kind": "local", "local_root": "/tmp/root"},
        "identity": "vertex-training/dev/cassava",
        "wait": True,
        **extra,
    }


@pytest.mark.parametrize(
    "edit",
    [
        {"labels": {"codelab": "cassava", "team": "vision"}},
        {"labels": {}},
        {"displayName": "cassava, renamed"},
    ],
    ids=["label-added", "labels-removed", "display-name"],
)
def test_metadata_edits_are_updates(edit: dict[str, Any]) -> None:
    diff = PROVIDER.diff("job", state(cassava()), state({**cassava(), **edit}))
    assert diff.changes is True and diff.replaces == []


def test_run_fields_replace_with_or_without_metadata_edits() -> None:
    olds = state(cassava())
    assert PROVIDER.diff("job", olds, state(cassava(workers=2))).replaces == ["spec"]
    both = {**cassava(workers=2), "displayName": "renamed"}
    assert PROVIDER.diff("job", olds, state(both)).replaces == ["spec"]
    moved = {**state(cassava()), "identity": "vertex-training/dev/other"}
    assert PROVIDER.diff("job", olds, moved).replaces == ["identity"]


def test_no_edit_no_change() -> None:
    diff = PROVIDER.diff("job", state(cassava()), state(cassava()))
    assert diff.changes is False and diff.replaces == []
