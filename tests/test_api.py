"""The public API (``import vertex_training as vt``) as a user's program uses it, under mocks."""

from __future__ import annotations

import base64
import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider

import vertex_training as vt
from tests import PROJECT_ROOT, modules_loaded_by
from tests.pulumi_mocks import PulumiRun, RecordingMonitor, run_pulumi
from vertex_training.jobs.protos import parse_body
from vertex_training.jobs.records import JobKind
from vertex_training.jobs.resources import JobProvider

CUSTOM = "pulumi-python:dynamic/vertex:CustomJob"
TUNING = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
DIGEST = "us-docker.pkg.dev/team/images/trainer@sha256:" + "c" * 64


def issue_example() -> None:
    """The program from the issue, as a user would write it (its tuning study is
    examples/tuning-study, which tests/test_examples.py evaluates)."""
    platform = vt.TrainingPlatform(
        "ml",
        vt.TrainingPlatformArgs(
            environment="dev",
            project="my-project",
            region="us-central1",
            images={
                "trainer": vt.ImageBuild(
                    context=PROJECT_ROOT, dockerfile=PROJECT_ROOT / "docker/trainer.Dockerfile"
                )
            },
            workbench=vt.Workbench(machine_type="n1-standard-4"),
        ),
    )
    pool = vt.WorkerPool(
        machine_type="a3-highgpu-8g",
        accelerator=vt.Accelerator("NVIDIA_H100_80GB", 8),
        image=platform.image("trainer"),
        args=["--epochs", "5"],
    )
    vt.CustomJob(
        "resnet",
        vt.CustomJobArgs(
            platform=platform,
            chief=pool,
            workers=pool.with_replicas(3),
            scheduling=vt.Scheduling(strategy="SPOT", timeout_seconds=4 * 3600),
            extra_fields={"jobSpec": {"enableDashboardAccess": True}},
        ),
    )


@pytest.fixture(scope="module")
def example() -> PulumiRun:
    return run_pulumi(issue_example, stack="dev")


def spec(run: PulumiRun, name: str) -> dict[str, Any]:
    registration = run.named(name)
    body = dict(registration.inputs["spec"])
    kind = JobKind.CUSTOM_JOB if registration.type == CUSTOM else JobKind.HYPERPARAMETER_TUNING_JOB
    parse_body(kind, body)  # what the provider sends: the real protos take it
    return body


def test_the_issue_example_declares_what_it_says(example: PulumiRun) -> None:
    body = spec(example, "resnet")
    job = body["jobSpec"]
    chief, workers = job["workerPoolSpecs"]
    assert chief["machineSpec"] == {
        "machineType": "a3-highgpu-8g",
        "acceleratorType": "NVIDIA_H100_80GB",
        "acceleratorCount": 8,
    }
    assert (chief["replicaCount"], workers["replicaCount"]) == ("1", "3")
    assert chief["containerSpec"]["args"] == ["--epochs", "5"]
    assert chief["containerSpec"]["imageUri"].startswith(
        "us-central1-docker.pkg.dev/my-project/trainers-ml/trainer@sha256:"
    )
    assert job["scheduling"] == {"strategy": "SPOT", "timeout": "14400s"}
    assert job["enableDashboardAccess"] is True
    assert job["baseOutputDirectory"] == {
        "outputUriPrefix": "gs://my-project-dev-ml-vertex/jobs/resnet"
    }
    assert job["serviceAccount"] == "vtx-train-dev-ml@my-project.iam.gserviceaccount.com"
    assert body["labels"]["environment"] == "dev"


def test_jobs_wait_for_the_platform(example: PulumiRun) -> None:
    image = example.one("docker-build:index:Image")
    assert image.urn in example.named("resnet").dependencies
    platform = example.one("vertex-training:index:TrainingPlatform")
    assert {r.type for r in example.children_of(platform)} >= {
        "vertex-training:platform:TrainingBucket",
        "vertex-training:platform:TrainerRepository",
        "vertex-training:platform:PlatformIdentity",
        "vertex-training:platform:TrainingWorkbench",
        "vertex-training:platform:TrainerImage",
    }


