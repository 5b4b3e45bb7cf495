"""Typed Args of the served models: ``ModelArgs``, ``EndpointArgs`` and ``DeploymentArgs``.

Like the jobs', they are frozen keyword-only dataclasses whose fields follow the Vertex API
in snake_case; each builds its REST body in one direction (``Model``, ``Endpoint``,
``DeployedModel``), ``extra_fields`` merged in last, and the rules run once here, before
anything is registered, naming each problem's field path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from vertex_training._checks import Checked, InvalidArgumentsError, JudgedOnce
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import SERVING_IMAGE, JobPlatform, job_platform
from vertex_training.jobs.body import merge_fields, to_body, vertex
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.serving.rules import deployment_findings, image_findings, traffic_findings

LOCAL_SERVING_IMAGE = "serving:local"
"""The image a local model names: the local twin runs the same server from the checkout."""


@dataclass(frozen=True, kw_only=True)
class _Placed(JudgedOnce):
    platform: JobPlatform | None = None
    """Where it lives (project, region, labels, local root); None: give project and region."""
    project: str | None = None
    """Without a platform: the Google Cloud project."""
    region: str | None = None
    """Without a platform: the Vertex region (``us-central1``)."""
    display_name: pulumi.Input[str] | None = None
    """None: the resource name."""
    description: pulumi.Input[str] | None = None
    labels: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Added to the platform's labels."""
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other field of the REST body, in the API's camelCase, merged in last."""


@dataclass(frozen=True, kw_only=True)
class ModelArgs(_Placed):
    """A model in Vertex AI Model Registry, uploaded from a job's model directory."""

    job: pulumi.Resource | None = None
    """A ``CustomJob`` (its ``AIP_MODEL_DIR``) or ``HyperparameterTuningJob`` (its best
    trial's ``<baseOutputDirectory>/<trial id>/model``). When the job is replaced and
    trains again, its new model becomes a new version of this model."""
    artifact_uri: pulumi.Input[str] | None = None
    """Instead of ``job``: the directory holding the SavedModel (``Model.artifactUri``)."""
    image: pulumi.Input[str] | None = None
    """``containerSpec.imageUri``; None: the platform's ``serving`` image (our prediction
    server, built from docker/serving.Dockerfile, by digest); locally the same server runs
    from the checkout. A prebuilt image
    (``us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest``) is allowed, with a
    warning when its TensorFlow is older than the trainer's."""
    version_description: pulumi.Input[str] | None = None
    version_aliases: Sequence[str] = ()
    """Aliases of the newest version (``production``...): they move to each new version."""


def model_version_of(model: pulumi.Resource | pulumi.Input[str]) -> pulumi.Input[str]:
    """What a deployment names: a ``Model``'s current version, or the name as given."""
    # Only a resource's attribute: an Output (a version's name from another resource) would
    # lift ``version_name`` into an attribute of the text it resolves to.
    version = getattr(model, "version_name", None) if isinstance(model, pulumi.Resource) else None
    return version if version is not None else model  # type: ignore[return-value]


@dataclass(frozen=True, kw_only=True)
class DeploymentArgs(Checked):
    """One model deployed to an endpoint (``DeployedModel`` with ``dedicatedResources``)."""

    model: pulumi.Resource | pulumi.Input[str] = field(
        metadata=vertex("model", encode=model_version_of)
    )
    """A ``Model`` (its current version), or a version's name
    ``projects/P/locations/L/models/ID@V``."""
    machine_type: str = field(
        default="n1-standard-2", metadata=vertex("dedicatedResources.machineSpec.machineType")
    )
    """``dedicatedResources.machineSpec.machineType``: a prediction machine
    (``vertex_training/serving/prediction_catalog.json``)."""
    accelerator_type: str | None = field(
        default=None, metadata=vertex("dedicatedResources.machineSpec.acceleratorType")
    )
    """``machineSpec.acceleratorType`` (``NVIDIA_TESLA_T4``...); a2, a3 and g2 machines
    come with theirs."""
    accelerator_count: int | None = field(
        default=None, metadata=vertex("dedicatedResources.machineSpec.acceleratorCount")
    )
    """``machineSpec.acceleratorCount``; None: 1 with an ``accelerator_type``."""
    min_replica_count: int = field(default=1, metadata=vertex("dedicatedResources.minReplicaCount"))
    """``dedicatedResources.minReplicaCount``: replicas kept running (and billed)."""
    max_replica_count: int | None = field(
        default=None, metadata=vertex("dedicatedResources.maxReplicaCount")
    )
    """None: ``min_replica_count`` (no autoscaling)."""
    display_name: str | None = None
    """None: the deployment's name."""
    service_account: pulumi.Input[str] | None = None
    """The identity the serving container runs as; None: Vertex's default."""
    extra_fields: Mapping[str, Any] = field(default_factory=dict)
    """Any other ``DeployedModel`` field, in camelCase, merged in last."""


