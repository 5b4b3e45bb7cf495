"""Job bodies for estimates: Vertex REST JSON, as the job resources carry them."""

from __future__ import annotations

from typing import Any


def pool(machine: str, replicas: int = 1, gpu: str | None = None, count: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine}
    if gpu:
        spec["acceleratorType"] = gpu
        spec["acceleratorCount"] = count
    return {
        "machineSpec": spec,
        "replicaCount": str(replicas),
        "containerSpec": {"imageUri": "r/i@sha256:" + "0" * 64},
    }


def custom_job(
    *pools: dict[str, Any], timeout: str | None = "7200s", strategy: str | None = None
) -> dict[str, Any]:
    scheduling: dict[str, Any] = {}
    if timeout:
        scheduling["timeout"] = timeout
    if strategy:
        scheduling["strategy"] = strategy
    spec: dict[str, Any] = {"workerPoolSpecs": list(pools)}
    if scheduling:
        spec["scheduling"] = scheduling
    return {"displayName": "job", "jobSpec": spec}


def tuning_job(
    trial_pool: dict[str, Any], trials: int, parallel: int, timeout: str | None = "3600s"
) -> dict[str, Any]:
    trial = custom_job(trial_pool, timeout=timeout)["jobSpec"]
    return {
        "displayName": "study",
        "maxTrialCount": trials,
        "parallelTrialCount": parallel,
        "studySpec": {
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 1}}
            ],
        },
        "trialJobSpec": trial,
    }