def test_outputs_are_typed_attributes() -> None:
    hints = vt.HyperparameterTuningJob.__annotations__
    assert {"trials", "best_trial"} <= set(hints)
    for name in ("state", "model_dir", "console_url", "job_name", "error_message"):
        assert name in vt.CustomJob.__mro__[1].__annotations__
    assert {"bucket_url", "training_service_account", "workbench_url"} <= set(
        vt.TrainingPlatform.__annotations__
    )


# ------------------------------------------------------------------ bad input


def failing(program: Any) -> tuple[str, RecordingMonitor]:
    sink: list[RecordingMonitor] = []
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        run_pulumi(program, stack="dev", monitor_sink=sink)
    assert isinstance(caught.value, pulumi.RunError)  # shown without a traceback
    return str(caught.value), sink[0]


def byo_platform(**extra: Any) -> vt.TrainingPlatform:
    return vt.TrainingPlatform(
        "team",
        vt.TrainingPlatformArgs(
            environment="dev",
            project="team-project",
            images={"trainer": DIGEST},
            existing_bucket="team-bucket",
            training_service_account="trainer@team-project.iam.gserviceaccount.com",
            enable_apis=False,
            **extra,
        ),
    )


def byo_job(name: str, **fields: Any) -> vt.CustomJob:
    """A CustomJob on a new bring-your-own platform (``byo_platform``)."""
    return vt.CustomJob(name, vt.CustomJobArgs(platform=byo_platform(), **fields))


def v100(count: int, **extra: Any) -> vt.WorkerPool:
    return vt.WorkerPool(
        machine_type="n1-standard-8",
        accelerator=vt.Accelerator("NVIDIA_TESLA_V100", count),
        **extra,
    )


def test_a_wrong_type_names_the_argument() -> None:
    with pytest.raises(vt.InvalidArgumentsError, match=r"WorkerPool\.replica_count: got str '3'"):
        vt.WorkerPool(machine_type="n1-standard-4", replica_count="3")  # type: ignore[arg-type]
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        vt.CustomJobArgs(chief={"machineType": "n1-standard-4"})  # type: ignore[arg-type]
    assert "CustomJobArgs.chief: got dict" in str(caught.value)
    assert "valid: WorkerPool" in str(caught.value)
    with pytest.raises(vt.InvalidArgumentsError, match="one of 'maximize', 'minimize'"):
        vt.Metric("accuracy", "up")  # type: ignore[arg-type]


def test_outputs_pass_the_type_check() -> None:
    def program() -> None:
        pool = vt.WorkerPool(machine_type=pulumi.Output.from_input("n1-standard-4"))
        assert not isinstance(pool.machine_type, str)

    run_pulumi(program)


def test_gpus_that_do_not_fit_fail_where_the_pool_is_built() -> None:
    """Refused by the catalog where the pool is built (valid on no platform, in no region),
    before anything is registered, naming the caller's own field."""

    message, monitor = failing(lambda: byo_job("bad", chief=v100(1), workers=v100(3)))
    assert "WorkerPool.accelerator.count: 3 x NVIDIA_TESLA_V100" in message
    assert "valid counts: 1, 2, 4, 8" in message
    assert "(Vertex field machineSpec.acceleratorCount)" in message
    # The pool is built before the platform it would run on is registered.
    assert [r.type for r in monitor.registrations] == []


def test_a_bad_platform_registers_nothing() -> None:
    def program() -> None:
        vt.TrainingPlatform(
            "p",
            vt.TrainingPlatformArgs(
                environment="prod",
                bucket_name="My_Bucket",
                images={"trainer": "gcr.io/x/trainer:latest"},
                workbench=vt.Workbench(accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 3)),
            ),
        )

    message, monitor = failing(program)
    assert (
        "TrainingPlatformArgs.project: missing: a prod environment needs a Google Cloud project"
        in message
    )
    assert "TrainingPlatformArgs.bucket_name: 'My_Bucket' is not a valid bucket name" in message
    assert (
        "TrainingPlatformArgs.images['trainer']" in message and "not an image by digest" in message
    )
    assert "TrainingPlatformArgs.workbench.accelerator.count" in message
    assert monitor.registrations == []


