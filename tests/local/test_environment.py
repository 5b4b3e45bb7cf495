"""The Vertex environment as pure functions: cluster layout, variables, commands, GPUs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import CustomJob, CustomJobSpec

from tests.bodies import custom_job, pool
from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind
from vertex_training.local.runners.environment import (
    TF_CONFIG_TASK_TYPES,
    GpuAllocator,
    ReplicaSlot,
    expand_references,
    is_repo_trainer_image,
    local_bucket_paths,
    output_dirs,
    plan_replicas,
    replica_command,
    replica_environment,
)


def _spec(*pools: dict[str, Any], output: str | None = "/out") -> CustomJobSpec:
    job = parse_body(JobKind.CUSTOM_JOB, custom_job(*pools, display_name="full", output=output))
    assert isinstance(job, CustomJob)
    return job.job_spec


def _pool_body(
    replicas: int = 1,
    image: str = "trainer:local",
    command: tuple[str, ...] = (),
    env: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    return pool(image=image, command=command, args=("--a=1",), replicas=replicas, env=env)


def _pool(replicas: int = 1, image: str = "trainer:local", command: tuple[str, ...] = ()):
    return _spec(_pool_body(replicas, image, command)).worker_pool_specs[0]


def _full_job() -> CustomJobSpec:
    return _spec(_pool_body(), _pool_body(2), _pool_body(1), _pool_body(1))


class TestClusterLayout:
    def test_every_replica_gets_a_distinct_localhost_port_in_vertex_order(self) -> None:
        slots = plan_replicas(_full_job())
        assert [(TF_CONFIG_TASK_TYPES[s.pool], s.index) for s in slots] == [
            ("chief", 0),
            ("worker", 0),
            ("worker", 1),
            ("ps", 0),
            ("evaluator", 0),
        ]
        assert all(s.address.startswith("localhost:") for s in slots)
        assert len({s.address for s in slots}) == 5

    def test_placeholder_pool_is_skipped_but_keeps_pool_numbers(self) -> None:
        job = _spec(_pool_body(), {}, _pool_body())
        slots = plan_replicas(job)
        assert [s.label for s in slots] == ["workerpool0-0", "workerpool2-0"]

    def _env(self, who: int, trial: str | None = None) -> dict[str, str]:
        job = _full_job()
        # Known ports, so the cluster can be compared with a literal.
        planned = zip(plan_replicas(job), range(10, 15), strict=True)
        slots = [ReplicaSlot(s.pool, s.index, f"localhost:{port}") for s, port in planned]
        return replica_environment(
            slots=slots,
            me=slots[who],
            pool=job.worker_pool_specs[slots[who].pool],
            job={"worker_pool_specs": []},
            job_name="projects/local/locations/local/customJobs/123",
            base_output_dir="/out",
            trial_id=trial,
            metric_file="/m/output.metrics",
            cuda_visible_devices=None,
            root=Path("/root"),
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

    def test_service_project_and_region_are_set(self) -> None:
        env = self._env(0)
        assert (env["CLOUD_ML_PROJECT_ID"], env["CLOUD_ML_REGION"]) == ("local", "local")


def _single_env(
    *pools: dict[str, Any],
    output: str | None = "/out",
    trial: str | None = None,
) -> dict[str, str]:
    job = _spec(*pools, output=output)
    slots = plan_replicas(job)
    me = slots[0]
    return replica_environment(
        slots=slots,
        me=me,
        pool=job.worker_pool_specs[me.pool],
        job={},
        job_name="projects/local/locations/local/customJobs/9",
        base_output_dir=output,
        trial_id=trial,
        metric_file="/m",
        cuda_visible_devices=None,
        root=Path("/root"),
    )


class TestVertexEnvironment:
    """What Vertex sets that a single-machine run must not get wrong."""

    def test_single_replica_job_has_cluster_spec_but_no_tf_config(self) -> None:
        env = _single_env(_pool_body())
        assert "TF_CONFIG" not in env
        spec = json.loads(env["CLUSTER_SPEC"])
        assert spec["task"] == {"type": "workerpool0", "index": 0}
        assert "TF_CONFIG" not in _single_env(_pool_body(), trial="2")

    def test_two_replicas_in_all_is_distributed(self) -> None:
        env = _single_env(_pool_body(), _pool_body(1))
        assert json.loads(env["TF_CONFIG"])["task"] == {"type": "chief", "index": 0}
        # A chief alone plus an evaluator is still two machines: Vertex sets TF_CONFIG.
        env = _single_env(_pool_body(), {}, {}, _pool_body(1))
        assert json.loads(env["TF_CONFIG"])["cluster"] == {"chief": [_chief_address(env)]}

    def test_no_base_output_directory_means_no_aip_directories(self) -> None:
        env = _single_env(_pool_body(), output=None)
        assert not [k for k in env if k.startswith("AIP_")]
        assert output_dirs(None, "3") == {}
        with_base = _single_env(_pool_body(), output="/o")
        assert with_base["AIP_MODEL_DIR"] == "/o/model/"

    def test_env_values_expand_earlier_entries_and_service_variables(self) -> None:
        env = _single_env(
            _pool_body(
                env=(
                    ("FIRST", "one"),
                    ("SECOND", "$(FIRST)-two"),
                    ("SAVED", "$(AIP_MODEL_DIR)best"),
                    ("JOB", "job-$(CLOUD_ML_JOB_ID)"),
                    ("ESCAPED", "$$(FIRST)"),
                    ("UNKNOWN", "$(NOT_SET)/x"),
                    ("LATER", "$(THIRD)"),
                    ("THIRD", "three"),
                )
            )
        )
        assert env["SECOND"] == "one-two"
        assert env["SAVED"] == "/out/model/best"
        assert env["JOB"] == "job-9"
        assert env["ESCAPED"] == "$(FIRST)"
        assert env["UNKNOWN"] == "$(NOT_SET)/x"
        assert env["LATER"] == "$(THIRD)"  # only earlier entries are known

    def test_pool_env_wins_over_the_service_variables(self) -> None:
        env = _single_env(_pool_body(env=(("CLOUD_ML_REGION", "mine"),)))
        assert env["CLOUD_ML_REGION"] == "mine"

    def test_bucket_paths_in_env_values_are_local(self) -> None:
        env = _single_env(
            _pool_body(env=(("DATA", "gs://b/data"), ("FUSE", "/gcs/b/fuse"), ("OTHER", "/x")))
        )
        assert (env["DATA"], env["FUSE"], env["OTHER"]) == (
            "/root/gcs/b/data",
            "/root/gcs/b/fuse",
            "/x",
        )


def _chief_address(env: dict[str, str]) -> str:
    return str(json.loads(env["CLUSTER_SPEC"])["cluster"]["workerpool0"][0])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$(A)", "a"),
        ("x$(A)y$(B)z", "xaybz"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$$$(A)", "$a"),
        ("$(MISSING)", "$(MISSING)"),
        ("$(A", "$(A"),
        ("cost: $5", "cost: $5"),
        ("trailing $", "trailing $"),
        ("", ""),
    ],
)
def test_expand_references_follows_kubernetes(value: str, expected: str) -> None:
    assert expand_references(value, {"A": "a", "B": "b"}) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("gs://b/p", "/r/gcs/b/p"),
        ("/gcs/b/p", "/r/gcs/b/p"),
        ("--model-dir=gs://b/m", "--model-dir=/r/gcs/b/m"),
        ("--data=/gcs/b/d", "--data=/r/gcs/b/d"),
        ("gs://a/x,gs://b/y", "/r/gcs/a/x,/r/gcs/b/y"),
        ("/data/gcs/b", "/data/gcs/b"),
        ("see gs://b/p", "see /r/gcs/b/p"),
        ("plain", "plain"),
        ("gs://", "gs://"),
    ],
)
def test_bucket_paths_map_to_the_local_bucket_directory(value: str, expected: str) -> None:
    assert local_bucket_paths(value, Path("/r/gcs")) == expected


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
    with pytest.raises(JobRefusedError, match=r"'python:3.11'.*set container.command"):
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


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_single_replica_job_writes_to_gcs_paths_in_the_local_bucket(tmp_path: Path) -> None:
    """A replica given ``/gcs/...`` and ``gs://...`` paths, as on Vertex, writes under
    ``<root>/gcs`` here; a job without baseOutputDirectory gets no AIP_* and no TF_CONFIG."""
    from tests.fakes.faults import ended
    from tests.local.conftest import standin
    from vertex_training.jobs.records import JobState
    from vertex_training.local.runners.jobs import JobRunner

    backend = JobRunner(str(tmp_path / "root"))
    body = custom_job(
        standin(
            ["--dump-env=/gcs/b/env"],
            env=(
                ("STANDIN_BUCKET", "gs://b/data"),
                ("STANDIN_EXPANDED", "$(CLOUD_ML_JOB_ID)-$(STANDIN_BUCKET)"),
                ("STANDIN_ESCAPED", "$$(CLOUD_ML_JOB_ID)"),
                ("STANDIN_UNKNOWN", "$(NOPE)"),
            ),
        ),
        output=None,
    )
    record = ended(backend, backend.submit(JobKind.CUSTOM_JOB, body).name, timeout=60)
    assert record.state is JobState.SUCCEEDED, record.error_message
    dumped = list((backend.root / "gcs" / "b" / "env").glob("*.json"))
    assert [p.name for p in dumped] == ["workerpool0-0.json"]
    env = json.loads(dumped[0].read_text())
    assert env["argv"][0] == f"--dump-env={backend.root}/gcs/b/env"
    assert env["STANDIN_BUCKET"] == f"{backend.root}/gcs/b/data"
    job_id = record.name.rsplit("/", 1)[-1]
    assert env["STANDIN_EXPANDED"] == f"{job_id}-{backend.root}/gcs/b/data"
    assert env["STANDIN_ESCAPED"] == "$(CLOUD_ML_JOB_ID)"
    assert env["STANDIN_UNKNOWN"] == "$(NOPE)"
    assert env["TF_CONFIG"] is None
    assert json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}
    assert (env["CLOUD_ML_PROJECT_ID"], env["CLOUD_ML_REGION"]) == ("local", "local")
    assert [k for k in env if k.startswith("AIP_") and env[k] is not None] == []


def test_variables_vertex_owns_are_not_inherited_from_the_submitter() -> None:
    from vertex_training.local.runners.environment import inherited_environment

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
