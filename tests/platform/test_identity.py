"""Identity: two accounts, least roles, bucket and registry grants scoped to the resource."""

from __future__ import annotations

from tests.platform import FORBIDDEN_ROLES
from tests.pulumi_mocks import Registration, run_pulumi
from vertex_training.platform.identity import PlatformIdentity, PlatformIdentityArgs

ACCOUNT = "gcp:serviceaccount/account:Account"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
REPOSITORY_MEMBER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
ACCOUNT_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"

TRAINING = "serviceAccount:vtx-train-dev@p-1.iam.gserviceaccount.com"
WORKBENCH = "serviceAccount:vtx-workbench-dev@p-1.iam.gserviceaccount.com"


def args(workbench: bool = True) -> PlatformIdentityArgs:
    return PlatformIdentityArgs(
        project="p-1",
        bucket_name="p-1-dev-vertex",
        repository_location="us-central1",
        repository_id="trainers",
        training_account_id="vtx-train-dev",
        workbench_account_id="vtx-workbench-dev" if workbench else None,
    )


def grants(run_registrations: list[Registration]) -> set[tuple[str, str, str]]:
    """(member, role, scope) for every IAM grant."""
    found = set()
    for r in run_registrations:
        if "member" not in r.inputs or r.type == ACCOUNT:
            continue
        scope = {
            PROJECT_MEMBER: f"project:{r.inputs.get('project')}",
            BUCKET_MEMBER: f"bucket:{r.inputs.get('bucket')}",
            REPOSITORY_MEMBER: f"repository:{r.inputs.get('repository')}",
            ACCOUNT_MEMBER: f"account:{r.inputs.get('serviceAccountId', '').rsplit('/', 1)[-1]}",
        }[r.type]
        found.add((r.inputs["member"], r.inputs["role"], scope))
    return found


def test_least_roles_each_scoped_to_its_resource() -> None:
    run = run_pulumi(lambda: PlatformIdentity("identity", args()).training_email)
    assert grants(run.registrations) == {
        (TRAINING, "roles/storage.objectAdmin", "bucket:p-1-dev-vertex"),
        (WORKBENCH, "roles/storage.objectAdmin", "bucket:p-1-dev-vertex"),
        (WORKBENCH, "roles/artifactregistry.writer", "repository:trainers"),
        (WORKBENCH, "roles/aiplatform.user", "project:p-1"),
        (WORKBENCH, "roles/logging.logWriter", "project:p-1"),
        (
            WORKBENCH,
            "roles/iam.serviceAccountUser",
            "account:vtx-train-dev@p-1.iam.gserviceaccount.com",
        ),
    }


def test_no_primitive_role_and_no_storage_role_on_the_project() -> None:
    run = run_pulumi(lambda: PlatformIdentity("identity", args()).training_email)
    roles = [r.inputs["role"] for r in run.registrations if "role" in r.inputs]
    assert roles and not FORBIDDEN_ROLES.intersection(roles)
    for grant in run.of_type(PROJECT_MEMBER):
        assert not grant.inputs["role"].startswith("roles/storage."), grant.name


def test_accounts_and_children() -> None:
    run = run_pulumi(lambda: PlatformIdentity("identity", args()).training_email)
    accounts = {r.name: r.inputs["accountId"] for r in run.of_type(ACCOUNT)}
    assert accounts == {
        "identity-training": "vtx-train-dev",
        "identity-workbench": "vtx-workbench-dev",
    }
    component = run.one("vertex-training:platform:PlatformIdentity")
    assert len(run.children_of(component)) == len(run.registrations) - 1
    assert all(r.name.startswith("identity-") for r in run.children_of(component))


def test_without_workbench_only_the_training_account() -> None:
    emails: list[object] = []

    def program() -> None:
        identity = PlatformIdentity("identity", args(workbench=False))
        emails.append(identity.workbench_email)

    run = run_pulumi(program)
    assert emails == [None]
    assert [r.name for r in run.of_type(ACCOUNT)] == ["identity-training"]
    assert grants(run.registrations) == {
        (TRAINING, "roles/storage.objectAdmin", "bucket:p-1-dev-vertex")
    }