def test_a_tuning_job_without_parameters() -> None:
    def program() -> None:
        vt.HyperparameterTuningJob(
            "t",
            vt.HyperparameterTuningJobArgs(
                platform=byo_platform(),
                trial=vt.TrialJob(chief=vt.WorkerPool(machine_type="n1-standard-4")),
                study=vt.Study(parameters=[]),
                max_trial_count=4,
                parallel_trial_count=2,
            ),
        )

    message, _ = failing(program)
    # Wrong for every job: refused where the Study is built.
    assert message.startswith("Study.parameters: needs at least one parameter to tune")


def test_a_tagged_image_is_refused_on_a_cloud_platform() -> None:
    chief = vt.WorkerPool(machine_type="n1-standard-4", image="gcr.io/x/trainer:latest")
    message, _ = failing(lambda: byo_job("tagged", chief=chief))
    assert (
        "CustomJobArgs.chief.image: 'gcr.io/x/trainer:latest' is not an image by digest" in message
    )


def test_extra_fields_problems_are_named_in_extra_fields() -> None:
    chief = vt.WorkerPool(machine_type="n1-standard-4")
    extra = {"jobSpec": {"scheduling": {"timeout": "-5s"}}}
    message, _ = failing(lambda: byo_job("extra", chief=chief, extra_fields=extra))
    assert "CustomJobArgs.extra_fields['jobSpec']['scheduling']['timeout']" in message


def test_a_pools_own_problem_in_its_extra_fields_is_named_there() -> None:
    with pytest.raises(vt.InvalidArgumentsError) as error:
        vt.WorkerPool(
            machine_type="n1-standard-4", extra_fields={"diskSpec": {"bootDiskType": "pd-bad"}}
        )
    assert str(error.value).startswith(
        "WorkerPool.extra_fields['diskSpec']['bootDiskType']: 'pd-bad' is not a boot disk type"
    )


def test_values_not_known_yet_are_not_judged() -> None:
    def program() -> None:
        machine = pulumi.Output.from_input("a2-highgpu-1g")  # as if from another resource
        a100 = vt.Accelerator("NVIDIA_TESLA_A100", 1)
        byo_job("later", chief=vt.WorkerPool(machine_type=machine, accelerator=a100))

    run = run_pulumi(program, stack="dev")
    assert run.named("later").inputs["spec"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] == {
        "machineType": "a2-highgpu-1g",
        "acceleratorType": "NVIDIA_TESLA_A100",
        "acceleratorCount": 1,
    }


def test_unknown_hardware_warns_and_no_family_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    def job(strict: bool | None, machine_type: str = "c2d-standard-3") -> None:
        chief = vt.WorkerPool(machine_type=machine_type)
        byo_job("future", chief=chief, strict_hardware_checks=strict)

    # An unlisted size of a family the catalog lists partially: unknown, so a warning, in
    # strict mode too (strict refuses only names the catalog never heard of).
    for strict in (None, True):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            run_pulumi(lambda strict=strict: job(strict), stack="dev")
        assert "c2d-standard-3" in caplog.text
    # A machine of no family is known wrong, strict or not.
    message, _ = failing(lambda: job(None, "z9-megagpu-8g"))
    assert "WorkerPool.machine_type: 'z9-megagpu-8g' matches no Vertex" in message


# ------------------------------------------------------------------ bring your own


