"""Where the runner's jobs come from: a stack's declared jobs, or one spec file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_training.jobs.records import JobKind


@dataclass(frozen=True)
class LocalJob:
    """One job to run: its kind and its Vertex REST body, as a job resource would send it."""

    kind: JobKind
    body: dict[str, Any]

    @property
    def display_name(self) -> str:
        return str(self.body.get("displayName", ""))


class StackJobsError(ValueError):
    """The stack's jobs cannot be loaded; the message says which and why."""


@dataclass(frozen=True)
class StackJobs:
    stack: str
    local_root: Path
    jobs: tuple[tuple[str, LocalJob], ...]

    def select(self, names: Sequence[str]) -> list[tuple[str, LocalJob]]:
        if not names:
            return list(self.jobs)
        known = [n for n, _ in self.jobs]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise StackJobsError(
                f"--job {', '.join(unknown)}: not declared in stack {self.stack!r}; "
                f"declared: {', '.join(known) or '(none)'}"
            )
        return [(n, s) for n, s in self.jobs if n in names]


def load_stack_jobs(
    stack: str, stacks_dir: Path | None = None, local_root: Path | None = None
) -> StackJobs:
    """Validate the stack file as the Pulumi program would, then build its job specs.

    ``local_root`` replaces the stack's ``localRoot`` (job state and the local bucket).
    """
    from vertex_training._project import project_root
    from vertex_training.stack.config import load_stack_config

    stack_file = (stacks_dir or project_root() / "stacks") / f"Pulumi.{stack}.yaml"
    if not stack_file.is_file():
        raise StackJobsError(f"no stack file {stack_file}; stacks are stacks/Pulumi.<stack>.yaml")
    config = load_stack_config(stack_file)
    if local_root is not None:
        general = config.general.model_copy(update={"local_root": str(local_root.resolve())})
        config = config.model_copy(update={"general": general})
    if config.environment.is_cloud:
        raise StackJobsError(
            f"stack {stack!r} is a cloud stack ({config.environment.value}); the local runner "
            "runs local stacks only"
        )
    return StackJobs(stack, config.local_root, tuple(_declared_jobs(config)))


def _declared_jobs(config: Any) -> list[tuple[str, LocalJob]]:
    """The stack's declared jobs on the same local platform the Pulumi program builds
    (bucket directory, ``<image>:local`` image, platform labels), so both run the same
    bodies."""
    from vertex_training.platform.platform import platform_labels

    declared = getattr(getattr(config, "jobs", None), "jobs", None)
    if declared is None:
        raise StackJobsError(
            "this checkout's stack config has no 'jobs' section yet "
            "(vertex_training/stack/config.py, vertex_training/jobs/declarations.py); "
            "run one spec with --spec FILE"
        )
    labels = platform_labels(config.environment.value, config.stack, {})
    return [
        (
            job.name,
            LocalJob(
                job.job_kind,
                job.to_body(
                    image=f"{config.image.image_name}:local",
                    bucket_url=str(config.local_root / "bucket"),
                    service_account=None,
                    labels=labels,
                    local=True,
                ),
            ),
        )
        for job in declared
    ]


def load_spec_file(path: Path) -> LocalJob:
    """A CustomJob or HyperparameterTuningJob body in the Vertex REST JSON form."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise StackJobsError(f"{path}: expected a JSON object (a CustomJob or tuning job body)")
    kind = (
        JobKind.HYPERPARAMETER_TUNING_JOB
        if any(k in data for k in ("trialJobSpec", "trial_job_spec", "studySpec", "study_spec"))
        else JobKind.CUSTOM_JOB
    )
    return LocalJob(kind, data)