@dataclass(frozen=True, kw_only=True)
class EndpointArgs(_Placed):
    """A Vertex AI endpoint with its deployed models and their traffic split."""

    deployments: Mapping[str, DeploymentArgs] = field(default_factory=dict)
    """Deployed models by a name of ours (the traffic split's keys)."""
    traffic: Mapping[str, int] = field(default_factory=dict)
    """Percent of requests by deployment name, summing to 100; empty with one deployment:
    all of it."""


Judged = tuple[str, str, Finding]
"""A serving rule's finding on Args: the field it is about (``image``, ``traffic``,
``deployments``), the deployment's name (or ``""``), and the finding, its path relative to
that (a ``DeployedModel`` path, a deployment's name in the split)."""


def judged(args: _Placed, environment: str, region: str | None) -> list[Judged]:
    """The serving rules on ``args`` in ``environment`` (``region`` None: local, only the
    shapes are judged); what was found of Args judged there already (a stack's)."""
    kept = args.findings_on((environment, region))
    if kept is not None:
        return list(kept)
    found: list[Judged] = []
    if isinstance(args, ModelArgs) and isinstance(args.image, str):
        found += [("image", "", f) for f in image_findings(args.image, environment=environment)]
    if isinstance(args, EndpointArgs):
        for key, deployment in sorted(args.deployments.items()):  # typed by Checked
            for f in deployment_findings(deployment_body(key, deployment), region):
                found.append(("deployments", key, f))
        for f in traffic_findings(traffic_of(args), args.deployments):
            found.append(("traffic", "", f))
    return found


def located(found: list[Judged], spelling: str) -> list[Finding]:
    """Each finding at the caller's path in ``spelling`` (``python``: ``deployments['blue']
    .machine_type``; ``yaml``: ``deployments.blue.machineType``) and at its Vertex field
    (``DeployedModel.dedicatedResources...``; ``""`` where the caller's key is it)."""
    out = []
    for field_name, key, f in found:
        if field_name == "deployments":
            inner = caller_path(DeploymentArgs, f.path, spelling) if f.path else ""
            name = f"['{key}']" if spelling == "python" else f".{key}"
            caller = f"deployments{name}" + (f".{inner}" if inner else "")
            api = f"DeployedModel.{f.path}" if f.path else ""
        elif field_name == "traffic":
            name = f"['{f.path}']" if spelling == "python" else f".{f.path}"
            caller, api = "traffic" + (name if f.path else ""), ""
        else:
            caller, api = field_name, "Model.containerSpec.imageUri"
        out.append(dataclasses.replace(f, path=api, caller=caller))
    return out


def refuse(where: str, found: list[Judged]) -> list[Finding]:
    """Raise naming every error in ``found`` at its Python path under ``where``; else the
    warnings, for the resource to log."""
    findings = located(found, "python")
    errors = [f.at(f"{where}.{f.caller}") for f in findings if f.severity == "error"]
    if errors:
        raise InvalidArgumentsError("\n".join(render(f, "python") for f in errors), errors)
    return [f.at(f"{where}.{f.caller}") for f in findings if f.severity != "error"]