def test_bring_your_own_creates_none_of_it() -> None:
    def program() -> None:
        platform = byo_platform()
        vt.CustomJob("byo", vt.CustomJobArgs(platform=platform, chief=v100(1), workers=v100(1)))

    run = run_pulumi(program, stack="dev")
    created = {r.type for r in run.registrations if r.custom}
    assert created == {CUSTOM}  # no bucket, account, repository, API or image
    job = spec(run, "byo")["jobSpec"]
    assert job["baseOutputDirectory"] == {"outputUriPrefix": "gs://team-bucket/jobs/byo"}
    assert job["serviceAccount"] == "trainer@team-project.iam.gserviceaccount.com"
    assert job["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == DIGEST


def test_a_job_without_a_platform() -> None:
    run = run_pulumi(lambda: vt.CustomJob("alone", alone("europe-west4")), stack="dev")
    registration = run.named("alone")
    assert registration.inputs["backend"]["location"] == "europe-west4"
    assert registration.inputs["backend"]["project"] == "other-project"
    with pytest.raises(vt.InvalidArgumentsError, match="project and region must be set"):
        run_pulumi(
            lambda: vt.CustomJob(
                "x", vt.CustomJobArgs(chief=vt.WorkerPool(machine_type="n1-standard-4"))
            )
        )


def test_a_pool_without_image_needs_a_single_platform_image() -> None:
    def two_images() -> None:
        platform = vt.TrainingPlatform(
            "two",
            vt.TrainingPlatformArgs(
                environment="dev", project="team-project", images={"a": DIGEST, "b": DIGEST}
            ),
        )
        vt.CustomJob(
            "which",
            vt.CustomJobArgs(platform=platform, chief=vt.WorkerPool(machine_type="n1-standard-4")),
        )

    message, _ = failing(two_images)
    assert "CustomJobArgs.chief.image: not set" in message


def test_a_local_root_given_as_a_string_is_a_path(tmp_path: Any) -> None:
    # Found by the engine test of a team's stack: a str crashed the program.
    def program() -> None:
        platform = vt.TrainingPlatform(
            "here", vt.TrainingPlatformArgs(environment="local", local_root=str(tmp_path))
        )
        pulumi.export("bucket", platform.bucket_url)

    assert run_pulumi(program, stack="local").outputs["bucket"] == f"{tmp_path}/bucket"


def test_a_local_platform_runs_jobs_here_and_creates_nothing_in_the_cloud(tmp_path: Any) -> None:
    def program() -> None:
        platform = vt.TrainingPlatform(
            "here",
            vt.TrainingPlatformArgs(
                environment="local",
                images={
                    "trainer": vt.ImageBuild(
                        context=PROJECT_ROOT / "docker",
                        dockerfile=PROJECT_ROOT / "docker/trainer.Dockerfile",
                    )
                },
                local_root=tmp_path,
            ),
        )
        vt.CustomJob("here-job", vt.CustomJobArgs(platform=platform, chief=v100(1)))
        pulumi.export("image", platform.image("trainer"))

    run = run_pulumi(program, stack="local")
    assert not [r for r in run.registrations if r.type.startswith(("gcp:", "docker-build:"))]
    registration = run.named("here-job")
    assert registration.inputs["backend"] == {
        "kind": "local",
        "project": "local",
        "location": "us-central1",
        "local_root": str(tmp_path),
        "retry_initial_seconds": 1.0,
        "retry_timeout_seconds": 120.0,
    }
    assert run.outputs["image"] == "trainer:local"
    job = registration.inputs["spec"]["jobSpec"]
    assert "serviceAccount" not in job
    assert job["baseOutputDirectory"]["outputUriPrefix"] == f"{tmp_path}/bucket/jobs/here-job"


def test_only_a_cloud_platform_needs_the_build_context_of_its_images(tmp_path: Any) -> None:
    # A local platform builds no image (its jobs run here): a project without a
    # Dockerfile can still have one. A dev platform would build it, so it must exist.
    build = vt.ImageBuild(context=tmp_path / "missing")

    def program(environment: str) -> Callable[[], None]:
        def declare() -> None:
            vt.TrainingPlatform(
                "p",
                vt.TrainingPlatformArgs(
                    environment=environment,  # type: ignore[arg-type]
                    project="my-project" if environment != "local" else None,
                    images={"trainer": build},
                    local_root=tmp_path,
                ),
            )

        return declare

    run_pulumi(program("local"), stack="local")
    message, _ = failing(program("dev"))
    assert f"images['trainer'].context: '{tmp_path / 'missing'}' is not a directory" in message


def test_platform_image_names_what_exists() -> None:
    def program() -> None:
        byo_platform().image("trainr")

    message, _ = failing(program)
    assert "TrainingPlatform.image('trainr'): no such image; valid: 'trainer'" in message


# ------------------------------------------------------------------ the package


def test_the_provider_import_path_is_pinned() -> None:
    """Every stack's state holds the provider pickled *by reference* to this path: moving
    or renaming ``JobProvider`` breaks every deployed stack (its refresh and destroy)."""
    assert (JobProvider.__module__, JobProvider.__qualname__) == (
        "vertex_training.jobs.resources",
        "JobProvider",
    )
    pickled = base64.b64decode(serialize_provider(JobProvider(JobKind.CUSTOM_JOB)))
    assert b"vertex_training.jobs.resources" in pickled and b"JobProvider" in pickled
    assert len(pickled) < 512  # by reference, not by value


def test_importing_the_package_stays_light() -> None:
    program = (
        "import vertex_training as vt\n"
        "vt.TrainingPlatformArgs, vt.CustomJob, vt.HyperparameterTuningJobArgs\n"
    )
    heavy = ("tensorflow", "optuna", "google.cloud.aiplatform_v1", "pulumi_gcp")
    assert modules_loaded_by(program, heavy) == []


def test_every_public_name_has_a_docstring() -> None:
    for name in vt.__all__:
        value = getattr(vt, name)
        if isinstance(value, type) or callable(value):
            assert (value.__doc__ or "").strip(), name


def test_a_tensorboard_in_another_region_is_refused_before_anything_exists() -> None:
    def program() -> None:
        byo_platform(
            tensorboard=vt.TensorBoard(
                existing="projects/team-project/locations/europe-west4/tensorboards/123"
            )
        )

    message, monitor = failing(program)
    assert "TrainingPlatformArgs.tensorboard.existing" in message
    assert "is in europe-west4, not in the region us-central1" in message
    assert monitor.registrations == []


def test_an_experiment_run_needs_its_experiment() -> None:
    run_name = (
        "projects/team-project/locations/us-central1/metadataStores/default/contexts/exp-run1"
    )

    chief = vt.WorkerPool(machine_type="n1-standard-4")
    message, _ = failing(lambda: byo_job("tracked", chief=chief, experiment_run=run_name))
    assert "CustomJobArgs.experiment_run" in message and "jobSpec.experimentRun" in message


def test_platform_tensorboard_reaches_every_job() -> None:
    def program() -> None:
        platform = byo_platform(tensorboard=vt.TensorBoard())
        vt.CustomJob(
            "curves",
            vt.CustomJobArgs(platform=platform, chief=vt.WorkerPool(machine_type="n1-standard-4")),
        )

    run = run_pulumi(program, stack="dev")
    board = run.one("gcp:vertex/aiTensorboard:AiTensorboard")
    job = run.named("curves").inputs["spec"]["jobSpec"]
    assert "/tensorboards/" in job["tensorboard"]
    assert job["baseOutputDirectory"]["outputUriPrefix"] == "gs://team-bucket/jobs/curves"
    assert board.inputs["region"] == "us-central1"
    # The brought training account gets the uploader's role, nothing broader.
    member = run.one("gcp:projects/iAMMember:IAMMember").inputs["member"]
    assert member == "serviceAccount:trainer@team-project.iam.gserviceaccount.com"


def test_the_project_can_come_from_another_resource() -> None:
    """A platform team creates the project in the same program and hands its id over."""

    def program() -> None:
        import pulumi_gcp.organizations as gcp_organizations

        project = gcp_organizations.Project("ml-project", name="ML", project_id="team-ml-42")
        platform = vt.TrainingPlatform(
            "ml",
            vt.TrainingPlatformArgs(
                environment="dev", project=project.project_id, images={"trainer": DIGEST}
            ),
        )
        vt.CustomJob(
            "later",
            vt.CustomJobArgs(platform=platform, chief=vt.WorkerPool(machine_type="n1-standard-4")),
        )
        pulumi.export("bucket", platform.bucket_url)

    run = run_pulumi(program, stack="dev")
    assert run.outputs["bucket"] == "gs://team-ml-42-dev-ml-vertex"
    job = run.named("later")
    assert job.inputs["backend"]["project"] == "team-ml-42"
    assert job.inputs["backend_target"]["project"] == "team-ml-42"
    assert job.inputs["spec"]["jobSpec"]["serviceAccount"].endswith(
        "@team-ml-42.iam.gserviceaccount.com"
    )


# ------------------------------------------------ day one: typos and what Vertex refuses


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (
            lambda: vt.Scheduling(strategy="SPTO"),
            "Scheduling.strategy: got str 'SPTO' (did you mean 'SPOT'?); valid: one of "
            "'STANDARD', 'SPOT', 'FLEX_START' or None",
        ),
        (
            lambda: vt.Metric("accuracy", "maximise"),
            "Metric.goal: got str 'maximise' (did you mean 'maximize'?); valid: one of "
            "'maximize', 'minimize'",
        ),
        (
            lambda: vt.Study(parameters=[vt.DoubleParameter("x", 0, 1)], algorithm="GRID_SEARH"),
            "Study.algorithm: got str 'GRID_SEARH' (did you mean 'grid'?); valid: one of "
            "'bayesian', 'grid', 'random'",
        ),
    ],
)
def test_enum_typos_in_args_say_what_was_meant(make: Any, text: str) -> None:
    with pytest.raises(vt.InvalidArgumentsError) as caught:
        make()
    assert str(caught.value) == text


