"""Every validation rule: each bad spec is refused naming its field and what is valid."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.jobs import samples
from vertex_training.jobs.spec import (
    CategoricalParameterSpec,
    ConditionalParameterSpec,
    ContainerSpec,
    CustomJobSpec,
    DiscreteParameterSpec,
    DiskSpec,
    DoubleParameterSpec,
    EarlyStopping,
    IntegerParameterSpec,
    JobSpec,
    MachineSpec,
    MetricGoal,
    MetricSpec,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    SpecValidationError,
    TuningJobSpec,
    WorkerPoolSpec,
    spec_issues,
    validate,
)

CPU = WorkerPoolSpec(MachineSpec("n1-standard-4"), ContainerSpec(samples.IMAGE))


def custom(**changes: object) -> CustomJobSpec:
    return replace(samples.cassava(), **changes)  # type: ignore[arg-type]


def tuning(**changes: object) -> TuningJobSpec:
    return replace(samples.horses_or_humans(), **changes)  # type: ignore[arg-type]


def study(**changes: object) -> TuningJobSpec:
    base = samples.horses_or_humans()
    return replace(base, study=replace(base.study, **changes))  # type: ignore[arg-type]


def params(
    *parameters: object, algorithm: SearchAlgorithm = SearchAlgorithm.BAYESIAN
) -> TuningJobSpec:
    return study(parameters=parameters, algorithm=algorithm)


def pool(**changes: object) -> WorkerPoolSpec:
    return replace(CPU, **changes)  # type: ignore[arg-type]


VALID: list[tuple[str, Callable[[], JobSpec]]] = [
    ("cassava gpu", samples.cassava),
    ("cassava cpu", lambda: samples.cassava(accelerator=None)),
    ("horses tuning", samples.horses_or_humans),
    ("single replica chief only", lambda: custom(worker_pools=(CPU,))),
    ("placeholder pools before an evaluator", lambda: custom(worker_pools=(CPU, None, None, CPU))),
    (
        "parameter servers",
        lambda: custom(worker_pools=(CPU, pool(replica_count=4), pool(replica_count=2))),
    ),
    (
        "flex start with max wait",
        lambda: custom(scheduling_strategy=SchedulingStrategy.FLEX_START, max_wait_seconds=3600),
    ),
    ("spot", lambda: custom(scheduling_strategy=SchedulingStrategy.SPOT)),
    ("persistent resource", lambda: custom(persistent_resource_id="my-cluster")),
    (
        "cmek + tensorboard in region",
        lambda: custom(
            kms_key_name="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
            tensorboard="projects/p/locations/us-central1/tensorboards/123",
            enable_web_access=True,
        ),
    ),
    (
        "grid over discrete, integer, categorical",
        lambda: params(
            DiscreteParameterSpec("units", (64, 128)),
            IntegerParameterSpec("layers", 1, 4),
            CategoricalParameterSpec("opt", ("sgd", "adam")),
            algorithm=SearchAlgorithm.GRID,
        ),
    ),
    (
        "conditional children",
        lambda: params(
            CategoricalParameterSpec(
                "opt",
                ("sgd", "adam"),
                conditional=(
                    ConditionalParameterSpec(DoubleParameterSpec("momentum", 0, 1), ("sgd",)),
                ),
            ),
            IntegerParameterSpec(
                "layers",
                1,
                4,
                conditional=(
                    ConditionalParameterSpec(DiscreteParameterSpec("width", (1, 2)), (2, 3)),
                ),
            ),
        ),
    ),
    (
        "early stopping",
        lambda: study(
            early_stopping=EarlyStopping.DECAY_CURVE, early_stopping_uses_elapsed_duration=True
        ),
    ),
    ("local output dir", lambda: custom(base_output_directory="gs://b/x")),
]


@pytest.mark.parametrize(("name", "build"), VALID, ids=[n for n, _ in VALID])
def test_valid_specs_pass(name: str, build: Callable[[], JobSpec]) -> None:
    assert spec_issues(build(), region="us-central1") == []


INVALID: list[tuple[str, Callable[[], JobSpec], str, str]] = [
    # (case, spec, field, fragment of the message)
    ("empty display name", lambda: custom(display_name=" "), "display_name", "must not be empty"),
    ("long display name", lambda: custom(display_name="x" * 129), "display_name", "at most 128"),
    (
        "label key charset",
        lambda: custom(labels=(("Team", "a"),)),
        "labels.Team",
        "lowercase letter",
    ),
    (
        "label key starts with digit",
        lambda: custom(labels=(("1a", "a"),)),
        "labels.1a",
        "lowercase letter",
    ),
    (
        "label value charset",
        lambda: custom(labels=(("team", "A B"),)),
        "labels.team",
        "label value 'A B' invalid",
    ),
    ("label value length", lambda: custom(labels=(("team", "a" * 64),)), "labels.team", "up to 63"),
    (
        "too many labels",
        lambda: custom(labels=tuple((f"k{i}", "v") for i in range(65))),
        "labels",
        "at most 64",
    ),
    ("duplicate label", lambda: custom(labels=(("a", "1"), ("a", "2"))), "labels.a", "duplicate"),
    ("no pools", lambda: custom(worker_pools=()), "worker_pools", "pool 0 (the chief)"),
    ("empty chief", lambda: custom(worker_pools=(None, CPU)), "worker_pools", "pool 0 (the chief)"),
    (
        "five pools",
        lambda: custom(worker_pools=(CPU, CPU, CPU, CPU, CPU)),
        "worker_pools",
        "Vertex has 4",
    ),
    (
        "trailing empty pool",
        lambda: custom(worker_pools=(CPU, None)),
        "worker_pools[1]",
        "drop trailing",
    ),
    (
        "two chiefs",
        lambda: custom(worker_pools=(pool(replica_count=2),)),
        "worker_pools[0].replica_count",
        "exactly 1",
    ),
    (
        "zero chiefs",
        lambda: custom(worker_pools=(pool(replica_count=0),)),
        "worker_pools[0].replica_count",
        "exactly 1",
    ),
    (
        "two evaluators",
        lambda: custom(worker_pools=(CPU, None, None, pool(replica_count=2))),
        "worker_pools[3].replica_count",
        "at most one evaluator",
    ),
    (
        "zero workers",
        lambda: custom(worker_pools=(CPU, pool(replica_count=0))),
        "worker_pools[1].replica_count",
        "at least 1",
    ),
    (
        "bad gpu count",
        lambda: custom(
            worker_pools=(pool(machine=MachineSpec("n1-standard-8", "NVIDIA_TESLA_V100", 3)),)
        ),
        "worker_pools[0].machine",
        "valid counts: 1, 2, 4, 8",
    ),
    (
        "gpu types not in one zone",
        lambda: custom(
            worker_pools=(
                pool(machine=MachineSpec("n1-highcpu-16", "NVIDIA_TESLA_T4", 4)),
                pool(machine=MachineSpec("n1-standard-8", "NVIDIA_TESLA_K80", 1)),
                pool(machine=MachineSpec("n1-standard-8", "NVIDIA_TESLA_P100", 1)),
            )
        ),
        "worker_pools",
        "no single zone",
    ),
    (
        "empty image",
        lambda: custom(worker_pools=(pool(container=ContainerSpec(" ")),)),
        "worker_pools[0].container.image_uri",
        "must not be empty",
    ),
    (
        "env name",
        lambda: custom(worker_pools=(pool(container=ContainerSpec("i", env=(("1X", "v"),))),)),
        "worker_pools[0].container.env.1X",
        "letters, digits",
    ),
    (
        "env duplicate",
        lambda: custom(
            worker_pools=(pool(container=ContainerSpec("i", env=(("X", "1"), ("X", "2")))),)
        ),
        "worker_pools[0].container.env",
        "duplicate",
    ),
    (
        "disk type",
        lambda: custom(worker_pools=(pool(disk=DiskSpec("ssd")),)),
        "worker_pools[0].disk.boot_disk_type",
        "valid: ['hyperdisk-balanced', 'pd-ssd', 'pd-standard']",
    ),
    (
        "disk size",
        lambda: custom(worker_pools=(pool(disk=DiskSpec(boot_disk_size_gb=50)),)),
        "worker_pools[0].disk.boot_disk_size_gb",
        "100-65536",
    ),
    (
        "output dir not gs",
        lambda: custom(base_output_directory="/tmp/x"),
        "base_output_directory",
        "gs://",
    ),
    (
        "service account",
        lambda: custom(service_account="training"),
        "service_account",
        "not a service account email",
    ),
    (
        "network",
        lambda: custom(network="default"),
        "network",
        "projects/PROJECT_NUMBER/global/networks/NAME",
    ),
    ("timeout", lambda: custom(timeout_seconds=0), "timeout_seconds", "positive"),
    (
        "max wait without flex start",
        lambda: custom(max_wait_seconds=60),
        "max_wait_seconds",
        "only applies to scheduling_strategy FLEX_START",
    ),
    (
        "persistent resource id",
        lambda: custom(persistent_resource_id="My_Cluster"),
        "persistent_resource_id",
        "lowercase",
    ),
    (
        "persistent resource with spot",
        lambda: custom(persistent_resource_id="c", scheduling_strategy=SchedulingStrategy.SPOT),
        "scheduling_strategy",
        "must be STANDARD",
    ),
    (
        "tensorboard name",
        lambda: custom(tensorboard="tb"),
        "tensorboard",
        "projects/P/locations/L/tensorboards/ID",
    ),
    (
        "tensorboard region",
        lambda: custom(tensorboard="projects/p/locations/europe-west4/tensorboards/1"),
        "tensorboard",
        "job's region",
    ),
    (
        "tensorboard needs output dir",
        lambda: custom(
            tensorboard="projects/p/locations/us-central1/tensorboards/1",
            base_output_directory=None,
        ),
        "base_output_directory",
        "required with tensorboard",
    ),
    ("cmek name", lambda: custom(kms_key_name="key"), "kms_key_name", "CMEK"),
    (
        "cmek region",
        lambda: custom(kms_key_name="projects/p/locations/us-east1/keyRings/r/cryptoKeys/k"),
        "kms_key_name",
        "job's region",
    ),
    (
        "trial labels",
        lambda: tuning(
            trial_job=replace(samples.horses_or_humans().trial_job, labels=(("a", "b"),))
        ),
        "trial_job.labels",
        "set them there",
    ),
    (
        "trial pool checked",
        lambda: tuning(
            trial_job=replace(
                samples.horses_or_humans().trial_job, worker_pools=(pool(replica_count=3),)
            )
        ),
        "trial_job.worker_pools[0].replica_count",
        "exactly 1",
    ),
    (
        "max trials",
        lambda: tuning(max_trial_count=0, parallel_trial_count=0),
        "max_trial_count",
        "at least 1",
    ),
    (
        "parallel > max",
        lambda: tuning(max_trial_count=2, parallel_trial_count=3),
        "parallel_trial_count",
        "exceeds max_trial_count 2",
    ),
    ("failed trials", lambda: tuning(max_failed_trial_count=-1), "max_failed_trial_count", "0"),
    ("no metric", lambda: study(metrics=()), "study.metrics", "at least one metric"),
    (
        "empty metric id",
        lambda: study(metrics=(MetricSpec("", MetricGoal.MAXIMIZE),)),
        "study.metrics[0].metric_id",
        "must not be empty",
    ),
    (
        "repeated metric",
        lambda: study(
            metrics=(MetricSpec("a", MetricGoal.MAXIMIZE), MetricSpec("a", MetricGoal.MINIMIZE))
        ),
        "study.metrics[1].metric_id",
        "repeats",
    ),
    ("no parameters", params, "study.parameters", "at least one parameter"),
    (
        "min == max",
        lambda: params(DoubleParameterSpec("lr", 1, 1)),
        "study.parameters[0].min_value",
        "less than max_value",
    ),
    (
        "int min > max",
        lambda: params(IntegerParameterSpec("n", 5, 1)),
        "study.parameters[0].min_value",
        "less than max_value",
    ),
    (
        "log needs min > 0",
        lambda: params(DoubleParameterSpec("lr", 0, 1, ScaleType.LOG)),
        "study.parameters[0].scale",
        "LOG scale needs min_value > 0",
    ),
    (
        "reverse log needs min > 0",
        lambda: params(IntegerParameterSpec("n", -1, 1, ScaleType.REVERSE_LOG)),
        "study.parameters[0].scale",
        "REVERSE_LOG",
    ),
    (
        "infinite double",
        lambda: params(DoubleParameterSpec("lr", 0, float("inf"))),
        "study.parameters[0]",
        "finite",
    ),
    (
        "empty discrete",
        lambda: params(DiscreteParameterSpec("n", ())),
        "study.parameters[0].values",
        "at least one",
    ),
    (
        "unsorted discrete",
        lambda: params(DiscreteParameterSpec("n", (128, 64))),
        "study.parameters[0].values",
        "strictly increasing",
    ),
    (
        "log discrete",
        lambda: params(DiscreteParameterSpec("n", (0, 1), ScaleType.LOG)),
        "study.parameters[0].scale",
        "values > 0",
    ),
    (
        "empty categorical",
        lambda: params(CategoricalParameterSpec("c", ())),
        "study.parameters[0].values",
        "at least one category",
    ),
    (
        "duplicate categorical",
        lambda: params(CategoricalParameterSpec("c", ("a", "a"))),
        "study.parameters[0].values",
        "unique",
    ),
    (
        "duplicate parameter id",
        lambda: params(DoubleParameterSpec("lr", 0, 1), DoubleParameterSpec("lr", 0, 2)),
        "study.parameters[1].parameter_id",
        "used twice",
    ),
    (
        "empty parameter id",
        lambda: params(DoubleParameterSpec("", 0, 1)),
        "study.parameters[0].parameter_id",
        "must not be empty",
    ),
    (
        "grid with double",
        lambda: params(DoubleParameterSpec("lr", 0, 1), algorithm=SearchAlgorithm.GRID),
        "study.parameters[0]",
        "GRID search cannot enumerate the double parameter 'lr'",
    ),
    (
        "grid with double child",
        lambda: params(
            CategoricalParameterSpec(
                "c",
                ("a",),
                conditional=(ConditionalParameterSpec(DoubleParameterSpec("lr", 0, 1), ("a",)),),
            ),
            algorithm=SearchAlgorithm.GRID,
        ),
        "study.parameters[0].conditional[0].parameter",
        "GRID search",
    ),
    (
        "condition on double parent",
        lambda: params(
            DoubleParameterSpec(
                "lr",
                0,
                1,
                conditional=(ConditionalParameterSpec(IntegerParameterSpec("n", 1, 2), (0.5,)),),
            )
        ),
        "study.parameters[0].conditional[0]",
        "double parameter cannot have conditional children",
    ),
    (
        "condition outside parent",
        lambda: params(
            CategoricalParameterSpec(
                "c",
                ("a",),
                conditional=(ConditionalParameterSpec(IntegerParameterSpec("n", 1, 2), ("b",)),),
            )
        ),
        "study.parameters[0].conditional[0].parent_values",
        "['b'] are not values of parent 'c'",
    ),
    (
        "int condition outside range",
        lambda: params(
            IntegerParameterSpec(
                "k",
                1,
                3,
                conditional=(ConditionalParameterSpec(IntegerParameterSpec("n", 1, 2), (7,)),),
            )
        ),
        "study.parameters[0].conditional[0].parent_values",
        "[7]",
    ),
    (
        "empty condition",
        lambda: params(
            DiscreteParameterSpec(
                "k",
                (1, 2),
                conditional=(ConditionalParameterSpec(IntegerParameterSpec("n", 1, 2), ()),),
            )
        ),
        "study.parameters[0].conditional[0].parent_values",
        "must not be empty",
    ),
    (
        "child id collides",
        lambda: params(
            DiscreteParameterSpec(
                "k",
                (1, 2),
                conditional=(ConditionalParameterSpec(IntegerParameterSpec("k", 1, 2), (1,)),),
            )
        ),
        "study.parameters[0].conditional[0].parameter.parameter_id",
        "used twice",
    ),
    (
        "elapsed without early stopping",
        lambda: study(early_stopping_uses_elapsed_duration=True),
        "study.early_stopping_uses_elapsed_duration",
        "only applies",
    ),
]


@pytest.mark.parametrize(
    ("name", "build", "field", "fragment"), INVALID, ids=[r[0] for r in INVALID]
)
def test_invalid_specs_name_the_field(
    name: str, build: Callable[[], JobSpec], field: str, fragment: str
) -> None:
    issues = spec_issues(build(), region="us-central1")
    assert any(i.field == field and fragment in i.message for i in issues), issues


def test_region_rules_use_the_given_region() -> None:
    spec = custom(worker_pools=(pool(machine=MachineSpec("n1-standard-8", "NVIDIA_TESLA_K80", 1)),))
    assert spec_issues(spec, region="us-central1") == []
    [issue] = spec_issues(spec, region="us-east4")
    assert issue.field == "worker_pools"
    assert "NVIDIA_TESLA_K80 not offered in region 'us-east4'" in issue.message
    assert spec_issues(spec, region=None) == []  # local: no region to check


def test_local_jobs_may_write_to_a_directory() -> None:
    assert spec_issues(custom(base_output_directory="/tmp/out"), remote=False) == []


def test_validate_raises_with_every_issue() -> None:
    spec = custom(display_name="", timeout_seconds=-1)
    with pytest.raises(SpecValidationError) as caught:
        validate(spec)
    assert {i.field for i in caught.value.issues} == {"display_name", "timeout_seconds"}
    assert "display_name: must not be empty" in str(caught.value)
    assert validate(samples.cassava()) == samples.cassava()


def test_labels_are_kept_sorted() -> None:
    spec = custom(labels=(("b", "2"), ("a", "1")))
    assert spec.labels == (("a", "1"), ("b", "2"))
