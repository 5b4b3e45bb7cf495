"""Spec <-> REST JSON <-> aiplatform_v1: golden messages for the codelab jobs, a round-trip
property, and the plain-Python REST form held equal to MessageToDict of the message."""

from __future__ import annotations

import datetime as dt
from typing import Any

from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import json_format
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.jobs import proto_reference, samples
from vertex_training.jobs.convert import from_proto, record_from_proto, to_proto
from vertex_training.jobs.rest import spec_from_json, spec_to_json
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
    JobKind,
    JobSpec,
    JobState,
    MachineSpec,
    MeasurementSelection,
    MetricGoal,
    MetricSpec,
    ParameterSpec,
    ScaleType,
    SchedulingStrategy,
    SearchAlgorithm,
    StudySpec,
    TuningJobSpec,
    WorkerPoolSpec,
    spec_issues,
)

POOL = {
    "machineSpec": {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_V100",
        "acceleratorCount": 1,
    },
    "replicaCount": "1",
    "containerSpec": {
        "imageUri": samples.IMAGE,
        "args": ["--workload", "cassava", "--epochs", "5"],
    },
    "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
}

CASSAVA_GOLDEN = {
    "displayName": "multiworker-cassava",
    "jobSpec": {
        "workerPoolSpecs": [POOL, POOL],
        "scheduling": {"strategy": "STANDARD"},
        "serviceAccount": "training@p.iam.gserviceaccount.com",
        "baseOutputDirectory": {"outputUriPrefix": "gs://p-bucket/jobs/cassava"},
    },
    "labels": {"codelab": "cassava"},
}

HORSES_GOLDEN = {
    "displayName": "horses-humans",
    "studySpec": {
        "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
        "parameters": [
            {
                "parameterId": "learning_rate",
                "doubleValueSpec": {"minValue": 0.001, "maxValue": 1.0},
                "scaleType": "UNIT_LOG_SCALE",
            },
            {
                "parameterId": "momentum",
                "doubleValueSpec": {"maxValue": 1.0},
                "scaleType": "UNIT_LINEAR_SCALE",
            },
            {
                "parameterId": "num_units",
                "discreteValueSpec": {"values": [64.0, 128.0, 512.0]},
                "scaleType": "UNIT_LINEAR_SCALE",
            },
        ],
        "measurementSelectionType": "BEST_MEASUREMENT",
    },
    "maxTrialCount": 6,
    "parallelTrialCount": 2,
    "trialJobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-4",
                    "acceleratorType": "NVIDIA_TESLA_V100",
                    "acceleratorCount": 2,
                },
                "replicaCount": "1",
                "containerSpec": {
                    "imageUri": samples.IMAGE,
                    "args": ["--workload", "horses_or_humans"],
                },
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
            }
        ],
        "scheduling": {"strategy": "STANDARD"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://p-bucket/jobs/horses-humans"},
    },
}


def test_cassava_golden() -> None:
    assert spec_to_json(samples.cassava()) == CASSAVA_GOLDEN
    assert spec_from_json(JobKind.CUSTOM_JOB, CASSAVA_GOLDEN) == samples.cassava()


