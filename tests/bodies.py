"""Job bodies (Vertex REST JSON, as the API reference spells them) for tests.

The body is the job: tests build bodies with these small helpers and hand them to the
resources, the backends and the rules unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainer.metric import HYPERTUNE_METRIC_TAG

IMAGE = "us-central1-docker.pkg.dev/p/training/trainer@sha256:" + "ab" * 32
STANDIN = str(Path(__file__).with_name("local") / "standin.py")
"""A stand-in trainer that ends in a second (``--sleep``, ``--exit-code``, ``--steps``...)."""


def pool(
    machine_type: str = "n1-standard-4",
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    *,
    replicas: int = 1,
    image: str = IMAGE,
    command: Sequence[str] = (),
    args: Sequence[str] = (),
    env: Mapping[str, str] | Sequence[tuple[str, str]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A ``WorkerPoolSpec``; ``extra`` adds any other field (``diskSpec=...``)."""
    machine: dict[str, Any] = {"machineType": machine_type}
    if accelerator_type is not None:
        machine["acceleratorType"] = accelerator_type
        machine["acceleratorCount"] = accelerator_count
    container: dict[str, Any] = {"imageUri": image}
    if command:
        container["command"] = list(command)
    if args:
        container["args"] = list(args)
    pairs = list(env.items()) if isinstance(env, Mapping) else list(env)
    if pairs:
        container["env"] = [{"name": k, "value": v} for k, v in pairs]
    return {
        "machineSpec": machine,
        "replicaCount": str(replicas),
        "containerSpec": container,
        **extra,
    }


def job_spec(
    *pools: dict[str, Any],
    output: str | None = "gs://p-bucket/jobs/test",
    timeout_seconds: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ``CustomJobSpec`` over ``pools`` (``{}`` is an empty placeholder pool)."""
    spec: dict[str, Any] = {"workerPoolSpecs": list(pools)}
    if output is not None:
        spec["baseOutputDirectory"] = {"outputUriPrefix": output}
    if timeout_seconds is not None:
        spec["scheduling"] = {"timeout": f"{timeout_seconds}s"}
    spec.update(extra)
    return spec


def custom_job(
    *pools: dict[str, Any],
    display_name: str = "test-job",
    labels: Mapping[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    **spec_fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "displayName": display_name,
        "jobSpec": spec if spec is not None else job_spec(*pools, **spec_fields),
    }
    if labels:
        body["labels"] = dict(labels)
    return body


def double(pid: str, low: float, high: float, scale: str = "UNIT_LINEAR_SCALE") -> dict[str, Any]:
    return {
        "parameterId": pid,
        "doubleValueSpec": {"minValue": low, "maxValue": high},
        "scaleType": scale,
    }


def integer(pid: str, low: int, high: int, scale: str = "UNIT_LINEAR_SCALE") -> dict[str, Any]:
    return {
        "parameterId": pid,
        "integerValueSpec": {"minValue": str(low), "maxValue": str(high)},
        "scaleType": scale,
    }


def discrete(pid: str, values: Sequence[float]) -> dict[str, Any]:
    return {"parameterId": pid, "discreteValueSpec": {"values": [float(v) for v in values]}}


def categorical(
    pid: str, values: Sequence[str], **conditional: list[dict[str, Any]]
) -> dict[str, Any]:
    """``conditional``: parent value -> child parameters searched when the parent has it."""
    body: dict[str, Any] = {"parameterId": pid, "categoricalValueSpec": {"values": list(values)}}
    if conditional:
        body["conditionalParameterSpecs"] = [
            {"parentCategoricalValues": {"values": [value]}, "parameterSpec": child}
            for value, children in conditional.items()
            for child in children
        ]
    return body


def study(
    *parameters: dict[str, Any],
    metrics: Sequence[tuple[str, str]] = ((HYPERTUNE_METRIC_TAG, "MAXIMIZE"),),
    **extra: Any,
) -> dict[str, Any]:
    return {
        "metrics": [{"metricId": m, "goal": g} for m, g in metrics],
        "parameters": list(parameters),
        **extra,
    }


def tuning_job(
    trial_job: dict[str, Any],
    study_spec: dict[str, Any],
    *,
    max_trials: int = 6,
    parallel: int = 2,
    display_name: str = "test-study",
    labels: Mapping[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "displayName": display_name,
        "studySpec": study_spec,
        "maxTrialCount": max_trials,
        "parallelTrialCount": parallel,
        "trialJobSpec": trial_job,
        **extra,
    }
    if labels:
        body["labels"] = dict(labels)
    return body


def cassava(accelerator: str | None = "NVIDIA_TESLA_V100", workers: int = 1) -> dict[str, Any]:
    """The MWMS codelab: chief + workers on n1-standard-8, 1 V100 each (or CPU only)."""
    count = 1 if accelerator else 0
    args = ("--workload", "cassava", "--epochs", "5")
    return custom_job(
        pool("n1-standard-8", accelerator, count, args=args),
        pool("n1-standard-8", accelerator, count, args=args, replicas=workers),
        display_name="multiworker-cassava",
        labels={"codelab": "cassava"},
        output="gs://p-bucket/jobs/cassava",
        serviceAccount="training@p.iam.gserviceaccount.com",
    )


def horses_or_humans(max_trials: int = 6, parallel: int = 2) -> dict[str, Any]:
    """The tuning codelab: 2 V100 per trial, learning rate / momentum / units."""
    return tuning_job(
        job_spec(
            pool("n1-standard-4", "NVIDIA_TESLA_V100", 2, args=("--workload", "horses_or_humans")),
            output="gs://p-bucket/jobs/horses-humans",
        ),
        study(
            double("learning_rate", 0.001, 1, "UNIT_LOG_SCALE"),
            double("momentum", 0, 1),
            discrete("num_units", (64, 128, 512)),
        ),
        max_trials=max_trials,
        parallel=parallel,
        display_name="horses-humans",
    )


def standin(body: Mapping[str, Any], *args: str) -> dict[str, Any]:
    """``body`` as this machine runs it in a second: each pool on CPU, its replicas the
    stand-in trainer with ``args``."""
    ran = copy.deepcopy(dict(body))
    for spec in (ran.get("trialJobSpec") or ran["jobSpec"])["workerPoolSpecs"]:
        spec["machineSpec"] = {"machineType": spec["machineSpec"]["machineType"]}
        spec["containerSpec"] |= {"command": ["python", STANDIN], "args": list(args)}
    return ran
