"""Typed Args of the served models: ``ModelArgs``, ``EndpointArgs`` and ``DeploymentArgs``.

Like the jobs', they are frozen keyword-only dataclasses whose fields follow the Vertex API
in snake_case; each builds its REST body in one direction (``Model``, ``Endpoint``,
``DeployedModel``), ``extra_fields`` merged in last, and the rules run once here, before
anything is registered, naming each problem's field path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from vertex_training._checks import Checked, InvalidArgumentsError
from vertex_training._dynamic import BackendKind, BackendSettings
from vertex_training.jobs.api import SERVING_IMAGE, JobPlatform
from vertex_training.jobs.fields import merge_fields, to_body, vertex
from vertex_training.serving.rules import deployment_problems, image_problems, traffic_problems

LOCAL_SERVING_IMAGE = "serving:local"
"""The image a local model names: the local twin runs the same server from the checkout."""


@dataclass(frozen=True, kw_only=True)
class _Placed(Checked):
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


@dataclass(frozen=True)
class ServingContext:
    """Where a model or endpoint lives, resolved from a platform or its own Args."""

    environment: str
    region: str
    project: pulumi.Input[str]
    backend: BackendSettings
    labels: Mapping[str, str]


def serving_context(
    resource: str, resource_name: str, args: object, args_type: type[_Placed]
) -> ServingContext:
    """Where the ``resource`` (``Model``, ``Endpoint``) ``resource_name`` lives; ``args``
    that are not its ``args_type`` are refused."""
    if not isinstance(args, args_type):
        article = "an" if args_type.__name__[0] in "AEIOU" else "a"
        raise InvalidArgumentsError(
            f"{resource}({resource_name!r}): args must be {article} {args_type.__name__}, "
            f"got {type(args).__name__}"
        )
    where = f"{resource} {resource_name!r}"
    platform = args.platform
    if platform is None:
        if args.project is None or args.region is None:
            raise InvalidArgumentsError(
                f"{where}: no platform, so project and region must be set; valid: "
                "platform=<a vt.TrainingPlatform>, or project='my-project', region='us-central1'"
            )
        settings = BackendSettings(BackendKind.VERTEX, project=args.project, location=args.region)
        return ServingContext("dev", args.region, args.project, settings, {})
    return ServingContext(
        platform.environment,
        platform.region,
        platform.project,
        BackendSettings.of(platform),
        dict(platform.labels),
    )


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def model_body(
    name: str, args: ModelArgs, context: ServingContext
) -> tuple[dict[str, Any], list[str]]:
    """The ``Model`` REST body ``args`` declare, and the warnings of its rules; raises
    ``InvalidArgumentsError`` naming every problem."""
    where = f"Model {name!r}"
    errors: list[str] = []
    warnings: list[str] = []
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
        if context.backend.kind is BackendKind.LOCAL:
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
    if isinstance(image, str):
        bad, warn = image_problems(
            f"{where}.containerSpec.imageUri", image, environment=context.environment
        )
        errors += bad
        warnings += warn
    if errors:
        raise InvalidArgumentsError("\n".join(errors))
    body = _present(
        displayName=args.display_name or name,
        description=args.description,
        versionDescription=args.version_description,
        artifactUri=artifact,
        containerSpec={"imageUri": image},
        labels={**context.labels, **args.labels},
    )
    return merge_fields(body, args.extra_fields), warnings


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


def endpoint_problems(
    where: str, args: EndpointArgs, region: str | None
) -> tuple[list[str], list[str]]:
    """Errors and warnings of an endpoint's deployments and traffic split, each
    ``"<where>.deployments.<name>.<API path>: ...; valid: ..."`` or ``"<where>.traffic..."``
    (``region`` None: local, only the shape is judged)."""
    errors: list[str] = []
    warnings: list[str] = []
    for key, deployment in sorted(args.deployments.items()):
        if not isinstance(deployment, DeploymentArgs):
            errors.append(
                f"{where}.deployments.{key}: a {type(deployment).__name__}; valid: DeploymentArgs"
            )
            continue
        bad, warn = deployment_problems(
            f"{where}.deployments.{key}",
            machine_type=deployment.machine_type,
            accelerator_type=deployment.accelerator_type,
            accelerator_count=deployment.accelerator_count,
            min_replica_count=deployment.min_replica_count,
            max_replica_count=deployment.max_replica_count,
            region=region,
        )
        errors += bad
        warnings += warn
    errors += traffic_problems(f"{where}.traffic", traffic_of(args), list(args.deployments))
    return errors, warnings


def endpoint_bodies(
    name: str, args: EndpointArgs, context: ServingContext
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, int], list[str]]:
    """The ``Endpoint`` body, each deployment's ``DeployedModel`` body (no id yet), the
    traffic split by deployment, and warnings; raises naming every problem."""
    region = context.region if context.backend.kind is BackendKind.VERTEX else None
    errors, warnings = endpoint_problems(f"Endpoint {name!r}", args, region)
    if errors:
        raise InvalidArgumentsError("\n".join(errors))
    deployments = {key: deployment_body(key, d) for key, d in sorted(args.deployments.items())}
    endpoint = _present(
        displayName=args.display_name or name,
        description=args.description,
        labels={**context.labels, **args.labels},
    )
    return merge_fields(endpoint, args.extra_fields), deployments, traffic_of(args), warnings


__all__ = [
    "LOCAL_SERVING_IMAGE",
    "DeploymentArgs",
    "EndpointArgs",
    "ModelArgs",
    "ServingContext",
    "deployment_body",
    "endpoint_bodies",
    "endpoint_problems",
    "model_body",
    "serving_context",
]
