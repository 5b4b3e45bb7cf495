"""The role table: one parser for TF_CONFIG and CLUSTER_SPEC (no TensorFlow needed)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainer.cluster import ClusterConfigError, parse_cluster_role, require_all_reduce_cluster

TWO = ["h0:2222", "h1:2222"]


def tf_config(cluster: dict[str, list[str]], task_type: str, index: int, **task: object) -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index, **task}})


def tf_env(cluster: dict[str, list[str]], task_type: str, index: int) -> dict[str, str]:
    return {"TF_CONFIG": tf_config(cluster, task_type, index)}


WITH_CHIEF = {"chief": TWO[:1], "worker": TWO[1:]}
WITH_MASTER = {"master": TWO[:1], "worker": TWO[1:]}
WORKERS = {"worker": TWO}
CHIEF_ONLY = {"chief": TWO[:1]}


@pytest.mark.parametrize(
    ("env", "task_type", "index", "is_chief", "in_cluster", "workers"),
    [
        pytest.param({}, "chief", 0, True, True, 1, id="no TF_CONFIG: single replica is chief"),
        pytest.param(tf_env(WITH_CHIEF, "chief", 0), "chief", 0, True, True, 2, id="chief"),
        pytest.param(
            tf_env(WITH_MASTER, "master", 0), "chief", 0, True, True, 2, id="master is the chief"
        ),
        pytest.param(
            tf_env(WORKERS, "worker", 0), "worker", 0, True, True, 2, id="worker 0 without chief"
        ),
        pytest.param(
            tf_env(WITH_CHIEF, "worker", 0), "worker", 0, False, True, 2, id="worker 0 with a chief"
        ),
        pytest.param(tf_env(WORKERS, "worker", 1), "worker", 1, False, True, 2, id="worker 1"),
        pytest.param(
            tf_env({"chief": TWO[:1], "ps": TWO[1:]}, "ps", 0), "ps", 0, False, True, 1, id="ps"
        ),
        pytest.param(
            tf_env({**WITH_CHIEF, "evaluator": ["h2:1"]}, "evaluator", 0),
            "evaluator",
            0,
            False,
            False,
            2,
            id="evaluator is not in the training cluster",
        ),
        pytest.param(
            tf_env(CHIEF_ONLY, "chief", 0), "chief", 0, True, True, 1, id="Vertex single replica"
        ),
    ],
)
def test_role_table(
    env: dict[str, str], task_type: str, index: int, is_chief: bool, in_cluster: bool, workers: int
) -> None:
    role = parse_cluster_role(env)
    assert (role.task_type, role.task_index) == (task_type, index)
    assert role.is_chief is is_chief
    assert role.in_training_cluster is in_cluster
    assert role.num_workers == workers
    assert "evaluator" not in role.cluster


WORKERPOOLS = {
    "workerpool0": ["c:1"],
    "workerpool1": ["w0:1", "w1:1"],
    "workerpool2": ["p:1"],
    "workerpool3": ["e:1"],
}


@pytest.mark.parametrize(
    ("pool", "index", "task_type", "is_chief"),
    [
        ("workerpool0", 0, "chief", True),
        ("workerpool1", 0, "worker", False),
        ("workerpool1", 1, "worker", False),
        ("workerpool2", 0, "ps", False),
        ("workerpool3", 0, "evaluator", False),
    ],
)
def test_cluster_spec_workerpools(pool: str, index: int, task_type: str, is_chief: bool) -> None:
    spec = {"cluster": WORKERPOOLS, "task": {"type": pool, "index": index, "trial": "7"}}
    role = parse_cluster_role({"CLUSTER_SPEC": json.dumps(spec)})
    assert role.source == "CLUSTER_SPEC"
    assert (role.task_type, role.task_index, role.is_chief) == (task_type, index, is_chief)
    assert role.trial_id == "7"
    assert dict(role.cluster) == {"chief": ("c:1",), "worker": ("w0:1", "w1:1"), "ps": ("p:1",)}
    assert role.num_workers == 3


@pytest.mark.parametrize("task_type", ["chief", "worker"])
def test_master_and_cluster_spec_give_the_role_vertex_tf_config_gives(task_type: str) -> None:
    """The role is all the trainer builds its strategy and saves from: one two-process
    training (tests/trainer/test_training.py, with TF_CONFIG) covers the other names."""
    chief, worker = TWO
    vertex = parse_cluster_role(tf_env({"chief": [chief], "worker": [worker]}, task_type, 0))
    if task_type == "chief":
        cluster = {"master": [chief], "worker": [worker]}
        other = parse_cluster_role(tf_env(cluster, "master", 0))
    else:
        pools = {"workerpool0": [chief], "workerpool1": [worker]}
        spec = json.dumps({"cluster": pools, "task": {"type": "workerpool1", "index": 0}})
        other = parse_cluster_role({"CLUSTER_SPEC": spec})
    assert dataclasses.replace(other, source="TF_CONFIG") == vertex


def test_tf_config_wins_and_keeps_the_cluster_spec_trial() -> None:
    spec = {"cluster": WORKERPOOLS, "task": {"type": "workerpool1", "index": 1, "trial": "4"}}
    env = {
        "TF_CONFIG": tf_config({"worker": TWO}, "worker", 1),
        "CLUSTER_SPEC": json.dumps(spec),
    }
    role = parse_cluster_role(env)
    assert role.source == "TF_CONFIG"
    assert role.cluster == {"worker": tuple(TWO)}
    assert role.trial_id == "4"


def test_trial_id_from_cloud_ml_variable() -> None:
    assert parse_cluster_role({"CLOUD_ML_TRIAL_ID": "2"}).trial_id == "2"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "TF_CONFIG is not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (tf_config({"boss": TWO}, "boss", 0), "unknown task type 'boss'"),
        (tf_config({"worker": TWO}, "worker", 2), "task worker:2 is not in the cluster"),
        (tf_config({"chief": TWO}, "chief", 0), "exactly one is allowed"),
        (tf_config({"worker": TWO}, "worker", -1), "must be >= 0"),
        (json.dumps({"cluster": {"worker": TWO}}), "has a cluster but no task"),
    ],
)
def test_bad_tf_config_names_the_problem(raw: str, message: str) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        parse_cluster_role({"TF_CONFIG": raw})


def test_parameter_servers_are_refused_with_a_fix() -> None:
    role = parse_cluster_role(tf_env({"chief": ["c:1"], "ps": ["p:1"]}, "chief", 0))
    with pytest.raises(ClusterConfigError, match="drop worker pool 2"):
        require_all_reduce_cluster(role)
    require_all_reduce_cluster(parse_cluster_role({}))  # a single replica is fine