def test_cassava_cpu_variant_drops_the_accelerator() -> None:
    pools = spec_to_json(samples.cassava(accelerator=None))["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["machineSpec"] == {"machineType": "n1-standard-8"}


def test_horses_or_humans_golden() -> None:
    assert spec_to_json(samples.horses_or_humans()) == HORSES_GOLDEN
    assert spec_from_json(JobKind.HYPERPARAMETER_TUNING_JOB, HORSES_GOLDEN) == (
        samples.horses_or_humans()
    )


def test_everything_else_golden() -> None:
    cpu = WorkerPoolSpec(MachineSpec("n1-standard-4"), ContainerSpec("i", env=(("A", "1"),)))
    spec = TuningJobSpec(
        display_name="t",
        trial_job=CustomJobSpec(
            display_name="t",
            worker_pools=(cpu, None, None, cpu),
            base_output_directory="gs://b/o",
            network="projects/1/global/networks/n",
            timeout_seconds=7200,
            restart_job_on_worker_restart=True,
            scheduling_strategy=SchedulingStrategy.FLEX_START,
            max_wait_seconds=1800,
            enable_web_access=True,
            tensorboard="projects/p/locations/us-central1/tensorboards/7",
        ),
        study=StudySpec(
            metrics=(MetricSpec("loss", MetricGoal.MINIMIZE),),
            parameters=(
                CategoricalParameterSpec(
                    "opt",
                    ("sgd", "adam"),
                    conditional=(
                        ConditionalParameterSpec(IntegerParameterSpec("n", 1, 8), ("sgd",)),
                    ),
                ),
            ),
            algorithm=SearchAlgorithm.RANDOM,
            measurement_selection=MeasurementSelection.LAST,
            early_stopping=EarlyStopping.MEDIAN,
            early_stopping_uses_elapsed_duration=True,
        ),
        max_trial_count=10,
        parallel_trial_count=3,
        max_failed_trial_count=2,
        kms_key_name="projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
    )
    data = spec_to_json(spec)
    trial = data["trialJobSpec"]
    assert trial["workerPoolSpecs"][1] == {} and trial["workerPoolSpecs"][2] == {}
    assert trial["scheduling"] == {
        "timeout": "7200s",
        "restartJobOnWorkerRestart": True,
        "strategy": "FLEX_START",
        "maxWaitDuration": "1800s",
    }
    assert trial["enableWebAccess"] is True
    assert trial["workerPoolSpecs"][0]["containerSpec"]["env"] == [{"name": "A", "value": "1"}]
    study = data["studySpec"]
    assert study["algorithm"] == "RANDOM_SEARCH"
    assert study["measurementSelectionType"] == "LAST_MEASUREMENT"
    assert study["medianAutomatedStoppingSpec"] == {"useElapsedDuration": True}
    assert study["parameters"][0]["conditionalParameterSpecs"] == [
        {
            "parameterSpec": {
                "parameterId": "n",
                "integerValueSpec": {"minValue": "1", "maxValue": "8"},
                "scaleType": "UNIT_LINEAR_SCALE",
            },
            "parentCategoricalValues": {"values": ["sgd"]},
        }
    ]
    assert data["encryptionSpec"] == {"kmsKeyName": spec.kms_key_name}
    assert data["maxFailedTrialCount"] == 2
    assert spec_from_json(JobKind.HYPERPARAMETER_TUNING_JOB, data) == spec


def test_early_stopping_kinds() -> None:
    base = samples.horses_or_humans()
    for early, key in [
        (EarlyStopping.DECAY_CURVE, "decayCurveStoppingSpec"),
        (EarlyStopping.CONVEX, "convexAutomatedStoppingSpec"),
    ]:
        spec = TuningJobSpec(
            **{
                **base.__dict__,
                "study": StudySpec(**{**base.study.__dict__, "early_stopping": early}),
            }
        )
        assert key in spec_to_json(spec)["studySpec"]
        assert from_proto(to_proto(spec)) == spec


def test_record_from_a_service_message() -> None:
    job = v1.HyperparameterTuningJob(
        name="projects/p/locations/us-central1/hyperparameterTuningJobs/42",
        display_name="h",
        state=v1.JobState.JOB_STATE_SUCCEEDED,
        create_time=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        study_spec=v1.StudySpec(
            metrics=[v1.StudySpec.MetricSpec(metric_id="loss", goal="MINIMIZE")]
        ),
        trial_job_spec=v1.CustomJobSpec(
            base_output_directory=v1.GcsDestination(output_uri_prefix="gs://b/h/")
        ),
        trials=[
            v1.Trial(
                id=str(i),
                state=v1.Trial.State.SUCCEEDED,
                parameters=[v1.Trial.Parameter(parameter_id="n", value=float(i * 64))],
                final_measurement=v1.Measurement(
                    metrics=[v1.Measurement.Metric(metric_id="loss", value=loss)]
                ),
            )
            for i, loss in [(1, 0.5), (2, 0.2), (3, 0.9)]
        ],
    )
    record = record_from_proto(job)
    assert record.kind is JobKind.HYPERPARAMETER_TUNING_JOB
    assert record.state is JobState.SUCCEEDED
    assert record.job_id == "42"
    assert record.create_time == "2026-01-02T03:04:05Z"
    assert record.start_time is None
    assert [t.trial_id for t in record.trials] == ["1", "2", "3"]
    assert record.best_trial is not None and record.best_trial.trial_id == "2"  # minimize
    assert record.best_trial.parameters == (("n", 128),)
    assert record.model_dir == "gs://b/h/2/model"


# --------------------------------------------------------------------- property

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_ 0123456789", min_size=1, max_size=20).filter(
    lambda s: s.strip() != ""
)
label_keys = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)
label_values = st.from_regex(r"[a-z0-9_-]{0,10}", fullmatch=True)
labels = st.dictionaries(label_keys, label_values, max_size=4).map(lambda d: tuple(d.items()))
machines = st.sampled_from(
    [
        MachineSpec("n1-standard-4"),
        MachineSpec("e2-standard-8"),
        MachineSpec("n1-standard-8", "NVIDIA_TESLA_V100", 1),
        MachineSpec("n1-highcpu-16", "NVIDIA_TESLA_T4", 4),
        MachineSpec("a2-highgpu-2g", "NVIDIA_TESLA_A100", 2),
        MachineSpec("g2-standard-24", "NVIDIA_L4", 2),
    ]
)
words = st.text(alphabet="abcxyz-=./0123456789", max_size=8)
containers = st.builds(
    ContainerSpec,
    image_uri=st.just(samples.IMAGE),
    command=st.lists(words, max_size=2).map(tuple),
    args=st.lists(words, max_size=4).map(tuple),
    env=st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,5}", fullmatch=True), words, max_size=3
    ).map(lambda d: tuple(d.items())),
)
disks = st.builds(
    DiskSpec,
    boot_disk_type=st.sampled_from(["pd-ssd", "pd-standard"]),
    boot_disk_size_gb=st.integers(100, 2000),
)