def alone(region: str = "us-central1", **extra: Any) -> vt.CustomJobArgs:
    return vt.CustomJobArgs(
        project="other-project",
        region=region,
        chief=vt.WorkerPool(machine_type="n1-standard-8", image=DIGEST, **extra),
        base_output_directory="gs://elsewhere/out",
    )


def test_a_region_typo_names_the_argument_and_what_was_meant() -> None:
    message, monitor = failing(lambda: vt.CustomJob("x", alone("us-centrl1")))
    assert "CustomJobArgs.region: 'us-centrl1' is not a Vertex AI region (did you mean " in (
        message
    )
    assert not [r for r in monitor.registrations if ":dynamic/" in r.type]


def test_a_platform_region_typo_is_refused() -> None:
    message, monitor = failing(lambda: byo_platform(region="europe-wst4"))
    assert "TrainingPlatformArgs.region: 'europe-wst4' is not a Vertex AI region (did you " in (
        message
    )
    assert monitor.registrations == []


@pytest.mark.parametrize(
    ("accelerator", "argument", "text"),
    [
        (
            vt.Accelerator("V100", 1),
            "accelerator.type",
            "'V100' is not an AcceleratorType (did you mean 'NVIDIA_TESLA_V100'?)",
        ),
        (
            vt.Accelerator("NVIDIA_TESLA_T4", 0),
            "accelerator.count",
            "0 x NVIDIA_TESLA_T4 on n1-standard-8 is not valid; valid counts: 1, 2, 4, or unset",
        ),
    ],
)
def test_accelerators_vertex_refuses_name_the_argument(
    accelerator: vt.Accelerator, argument: str, text: str
) -> None:
    message, _ = failing(lambda: vt.CustomJob("x", alone(accelerator=accelerator)))
    assert f"WorkerPool.{argument}: {text}" in message  # where the pool is built


