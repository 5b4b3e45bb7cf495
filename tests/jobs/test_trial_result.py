"""A tuning job's trial outputs are typed: ``TrialResult`` is the row the backends store
and the resource outputs, key for key."""

from __future__ import annotations

import typing

import pulumi

import vertex_training as vt
from vertex_training.jobs import resources
from vertex_training.jobs.model import TrialRecord, TrialResult


def test_the_trial_outputs_are_typed() -> None:
    # The resource module's own names (others there exist only for the type checker).
    namespace = vars(resources)
    hints = {
        name: eval(vt.HyperparameterTuningJob.__annotations__[name], namespace)
        for name in ("trials", "best_trial")
    }

    assert hints["trials"] == pulumi.Output[list[TrialResult]]
    assert hints["best_trial"] == pulumi.Output[TrialResult | None]
    assert vt.TrialResult is TrialResult


def test_the_stored_trial_row_has_exactly_the_typed_keys_and_reads_back() -> None:
    record = TrialRecord(
        trial_id="3",
        state="SUCCEEDED",
        parameters={"learning_rate": 0.01, "optimizer": "sgd"},
        final_metrics={"accuracy": 0.93},
        early_stopped=False,
        start_time="2026-11-24T10:00:00Z",
        end_time="2026-11-24T10:05:00Z",
    )

    row = record.to_json()

    assert set(row) == set(typing.get_type_hints(TrialResult))
    assert TrialRecord(**row) == record
