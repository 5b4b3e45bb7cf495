"""Two platforms in one stack: every globally or project-scoped name is their own."""

from __future__ import annotations

import re
from typing import Any

import pytest

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.pulumi_mocks import PulumiRun, run_pulumi
from vertex_training.platform.names import (
    BUCKET_NAME_MAX,
    SERVICE_ACCOUNT_ID_MAX,
    derived_bucket_name,
    name_qualifier,
    platform_names,
)
from vertex_training.platform.rules import bucket_name_problems

ACCOUNT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
PROJECT = "team-project-1"


def platform(name: str, **extra: Any) -> None:
    """A dev platform with a Workbench and a TensorBoard (everything named)."""
    vt.TrainingPlatform(
        name,
        vt.TrainingPlatformArgs(
            environment="dev",
            project=PROJECT,
            workbench=vt.Workbench(),
            tensorboard=vt.TensorBoard(),
            **extra,
        ),
    )


def two_platforms(first: str = "research", second: str = "prod-like") -> None:
    trainer = vt.ImageBuild(
        context=PROJECT_ROOT, dockerfile=PROJECT_ROOT / "docker/trainer.Dockerfile"
    )
    for name in (first, second):
        platform(name, images={"trainer": trainer})


def cloud_names(run: PulumiRun) -> list[tuple[str, str]]:
    """(type, name in Google Cloud) of what is named in a namespace wider than a component."""
    keys = {
        "gcp:storage/bucket:Bucket": "name",
        "gcp:serviceaccount/account:Account": "accountId",
        "gcp:workbench/instance:Instance": "name",
        "gcp:projects/iAMCustomRole:IAMCustomRole": "roleId",
        "gcp:artifactregistry/repository:Repository": "repositoryId",
    }
    return [(r.type, r.inputs[keys[r.type]]) for r in run.registrations if r.type in keys]


def test_two_platforms_in_one_stack_name_everything_apart() -> None:
    names = cloud_names(run_pulumi(two_platforms, stack="team"))
    # bucket, two accounts, instance, role, repository: each twice
    assert len(names) == 2 * 6
    assert len(set(names)) == len(names), sorted(names)


@pytest.mark.parametrize(
    "component, qualifier", [("platform", None), ("ml", "")], ids=["platform", "opt-out"]
)
def test_the_platform_named_platform_keeps_the_names_stacks_had(
    component: str, qualifier: str | None
) -> None:
    program = run_pulumi(lambda: platform(component, name_qualifier=qualifier), stack="dev")
    assert sorted(cloud_names(program)) == [
        ("gcp:projects/iAMCustomRole:IAMCustomRole", "vertexTensorboardWriter_dev"),
        ("gcp:serviceaccount/account:Account", "vtx-train-dev"),
        ("gcp:serviceaccount/account:Account", "vtx-workbench-dev"),
        ("gcp:storage/bucket:Bucket", f"{PROJECT}-dev-vertex"),
        ("gcp:workbench/instance:Instance", "vertex-workbench-dev"),
    ]


@pytest.mark.parametrize(
    "stack, component",
    [
        ("dev", "research"),
        ("a-rather-long-team-stack-name", "prod-like-platform-of-the-team"),
        ("a-rather-long-team-stack-name", "prod-like-platform-of-the-teams"),
        ("x", "Research_Platform"),
    ],
)
def test_derived_names_stay_within_google_cloud_limits(stack: str, component: str) -> None:
    qualifier = name_qualifier(component)
    names = platform_names(stack, qualifier)
    for account in (names.training_account_id, names.workbench_account_id):
        assert len(account) <= SERVICE_ACCOUNT_ID_MAX and ACCOUNT_ID.match(account), account
    assert re.match(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", names.workbench_instance)
    assert re.match(r"^[a-zA-Z0-9_.]{3,64}$", names.tensorboard_role_id)
    bucket = derived_bucket_name("a-thirty-character-project-id1", stack, qualifier)
    assert len(bucket) <= BUCKET_NAME_MAX and bucket.endswith("-vertex")
    assert bucket_name_problems(bucket) == []


def test_long_names_that_differ_only_at_their_end_stay_distinct() -> None:
    stack = "a-rather-long-team-stack-name"
    one = platform_names(stack, "prod-like-platform-of-the-team-1")
    two = platform_names(stack, "prod-like-platform-of-the-team-2")
    assert one.workbench_account_id != two.workbench_account_id
    assert one.training_account_id != two.training_account_id
    assert one.workbench_instance != two.workbench_instance
    project = "a-thirty-character-project-id1"
    assert derived_bucket_name(project, stack, "team-1") != derived_bucket_name(
        project, stack, "team-2"
    )


def test_a_qualifier_google_cloud_would_refuse_is_refused_by_its_argument() -> None:
    with pytest.raises(vt.InvalidArgumentsError) as raised:
        run_pulumi(
            lambda: vt.TrainingPlatform(
                "ml",
                vt.TrainingPlatformArgs(environment="dev", project=PROJECT, name_qualifier="Ml_1"),
            )
        )
    assert "TrainingPlatformArgs.name_qualifier: 'Ml_1' invalid; valid: None" in str(raised.value)
