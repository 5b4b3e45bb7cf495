"""The Vertex environment as pure functions: cluster layout, variables, commands, GPUs."""

from __future__ import annotations

import json
import sys

import pytest

from vertex_training.jobs.backends.local.environment import (
    GpuAllocator,
    LocalSpecError,
    is_repo_trainer_image,
    output_dirs,
    plan_replicas,
    replica_command,
    replica_environment,
)
from vertex_training.jobs.spec import (
    ContainerSpec,
    CustomJobSpec,
    MachineSpec,
    PoolRole,
    WorkerPoolSpec,
)


def _pool(replicas: int = 1, image: str = "trainer:local", command: tuple[str, ...] = ()):
    return WorkerPoolSpec(
        machine=MachineSpec("n1-standard-4"),
        container=ContainerSpec(image_uri=image, command=command, args=("--a=1",)),
        replica_count=replicas,
    )


def _full_job() -> CustomJobSpec:
    return CustomJobSpec(
        display_name="full",
        worker_pools=(_pool(), _pool(2), _pool(1), _pool(1)),
        base_output_directory="/out",
    )


class TestClusterLayout:
    def test_every_replica_gets_a_distinct_localhost_port_in_vertex_order(self) -> None:
        slots = plan_replicas(_full_job())
        assert [(s.pool, s.index) for s in slots] == [
            (PoolRole.CHIEF, 0),
            (PoolRole.WORKER, 0),
            (PoolRole.WORKER, 1),
            (PoolRole.PARAMETER_SERVER, 0),
            (PoolRole.EVALUATOR, 0),
        ]
        assert all(s.address.startswith("localhost:") for s in slots)
        assert len({s.address for s in slots}) == 5

    def test_placeholder_pool_is_skipped_but_keeps_pool_numbers(self) -> None:
        job = CustomJobSpec(display_name="j", worker_pools=(_pool(), None, _pool()))
        slots = plan_replicas(job, ports=[1, 2])
        assert [(s.workerpool, s.address) for s in slots] == [
            ("workerpool0", "localhost:1"),
            ("workerpool2", "localhost:2"),
        ]

    def _env(self, who: int, trial: str | None = None) -> dict[str, str]:
        job = _full_job()
        slots = plan_replicas(job, ports=[10, 11, 12, 13, 14])
        return replica_environment(
            slots=slots,
            me=slots[who],
            pool=job.worker_pools[int(slots[who].pool)],  # type: ignore[arg-type]
            job={"worker_pool_specs": []},
            job_id="123",
            base_output_dir="/out",
            trial_id=trial,
            metric_file="/m/output.metrics",
            cuda_visible_devices=None,
        )

    def test_tf_config_cluster_has_chief_worker_ps_but_not_the_evaluator(self) -> None:
        for who in range(5):
            config = json.loads(self._env(who)["TF_CONFIG"])
            assert config["cluster"] == {
                "chief": ["localhost:10"],
                "worker": ["localhost:11", "localhost:12"],
                "ps": ["localhost:13"],
            }
            assert config["environment"] == "cloud"
        tasks = [json.loads(self._env(w)["TF_CONFIG"])["task"] for w in range(5)]
        assert tasks == [
            {"type": "chief", "index": 0},
            {"type": "worker", "index": 0},
            {"type": "worker", "index": 1},
            {"type": "ps", "index": 0},
            {"type": "evaluator", "index": 0},
        ]

    def test_cluster_spec_names_pools_workerpool0_to_3(self) -> None:
        spec = json.loads(self._env(4, trial="7")["CLUSTER_SPEC"])
        assert spec["cluster"] == {
            "workerpool0": ["localhost:10"],
            "workerpool1": ["localhost:11", "localhost:12"],
            "workerpool2": ["localhost:13"],
            "workerpool3": ["localhost:14"],
        }
        assert spec["task"] == {"type": "workerpool3", "index": 0, "trial": "7"}
        assert spec["job"] == {"worker_pool_specs": []}

    def test_trial_id_only_in_tuning_trials(self) -> None:
        plain = self._env(0)
        assert "CLOUD_ML_TRIAL_ID" not in plain
        assert "trial" not in json.loads(plain["TF_CONFIG"])["task"]
        trial = self._env(0, trial="3")
        assert trial["CLOUD_ML_TRIAL_ID"] == "3"
        assert json.loads(trial["TF_CONFIG"])["task"]["trial"] == "3"
        assert trial["AIP_MODEL_DIR"] == "/out/3/model/"


def test_output_dirs_follow_vertex_layout() -> None:
    assert output_dirs("gs://b/run/", None) == {
        "AIP_MODEL_DIR": "gs://b/run/model/",
        "AIP_CHECKPOINT_DIR": "gs://b/run/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": "gs://b/run/logs/",
    }
    assert output_dirs("/x", "12")["AIP_TENSORBOARD_LOG_DIR"] == "/x/12/logs/"


@pytest.mark.parametrize(
    ("image", "ours"),
    [
        ("trainer:local", True),
        ("trainer", True),
        ("us-central1-docker.pkg.dev/p/trainers/trainer@sha256:abc", True),
        ("us-central1-docker.pkg.dev/p/trainers/trainer:v1", True),
        ("us-central1-docker.pkg.dev/p/trainers/other:v1", False),
        ("gcr.io/p/trainer-gpu:1", False),
        ("python:3.11", False),
    ],
)
def test_repo_trainer_image_detection(image: str, ours: bool) -> None:
    assert is_repo_trainer_image(image) is ours


def test_our_image_without_command_runs_the_trainer_module_with_this_python() -> None:
    assert replica_command(_pool(), ["--a=1", "--x=2"]) == [
        sys.executable,
        "-m",
        "trainer.task",
        "--a=1",
        "--x=2",
    ]


def test_command_replaces_the_image_python_with_this_interpreter() -> None:
    pool = _pool(image="python:3.11", command=("python3", "train.py"))
    assert replica_command(pool, ["--a=1"]) == [sys.executable, "train.py", "--a=1"]


def test_foreign_image_without_command_is_refused_with_the_fix() -> None:
    with pytest.raises(LocalSpecError, match=r"'python:3.11'.*set container.command"):
        replica_command(_pool(image="python:3.11"), [])


class TestGpuAllocator:
    def test_no_gpus_leaves_cuda_visible_devices_unset(self) -> None:
        assert GpuAllocator([]).acquire(2) is None

    def test_replicas_get_disjoint_gpus_while_there_are_enough(self) -> None:
        gpus = GpuAllocator(["0", "1", "2", "3"])
        assert gpus.acquire(2) == ("0", "1")
        assert gpus.acquire(1) == ("2",)
        assert gpus.acquire(0) == ()

    def test_released_gpus_are_handed_out_again(self) -> None:
        gpus = GpuAllocator(["0", "1"])
        first = gpus.acquire(2)
        gpus.release(first)
        assert gpus.acquire(1) == ("0",)

    def test_oversubscription_shares_the_least_used(self) -> None:
        gpus = GpuAllocator(["0", "1"])
        gpus.acquire(1)
        assert gpus.acquire(2) == ("1", "0")


def test_variables_vertex_owns_are_not_inherited_from_the_submitter() -> None:
    from vertex_training.jobs.backends.local.cluster import inherited_environment

    env = inherited_environment(
        {
            "PATH": "/bin",
            "TF_CONFIG": "{}",
            "CLUSTER_SPEC": "{}",
            "CLOUD_ML_TRIAL_ID": "9",
            "AIP_MODEL_DIR": "/elsewhere",
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
    )
    assert env == {"PATH": "/bin", "TF_CPP_MIN_LOG_LEVEL": "2"}
