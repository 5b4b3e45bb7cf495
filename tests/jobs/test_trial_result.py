"""A tuning job's trial outputs are typed: ``TrialResult`` is the row the backends store
and the resource outputs, key for key."""

from __future__ import annotations

import dataclasses
import typing

from pulumi.runtime.rpc import translate_output_properties

import vertex_training as vt
from vertex_training.jobs import resources
from vertex_training.jobs.records import JobKind, JobRecord, JobState, TrialRecord, TrialResult


def test_the_trial_outputs_are_typed_and_pulumi_can_build_them() -> None:
    annotations = vt.HyperparameterTuningJob.__annotations__
    assert annotations["trials"] == "pulumi.Output[list[TrialResult]]"
    assert annotations["best_trial"] == "pulumi.Output[TrialResult | None]"
    assert vt.TrialResult is TrialResult

    # Pulumi builds each output from its annotation at run time (the engine test of the
    # local stack failed here once): a trial row must come through as the dict it is.
    namespace = vars(resources)
    row = dataclasses.asdict(
        TrialRecord(trial_id="1", state="SUCCEEDED", final_metrics={"accuracy": 1.0})
    )
    for name, value in (("trials", [row]), ("best_trial", row)):
        typ = eval(annotations[name], namespace).__args__[0]
        built = translate_output_properties(
            value, lambda key: key, typ, transform_using_type_metadata=True
        )
        assert built == value


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

    row = resources.JobProvider(JobKind.HYPERPARAMETER_TUNING_JOB).outputs(
        JobRecord("n", JobKind.HYPERPARAMETER_TUNING_JOB, "", JobState.RUNNING, trials=(record,)),
        {},
    )["trials"][0]

    assert set(row) == set(typing.get_type_hints(TrialResult))
    assert TrialRecord(**row) == record
