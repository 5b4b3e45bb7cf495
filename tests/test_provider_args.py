"""The provider's args are the Python Args: derived from their fields (a new field is in
the schema without another file touched), and read back in stack YAML's spelling."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

import pytest

from vertex_training.jobs import api, pools
from vertex_training.jobs.body import vertex
from vertex_training.provider.schema import args_type, yaml_spelling


def test_a_field_added_to_the_args_is_in_the_derived_type() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Grown(pools.Scheduling):
        """Scheduling with one more Vertex field."""

        max_restarts: int | None = field(default=None, metadata=vertex("maxRestarts"))

    derived = args_type(Grown)
    assert typing.get_args(derived.__annotations__["max_restarts"]) == (int,)  # NotRequired
    assert "max_restarts" in derived.__optional_keys__
    assert set(derived.__annotations__) == {f.name for f in dataclasses.fields(Grown)}


def test_required_fields_are_required() -> None:
    derived = args_type(api.HyperparameterTuningJobArgs, frozenset({"platform"}))
    assert derived.__required_keys__ == {
        "trial",
        "study",
        "max_trial_count",
        "parallel_trial_count",
    }


def test_values_are_read_back_in_stack_yaml_spelling() -> None:
    derived = args_type(api.HyperparameterTuningJobArgs, frozenset({"platform"}))
    received = {
        "max_trial_count": 6.0,  # numbers cross the engine as floats
        "trial": {"chief": {"machine_type": "n1-standard-4", "env": {"TF_CPP_MIN_LOG_LEVEL": "2"}}},
        "labels": {"cost_center": "ml"},
        "extra_fields": {"trialJobSpec": {"enable_web_access": True}},
        "study": {
            "parameters": [
                {
                    "type": "IntegerParameter",
                    "parameter_id": "units",
                    "min_value": 8.0,
                    "max_value": 64.0,
                },
                {
                    "type": "DoubleParameter",
                    "parameter_id": "lr",
                    "min_value": 0.5,
                    "max_value": 1.0,
                },
            ]
        },
    }
    assert yaml_spelling(received, derived) == {
        "maxTrialCount": 6,
        "trial": {"chief": {"machineType": "n1-standard-4", "env": {"TF_CPP_MIN_LOG_LEVEL": "2"}}},
        # A mapping's own keys and extra_fields stay as written.
        "labels": {"cost_center": "ml"},
        "extraFields": {"trialJobSpec": {"enable_web_access": True}},
        "study": {
            "parameters": [
                {"type": "IntegerParameter", "parameterId": "units", "minValue": 8, "maxValue": 64},
                {"type": "DoubleParameter", "parameterId": "lr", "minValue": 0.5, "maxValue": 1.0},
            ]
        },
    }


def test_only_the_provider_process_imports_the_provider() -> None:
    from tests.test_layers import _graph

    importers = {
        module
        for module, targets in _graph().items()
        if not module.startswith("vertex_training.provider")
        and any(t.startswith("vertex_training.provider") for t in targets)
    }
    assert importers == set()


def test_a_reference_to_anything_but_a_component_of_this_program_is_refused_by_name() -> None:
    from vertex_training.provider.components import ArgsError, TrainingPlatform, _referenced

    urn = "urn:pulumi:local::p::vertex-training:index:TrainingPlatform::elsewhere"
    try:
        _referenced("CustomJob", "job", "platform", urn, (TrainingPlatform,))
    except ArgsError as error:
        (found,) = error.errors
    else:
        raise AssertionError("a URN was taken for a platform")
    assert found["property_path"] == "platform"
    assert found["reason"].startswith("not a TrainingPlatform of this program. Valid: ")


def test_a_deployments_model_given_as_an_output_is_that_output() -> None:
    """Other languages pass a Model's ``versionName`` (an Output): a version's name, not a
    resource whose ``version_name`` would be lifted out of the text."""
    import pulumi

    from vertex_training.serving.api import model_version_of

    version = pulumi.Output.from_input("projects/p/locations/l/models/m@1")
    assert model_version_of(version) is version


def test_a_platform_rule_on_a_component_job_says_what_is_valid() -> None:
    """A rule that needs the platform (the job's region) keeps its ``valid`` on the way to
    the component's error, said as every other component problem says it."""
    from tests.pulumi_mocks import run_pulumi
    from vertex_training.provider.components import ArgsError, CustomJob, TrainingPlatform

    def program() -> None:
        platform = TrainingPlatform(
            "p", {"environment": "dev", "project": "my-project", "region": "us-central1"}
        )
        image = "us-docker.pkg.dev/p/r/i@sha256:" + "0" * 64
        CustomJob(
            "j",
            {
                "platform": platform,
                "chief": {"machineType": "n1-standard-4", "image": image},
                "tensorboard": "projects/p/locations/europe-west4/tensorboards/42",
            },
        )

    with pytest.raises(ArgsError) as raised:
        run_pulumi(program, stack="dev")
    (found,) = raised.value.errors
    assert found["property_path"] == "tensorboard"
    assert found["reason"].startswith(
        "'projects/p/locations/europe-west4/tensorboards/42' is in europe-west4, not in the "
        "region us-central1 (jobs stream only to a TensorBoard in their own region). "
        "Valid: projects/P/locations/us-central1/tensorboards/ID. Fix: "
    )