def pools(replicas: st.SearchStrategy[int]) -> st.SearchStrategy[WorkerPoolSpec]:
    return st.builds(
        WorkerPoolSpec, machine=machines, container=containers, replica_count=replicas, disk=disks
    )


@st.composite
def worker_pools(draw: st.DrawFn) -> tuple[WorkerPoolSpec | None, ...]:
    chief = draw(pools(st.just(1)))
    rest = draw(
        st.lists(
            st.one_of(st.none(), pools(st.integers(1, 4))),
            max_size=3,
        )
    )
    result: list[WorkerPoolSpec | None] = [chief, *rest]
    while result[-1] is None:
        result.pop()
    if len(result) == 4 and result[3] is not None:
        result[3] = WorkerPoolSpec(result[3].machine, result[3].container, 1, result[3].disk)
    return tuple(result)


@st.composite
def custom_jobs(
    draw: st.DrawFn, name: str | None = None, with_labels: bool = True
) -> CustomJobSpec:
    strategy = draw(st.sampled_from(list(SchedulingStrategy)))
    has_output = draw(st.booleans())
    return CustomJobSpec(
        display_name=name or draw(names),
        worker_pools=draw(worker_pools()),
        base_output_directory="gs://bucket/out" if has_output else None,
        service_account=draw(st.none() | st.just("sa@p.iam.gserviceaccount.com")),
        network=draw(st.none() | st.just("projects/1/global/networks/default")),
        labels=draw(labels) if with_labels else (),
        timeout_seconds=draw(st.none() | st.integers(1, 10**6)),
        restart_job_on_worker_restart=draw(st.booleans()),
        scheduling_strategy=strategy,
        max_wait_seconds=draw(st.none() | st.integers(1, 10**5))
        if strategy is SchedulingStrategy.FLEX_START
        else None,
        persistent_resource_id=draw(st.none() | st.just("pool-1"))
        if strategy is SchedulingStrategy.STANDARD
        else None,
        enable_web_access=draw(st.booleans()),
        tensorboard="projects/p/locations/us-central1/tensorboards/1"
        if has_output and draw(st.booleans())
        else None,
        kms_key_name=draw(
            st.none() | st.just("projects/p/locations/us-central1/keyRings/r/cryptoKeys/k")
        )
        if with_labels
        else None,
    )


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@st.composite
def parameters(draw: st.DrawFn, depth: int = 0, grid: bool = False) -> ParameterSpec:
    kinds = ["integer", "discrete", "categorical"] + ([] if grid else ["double"])
    kind = draw(st.sampled_from(kinds))
    pid = draw(st.from_regex(r"[a-z]{1,6}", fullmatch=True))
    scale = draw(st.sampled_from(list(ScaleType)))
    if kind == "double":
        low = draw(st.floats(1e-6, 1e3) if scale is not ScaleType.LINEAR else st.floats(-1e6, 1e5))
        high = draw(st.floats(low, 1e6, exclude_min=True, allow_infinity=False))
        return DoubleParameterSpec(pid, low, high, scale)
    children: tuple[ConditionalParameterSpec, ...] = ()
    if kind == "integer":
        low_i = draw(
            st.integers(1, 100) if scale is not ScaleType.LINEAR else st.integers(-100, 100)
        )
        high_i = draw(st.integers(low_i + 1, low_i + 100))
        parent_values: st.SearchStrategy[Any] = st.integers(low_i, high_i)
    elif kind == "discrete":
        values = tuple(
            sorted(
                draw(
                    st.sets(
                        st.floats(1e-3, 1e4) if scale is not ScaleType.LINEAR else finite,
                        min_size=1,
                        max_size=5,
                    )
                )
            )
        )
        parent_values = st.sampled_from(values)
    else:
        cats = tuple(
            draw(
                st.lists(
                    st.from_regex(r"[a-z]{1,5}", fullmatch=True),
                    min_size=1,
                    max_size=4,
                    unique=True,
                )
            )
        )
        parent_values = st.sampled_from(cats)
    if depth < 1:
        children = tuple(
            ConditionalParameterSpec(
                draw(parameters(depth + 1, grid)),
                tuple(draw(st.lists(parent_values, min_size=1, max_size=2, unique=True))),
            )
            for _ in range(draw(st.integers(0, 2)))
        )
    if kind == "integer":
        return IntegerParameterSpec(pid, low_i, high_i, scale, children)
    if kind == "discrete":
        return DiscreteParameterSpec(pid, values, scale, children)
    return CategoricalParameterSpec(pid, cats, children)


