"""What the job backend reports of a submitted job.

No Pulumi, no protos and no network here: the backend builds the records from the
service's own messages, and the resources read them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict


class JobKind(enum.StrEnum):
    """The job's collection in its resource name (``projects/P/locations/L/<kind>/ID``)."""

    CUSTOM_JOB = "customJobs"
    HYPERPARAMETER_TUNING_JOB = "hyperparameterTuningJobs"

    @property
    def noun(self) -> str:
        """The kind as the protos and their clients spell it: ``custom_job``
        (``get_custom_job``, ``custom_job=``), ``hyperparameter_tuning_job``."""
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in self.value[:-1])


class JobState(enum.StrEnum):
    """The Vertex ``JobState`` names without the ``JOB_STATE_`` prefix."""

    QUEUED = "QUEUED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    PAUSED = "PAUSED"
    EXPIRED = "EXPIRED"
    UPDATING = "UPDATING"
    PARTIALLY_SUCCEEDED = "PARTIALLY_SUCCEEDED"

    @property
    def is_terminal(self) -> bool:
        return self in (
            JobState.SUCCEEDED,
            JobState.FAILED,
            JobState.CANCELLED,
            JobState.EXPIRED,
            JobState.PARTIALLY_SUCCEEDED,
        )


ParameterValue = float | str
"""A trial's parameter value as the service reports it: numbers are doubles (a struct
``Value``), categories strings. Whole-number doubles stay doubles (``64.0``)."""


class TrialResult(TypedDict):
    """One trial as a tuning job's ``trials`` and ``best_trial`` outputs give it (the
    Vertex ``Trial`` message's fields, snake_case)."""

    trial_id: str
    """Vertex trial ids are strings counting from "1"."""
    state: str
    """REQUESTED, ACTIVE, STOPPING, SUCCEEDED or INFEASIBLE."""
    parameters: dict[str, ParameterValue]
    """The trial's value of each parameter, by parameter id."""
    final_metrics: dict[str, float]
    """The final measurement's metrics, by metric id."""
    infeasible_reason: str | None
    early_stopped: bool
    """Stopped by the study's automated stopping before its last step."""
    start_time: str | None
    """RFC 3339."""
    end_time: str | None


@dataclass(frozen=True)
class TrialRecord:
    """One trial as a backend reports it: the fields of ``TrialResult``, which
    ``dataclasses.asdict`` gives (the stack output's trial row)."""

    trial_id: str
    state: str
    parameters: Mapping[str, ParameterValue] = field(default_factory=dict)
    final_metrics: Mapping[str, float] = field(default_factory=dict)
    infeasible_reason: str | None = None
    early_stopped: bool = False
    start_time: str | None = None
    end_time: str | None = None


def best_trial(trials: Sequence[TrialRecord], metric_id: str, maximize: bool) -> TrialRecord | None:
    """The SUCCEEDED trial with the best final value of the study's first metric
    (``metric_id``) for its goal; the earlier trial wins a tie."""
    scored = [
        t for t in trials if t.state == "SUCCEEDED" and t.final_metrics.get(metric_id) is not None
    ]
    if not scored:
        return None
    sign = 1.0 if maximize else -1.0

    def key(trial: TrialRecord) -> tuple[float, int]:
        trial_number = int(trial.trial_id) if trial.trial_id.isdigit() else 0
        return sign * trial.final_metrics[metric_id], -trial_number

    return max(scored, key=key)


@dataclass(frozen=True)
class JobRecord:
    """What a backend knows of one submitted job."""

    name: str
    """Full resource name, ``projects/P/locations/L/customJobs/ID``."""
    kind: JobKind
    display_name: str
    state: JobState
    labels: tuple[tuple[str, str], ...] = ()
    create_time: str | None = None
    """RFC 3339 timestamps."""
    start_time: str | None = None
    end_time: str | None = None
    error_message: str | None = None
    model_dir: str | None = None
    trials: tuple[TrialRecord, ...] = ()
    best_trial: TrialRecord | None = None
    web_access_uris: Mapping[str, str] = field(default_factory=dict)
    console_url: str | None = None
    """Where a person looks at the job; the backend decides (None: nowhere)."""

    @property
    def job_id(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def model_dir(base: str, trial_id: str | None) -> str | None:
    """AIP_MODEL_DIR as Vertex reports a job's model, ``<base>/model`` (a trial's:
    ``<base>/<trial id>/model``); None without a base output directory."""
    if not base:
        return None
    root = base.rstrip("/")
    return f"{root}/{trial_id}/model" if trial_id else f"{root}/model"


def job_state(name: str) -> JobState:
    """A ``JobState`` from a Vertex state name, with or without the ``JOB_STATE_`` prefix;
    a state this code does not know yet reads as PENDING (not terminal: keep polling)."""
    bare = name.removeprefix("JOB_STATE_")
    return JobState(bare) if bare in JobState.__members__ else JobState.PENDING


__all__ = [
    "JobKind",
    "JobRecord",
    "JobState",
    "ParameterValue",
    "TrialRecord",
    "TrialResult",
    "best_trial",
    "job_state",
    "model_dir",
]
