"""The deployments file of the local twin and the traffic split: stdlib only."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from predictor.deployments import Deployment, DeploymentsError, TrafficSplit, read_deployments


def entry(deployed: str, percent: int, **changes: Any) -> dict[str, Any]:
    return {
        "deployedModelId": deployed,
        "model": "projects/local/locations/local/models/m",
        "modelVersionId": "1",
        "modelDir": f"/models/{deployed}",
        "trafficPercent": percent,
        **changes,
    }


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "deployments.json"
    path.write_text(json.dumps(document))
    return path


def test_a_valid_file_reads_into_deployments(tmp_path: Path) -> None:
    (first, second) = read_deployments(write(tmp_path, [entry("a", 70), entry("b", 30)]))
    assert first == Deployment("a", "projects/local/locations/local/models/m", "1", "/models/a", 70)
    assert second.metadata() == {
        "deployedModelId": "b",
        "model": "projects/local/locations/local/models/m",
        "modelVersionId": "1",
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected a non-empty JSON list"),
        ({"a": 1}, "expected a non-empty JSON list"),
        ([entry("a", 60), entry("b", 30)], "trafficPercent sums to 90; it must sum to 100"),
        ([entry("a", 50), entry("a", 50)], "deployedModelId values repeat: ['a', 'a']"),
        ([entry("a", 101)], "[0].trafficPercent: expected an integer from 0 to 100, got 101"),
        ([entry("a", 100, modelDir="")], "[0].modelDir: expected a string, got ''"),
        ([{"deployedModelId": "a"}], "[0]: expected an object with ['deployedModelId', 'model'"),
        ([entry("a", 100, maxBatchSize=0)], "[0].maxBatchSize: expected an integer of at least 1"),
        ([entry("a", 100, maxQueued=2.5)], "[0].maxQueued: expected an integer of at least 1"),
        ([entry("a", 100, maxWaitMs=-1)], "[0].maxWaitMs: expected a number of milliseconds"),
        ([entry("a", 100, batchThreads=0)], "[0].batchThreads: expected an integer of at least 1"),
        (
            [entry("a", 100, maxWait=1)],
            "and optionally ['batchThreads', 'maxBatchSize', 'maxQueued', 'maxWaitMs']",
        ),
    ],
)
def test_a_bad_file_is_refused_with_what_is_wrong(
    tmp_path: Path, document: Any, message: str
) -> None:
    with pytest.raises(DeploymentsError) as raised:
        read_deployments(write(tmp_path, document))
    assert message in str(raised.value)


def test_a_deployment_may_set_its_batching(tmp_path: Path) -> None:
    document = [entry("a", 100, maxBatchSize=32, maxWaitMs=0.5, maxQueued=128, batchThreads=3)]
    (d,) = read_deployments(write(tmp_path, document))
    assert (d.max_batch_size, d.max_wait_ms, d.max_queued, d.batch_threads) == (32, 0.5, 128, 3)


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deployments.json"
    path.write_text("[")
    with pytest.raises(DeploymentsError, match=r"deployments\.json: Expecting value"):
        read_deployments(path)


def test_the_split_follows_the_percentages_and_skips_zero() -> None:
    deployments = [
        Deployment("a", "m", "1", "/a", 75),
        Deployment("b", "m", "2", "/b", 25),
        Deployment("c", "m", "3", "/c", 0),
    ]
    split = TrafficSplit(deployments, random.Random(7))
    counts = Counter(split.choose().deployed_model_id for _ in range(4000))
    assert set(counts) == {"a", "b"}
    assert 0.72 < counts["a"] / 4000 < 0.78
