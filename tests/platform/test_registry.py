"""Trainer repository: Docker format, in the jobs' region, keeps the N newest versions."""

from __future__ import annotations

from tests.pulumi_mocks import run_pulumi
from vertex_training.platform.registry import TrainerRepository, TrainerRepositoryArgs

REPOSITORY = "gcp:artifactregistry/repository:Repository"
ARGS = TrainerRepositoryArgs(
    project="p-1", region="europe-west4", repository_id="trainers", keep_count=7
)


def test_docker_repository_in_the_region() -> None:
    run = run_pulumi(lambda: TrainerRepository("registry", ARGS).url)
    repository = run.one(REPOSITORY)
    assert repository.name == "registry-repository"
    assert repository.inputs["format"] == "DOCKER"
    assert repository.inputs["location"] == "europe-west4"
    assert repository.inputs["repositoryId"] == "trainers"
    assert repository.parent == run.one("vertex-training:platform:TrainerRepository").urn


def test_cleanup_policy_keeps_the_most_recent_versions() -> None:
    repository = run_pulumi(lambda: TrainerRepository("registry", ARGS).url).one(REPOSITORY)
    assert repository.inputs["cleanupPolicyDryRun"] is False
    policies = {p["id"]: p for p in repository.inputs["cleanupPolicies"]}
    assert policies["keep-most-recent"]["action"] == "KEEP"
    assert policies["keep-most-recent"]["mostRecentVersions"] == {"keepCount": 7}
    # KEEP only protects from a DELETE policy: without one nothing would ever be cleaned.
    assert policies["delete-old-versions"]["action"] == "DELETE"
    assert policies["delete-old-versions"]["condition"]["tagState"] == "ANY"


def test_url_and_host() -> None:
    urls: list[str] = []

    def program() -> None:
        repository = TrainerRepository("registry", ARGS)
        assert repository.host == "europe-west4-docker.pkg.dev"
        repository.url.apply(urls.append)

    run_pulumi(program)
    assert urls == ["europe-west4-docker.pkg.dev/p-1/trainers"]
