"""Project services: every API the platform needs, never disabled on destroy."""

from __future__ import annotations

from tests.pulumi_mocks import run_pulumi
from vertex_training.platform.project_services import (
    PLATFORM_SERVICES,
    ProjectServices,
    ProjectServicesArgs,
)

SERVICE = "gcp:projects/service:Service"


def build() -> None:
    ProjectServices("services", ProjectServicesArgs(project="p-1"))


def test_the_codelab_apis_are_enabled() -> None:
    run = run_pulumi(build)
    enabled = {r.inputs["service"] for r in run.of_type(SERVICE)}
    assert enabled == set(PLATFORM_SERVICES)
    assert {
        "compute.googleapis.com",
        "aiplatform.googleapis.com",
        "notebooks.googleapis.com",
        "artifactregistry.googleapis.com",
        "storage.googleapis.com",
        "iam.googleapis.com",
    } <= enabled


def test_apis_stay_enabled_after_destroy() -> None:
    run = run_pulumi(build)
    for service in run.of_type(SERVICE):
        assert service.inputs["disableOnDestroy"] is False, service.name
        assert service.inputs["disableDependentServices"] is False, service.name
        assert service.inputs["project"] == "p-1"


def test_children_are_named_after_the_component_and_parented() -> None:
    run = run_pulumi(build)
    component = run.one("vertex-training:platform:ProjectServices")
    children = run.children_of(component)
    assert {c.name for c in children} == {
        f"services-{api.split('.')[0]}" for api in PLATFORM_SERVICES
    }
    assert len(children) == len(run.registrations) - 1