def where_served(args: _Placed) -> tuple[JobPlatform, str | None]:
    """Where a model or endpoint lives (its platform, else its own project and region, as a
    job's) and the region its hardware is judged in (None on a local platform)."""
    platform = job_platform(args)  # type: ignore[arg-type]
    return platform, None if platform.environment == "local" else platform.region


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def model_body(name: str, args: ModelArgs, platform: JobPlatform) -> dict[str, Any]:
    """The ``Model`` REST body ``args`` declare on ``platform``; raises
    ``InvalidArgumentsError`` naming every problem of its source and image."""
    where = f"Model {name!r}"
    errors: list[str] = []
    artifact: pulumi.Input[str] | None = args.artifact_uri
    if (args.job is None) == (args.artifact_uri is None):
        errors.append(f"{where}: give exactly one of job (a training job) and artifact_uri")
    elif args.job is not None:
        if not hasattr(args.job, "model_dir"):
            errors.append(
                f"{where}.job: {type(args.job).__name__} is not a training job; valid: a "
                "CustomJob or HyperparameterTuningJob"
            )
        elif not getattr(args.job, "writes_model", True):
            errors.append(
                f"{where}.job: the job writes no model: its body has no "
                "baseOutputDirectory, so Vertex gives it no AIP_MODEL_DIR; valid: a job with "
                "base_output_directory set (a platform sets one)"
            )
        else:
            artifact = args.job.model_dir  # type: ignore[attr-defined]
    image = args.image
    if image is None:
        if platform.environment == "local":
            image = LOCAL_SERVING_IMAGE
        else:
            platform_image = getattr(args.platform, "image", None)
            try:
                image = platform_image(SERVING_IMAGE) if platform_image else None
            except (KeyError, ValueError, pulumi.RunError):
                image = None
            if image is None:
                errors.append(
                    f"{where}.image: not set, and the platform has no {SERVING_IMAGE!r} "
                    "image; valid: images={'serving': ImageBuild(dockerfile="
                    "'docker/serving.Dockerfile')} on the platform, or an image by digest"
                )
    if errors:
        raise InvalidArgumentsError("\n".join(errors))
    body = _present(
        displayName=args.display_name or name,
        description=args.description,
        versionDescription=args.version_description,
        artifactUri=artifact,
        containerSpec={"imageUri": image},
        labels={**platform.labels, **args.labels},
    )
    return merge_fields(body, args.extra_fields)


def deployment_body(key: str, deployment: DeploymentArgs) -> dict[str, Any]:
    """The ``DeployedModel`` body (no id yet) of the deployment named ``key``."""
    body = to_body(deployment)
    body.setdefault("displayName", key)
    body["dedicatedResources"].setdefault("maxReplicaCount", deployment.min_replica_count)
    return body


def traffic_of(args: EndpointArgs) -> dict[str, int]:
    """The declared split; empty with one deployment: all of it to that one."""
    if not args.traffic and len(args.deployments) == 1:
        return {next(iter(args.deployments)): 100}
    return dict(args.traffic)


def endpoint_bodies(
    name: str, args: EndpointArgs, platform: JobPlatform
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, int]]:
    """The ``Endpoint`` body, each deployment's ``DeployedModel`` body (no id yet) and the
    traffic split by deployment (the Args are judged: ``judged``)."""
    deployments = {key: deployment_body(key, d) for key, d in sorted(args.deployments.items())}
    endpoint = _present(
        displayName=args.display_name or name,
        description=args.description,
        labels={**platform.labels, **args.labels},
    )
    return merge_fields(endpoint, args.extra_fields), deployments, traffic_of(args)


__all__ = [
    "LOCAL_SERVING_IMAGE",
    "DeploymentArgs",
    "EndpointArgs",
    "Judged",
    "ModelArgs",
    "deployment_body",
    "endpoint_bodies",
    "judged",
    "located",
    "model_body",
    "refuse",
    "where_served",
]