@st.composite
def tuning_jobs(draw: st.DrawFn) -> TuningJobSpec:
    name = draw(names)
    algorithm = draw(st.sampled_from(list(SearchAlgorithm)))
    early = draw(st.sampled_from(list(EarlyStopping)))
    max_trials = draw(st.integers(1, 50))
    return TuningJobSpec(
        display_name=name,
        trial_job=draw(custom_jobs(name=name, with_labels=False)),
        study=StudySpec(
            metrics=(
                MetricSpec(
                    draw(st.from_regex(r"[a-z_]{1,8}", fullmatch=True)),
                    draw(st.sampled_from(list(MetricGoal))),
                ),
            ),
            parameters=tuple(
                draw(
                    st.lists(
                        parameters(grid=algorithm is SearchAlgorithm.GRID), min_size=1, max_size=3
                    )
                )
            ),
            algorithm=algorithm,
            measurement_selection=draw(st.sampled_from(list(MeasurementSelection))),
            early_stopping=early,
            early_stopping_uses_elapsed_duration=early is not EarlyStopping.NONE
            and draw(st.booleans()),
        ),
        max_trial_count=max_trials,
        parallel_trial_count=draw(st.integers(1, max_trials)),
        max_failed_trial_count=draw(st.integers(0, 5)),
        labels=draw(labels),
        kms_key_name=draw(
            st.none() | st.just("projects/p/locations/us-central1/keyRings/r/cryptoKeys/k")
        ),
    )


def _round_trip(spec: JobSpec) -> None:
    message = to_proto(spec)
    # Through the wire bytes too, as the client sends and the service answers.
    wire = type(message).deserialize(type(message).serialize(message))
    assert from_proto(wire) == spec
    kind = (
        JobKind.HYPERPARAMETER_TUNING_JOB if isinstance(spec, TuningJobSpec) else JobKind.CUSTOM_JOB
    )
    assert spec_from_json(kind, spec_to_json(spec)) == spec
    _rest_matches_proto(spec, kind)


def _shape(value: Any, key: str = "") -> Any:
    """``value`` with its key order made visible; maps (labels) compare unordered."""
    if isinstance(value, dict):
        items = sorted(value.items()) if key == "labels" else list(value.items())
        return [(k, _shape(v, k)) for k, v in items]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return (type(value).__name__, value)


def _rest_matches_proto(spec: JobSpec, kind: JobKind) -> None:
    """The plain-Python REST form is MessageToDict of the message, key for key."""
    rest = spec_to_json(spec)
    for message in (proto_reference.to_proto(spec), to_proto(spec)):
        expected = json_format.MessageToDict(type(message).pb(message))
        assert rest == expected
        # Same key order and value types too (1 vs "1" vs 1.0), as JSON text shows them.
        assert _shape(rest) == _shape(expected)
        assert spec_from_json(kind, expected) == spec


def test_rest_form_matches_message_to_dict_for_the_codelab_jobs() -> None:
    _rest_matches_proto(samples.cassava(), JobKind.CUSTOM_JOB)
    _rest_matches_proto(samples.cassava(accelerator=None), JobKind.CUSTOM_JOB)
    _rest_matches_proto(samples.horses_or_humans(), JobKind.HYPERPARAMETER_TUNING_JOB)


def test_rest_form_keeps_negative_zero_like_protobuf() -> None:
    # -0.0 differs from the default 0.0 bit for bit: protobuf keeps it, and so must we.
    base = samples.horses_or_humans()
    study = StudySpec(
        metrics=base.study.metrics,
        parameters=(DoubleParameterSpec("x", -0.0, 1.0), DiscreteParameterSpec("y", (-0.0, 2.0))),
    )
    spec = TuningJobSpec(**{**base.__dict__, "study": study})
    _rest_matches_proto(spec, JobKind.HYPERPARAMETER_TUNING_JOB)
    parameters = spec_to_json(spec)["studySpec"]["parameters"]
    assert parameters[0]["doubleValueSpec"] == {"minValue": -0.0, "maxValue": 1.0}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(custom_jobs())
def test_every_valid_custom_job_round_trips(spec: CustomJobSpec) -> None:
    assert spec_issues(spec, region="us-central1") == []
    _round_trip(spec)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(tuning_jobs())
def test_every_valid_tuning_job_round_trips(spec: TuningJobSpec) -> None:
    # Rarely (~1%) a child parameter id repeats another one: not a valid spec.
    assume(spec_issues(spec, region="us-central1") == [])
    _round_trip(spec)