def test_nfs_mounts_without_a_network_name_the_pool_extra_fields() -> None:
    nfs = [{"server": "10.0.0.2", "path": "/share", "mountPoint": "data"}]

    message, _ = failing(lambda: vt.CustomJob("nfs", alone(extra_fields={"nfsMounts": nfs})))
    assert (
        "CustomJobArgs.chief.extra_fields['nfsMounts']: NFS shares are reached over a VPC"
        in message
    )


def test_a_psc_interface_with_a_network_names_extra_fields() -> None:
    args = dataclasses.replace(
        alone(),
        network="projects/1/global/networks/vpc",
        extra_fields={"jobSpec": {"pscInterfaceConfig": {"networkAttachment": "a"}}},
    )
    message, _ = failing(lambda: vt.CustomJob("psc", args))
    assert (
        "CustomJobArgs.extra_fields['jobSpec']['pscInterfaceConfig']: cannot be set with network"
        in message
    )


def test_a_workbench_zone_outside_the_platform_region_is_refused() -> None:
    message, monitor = failing(lambda: byo_platform(workbench=vt.Workbench(zone="europe-west4-a")))
    assert (
        "TrainingPlatformArgs.workbench.zone: 'europe-west4-a' is not a zone of the region "
        "us-central1; valid: unset (means us-central1-a) or us-central1-<letter>"
    ) in message
    assert monitor.registrations == []


def test_typed_nfs_mounts_without_a_network_name_the_typed_field() -> None:
    mount = vt.NfsMount(server="10.0.0.2", path="/share", mount_point="data")
    message, _ = failing(lambda: vt.CustomJob("nfs", alone(nfs_mounts=[mount])))
    assert "CustomJobArgs.chief.nfs_mounts: NFS shares are reached over a VPC" in message
    assert "(Vertex field jobSpec.workerPoolSpecs[0].nfsMounts)" in message


def test_a_typed_psc_interface_with_a_network_names_the_typed_field() -> None:
    args = dataclasses.replace(
        alone(),
        network="projects/1/global/networks/vpc",
        psc_interface_config=vt.PscInterfaceConfig(network_attachment="a"),
    )
    message, _ = failing(lambda: vt.CustomJob("psc", args))
    assert "CustomJobArgs.psc_interface_config: cannot be set with network" in message


def _platform(**extra: Any) -> Any:
    from vertex_training.jobs.api import PlatformFacts

    return PlatformFacts(
        environment="dev", region="us-central1", project="p", image=DIGEST, bucket_url=None, **extra
    )


def test_the_typed_fields_reach_the_body_as_vertex_spells_them() -> None:
    from vertex_training.jobs.api import resolve

    pool = vt.WorkerPool(
        machine_type="ct5lp-hightpu-4t",
        accelerator=vt.Accelerator("TPU_V5_LITEPOD", 4, tpu_topology="2x2"),
        reservation_affinity=vt.ReservationAffinity(
            type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=["projects/p/zones/us-central1-a/reservations/r"],
        ),
        nfs_mounts=[vt.NfsMount(server="10.0.0.2", path="/share", mount_point="data")],
    )
    args = vt.CustomJobArgs(
        project="p",
        region="us-central1",
        chief=pool,
        enable_dashboard_access=True,
        enable_web_access=True,
        psc_interface_config=vt.PscInterfaceConfig(
            network_attachment="projects/p/regions/us-central1/networkAttachments/a",
            dns_peering_configs=[
                vt.DnsPeeringConfig(domain="corp.", target_project="p", target_network="vpc")
            ],
        ),
    )
    body = resolve(args, "j", _platform()).body
    parse_body(JobKind.CUSTOM_JOB, body)  # the real protos take every typed field
    spec = body["jobSpec"]
    chief = spec["workerPoolSpecs"][0]
    assert chief["machineSpec"] == {
        "machineType": "ct5lp-hightpu-4t",
        "acceleratorType": "TPU_V5_LITEPOD",
        "acceleratorCount": 4,
        "tpuTopology": "2x2",
        "reservationAffinity": {
            "reservationAffinityType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["projects/p/zones/us-central1-a/reservations/r"],
        },
    }
    assert chief["nfsMounts"] == [{"server": "10.0.0.2", "path": "/share", "mountPoint": "data"}]
    assert spec["enableDashboardAccess"] is True and spec["enableWebAccess"] is True
    assert spec["pscInterfaceConfig"] == {
        "networkAttachment": "projects/p/regions/us-central1/networkAttachments/a",
        "dnsPeeringConfigs": [{"domain": "corp.", "targetProject": "p", "targetNetwork": "vpc"}],
    }


def test_network_false_leaves_the_platform_network_off_the_job() -> None:
    from vertex_training.jobs.api import resolve

    vpc = "projects/1/global/networks/vpc"
    chief = vt.WorkerPool(machine_type="n1-standard-4")
    joined = vt.CustomJobArgs(project="p", region="us-central1", chief=chief)
    alone_ = vt.CustomJobArgs(project="p", region="us-central1", chief=chief, network=False)
    assert resolve(joined, "j", _platform(network=vpc)).body["jobSpec"]["network"] == vpc
    assert "network" not in resolve(alone_, "j", _platform(network=vpc)).body["jobSpec"]


@pytest.mark.parametrize(
    ("cls", "api_path", "python"),
    [
        (
            vt.CustomJobArgs,
            "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount",
            "workers.accelerator.count",
        ),
        (
            vt.CustomJobArgs,
            "jobSpec.workerPoolSpecs[0].machineSpec.machineType",
            "chief.machine_type",
        ),
        (
            vt.CustomJobArgs,
            "jobSpec.workerPoolSpecs[0].machineSpec.tpuTopology",
            "chief.accelerator.tpu_topology",
        ),
        (vt.CustomJobArgs, "jobSpec.scheduling.maxWaitDuration", "scheduling.max_wait_seconds"),
        (vt.CustomJobArgs, "jobSpec.baseOutputDirectory.outputUriPrefix", "base_output_directory"),
        (vt.CustomJobArgs, "encryptionSpec.kmsKeyName", "kms_key_name"),
        (vt.CustomJobArgs, "jobSpec.workerPoolSpecs[2]", "parameter_servers"),
        (
            vt.HyperparameterTuningJobArgs,
            "trialJobSpec.workerPoolSpecs[0].replicaCount",
            "trial.chief.replica_count",
        ),
        (
            vt.HyperparameterTuningJobArgs,
            "studySpec.parameters[2].doubleValueSpec.minValue",
            "study.parameters[2].min_value",
        ),
        (
            vt.HyperparameterTuningJobArgs,
            "studySpec.parameters[0].scaleType",
            "study.parameters[0].scale",
        ),
        (vt.HyperparameterTuningJobArgs, "studySpec.metrics[0].goal", "study.metrics[0].goal"),
        (
            vt.HyperparameterTuningJobArgs,
            "studySpec.convexAutomatedStoppingSpec.maxStepCount",
            "study.early_stopping.max_step_count",
        ),
        (vt.HyperparameterTuningJobArgs, "maxTrialCount", "max_trial_count"),
        (vt.CustomJobArgs, "jobSpec.models", ""),
    ],
)
def test_api_paths_map_to_the_callers_own_path(cls: type, api_path: str, python: str) -> None:
    from vertex_training.jobs.caller_paths import caller_path

    assert caller_path(cls, api_path) == python
    # In a stack file, the same path with each name camelCased.
    assert caller_path(cls, api_path, "yaml") == re.sub("_([a-z])", lambda m: m[1].upper(), python)


@pytest.mark.parametrize(
    "build",
    [
        lambda: vt.WorkerPool("n1-standard-4"),
        lambda: vt.Scheduling("SPOT"),
        lambda: vt.CustomJobArgs(vt.WorkerPool(machine_type="n1-standard-4")),
    ],
)
def test_a_positional_call_says_to_use_keywords(build: Any) -> None:
    with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
        build()


def test_every_parameter_has_the_parameter_base() -> None:
    for cls in (vt.DoubleParameter, vt.IntegerParameter, vt.DiscreteParameter):
        assert issubclass(cls, vt.ParameterBase)
    assert issubclass(vt.CategoricalParameter, vt.ParameterBase)


def test_reserved_ip_ranges_from_python_and_yaml_reach_the_body() -> None:
    from vertex_training.jobs.api import resolve
    from vertex_training.jobs.caller_paths import caller_path
    from vertex_training.jobs.declarations import read_job

    chief = vt.WorkerPool(machine_type="n1-standard-4")
    args = vt.CustomJobArgs(
        project="p", region="us-central1", chief=chief, reserved_ip_ranges=["vertex-a"]
    )
    body = resolve(args, "j", _platform()).body
    parse_body(JobKind.CUSTOM_JOB, body)
    assert body["jobSpec"]["reservedIpRanges"] == ["vertex-a"]
    entry = {"name": "r", "chief": {"machineType": "n1-standard-4"}, "reservedIpRanges": ["x"]}
    job, problems = read_job(entry, "jobs[0]")
    assert problems == [] and job is not None and job.args.reserved_ip_ranges == ["x"]
    path = "jobSpec.reservedIpRanges[0]"
    assert caller_path(vt.CustomJobArgs, path) == "reserved_ip_ranges[0]"
    assert caller_path(vt.CustomJobArgs, path, "yaml") == "reservedIpRanges[0]"
