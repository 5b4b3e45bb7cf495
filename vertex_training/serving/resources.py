"""``Model`` and ``Endpoint``: Model Registry and served predictions as Pulumi dynamic
resources.

The providers are thin: properties -> REST bodies -> a serving backend, and back. They hold
no client (dill pickles them into the state, by reference: this module's import path is
part of every stack's state); every method builds its backend from the resource's own
``backend`` input, so the same resources run on Vertex or as the local twin.

A model's id and an endpoint's id are ours (a hash of the stack and resource name): an
interrupted ``up`` finds what it made instead of making it twice. A model version carries
an adoption label (a hash of the resource and its body) for the same reason; a replaced
model (its job trained again) uploads a new version of the same model and moves the
aliases, then the old version is deleted. An endpoint's deployed model ids hash the
deployment's name and body: a changed deployment is deployed beside the old one, traffic
moves, the old one is undeployed, all in place.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi.dynamic

from vertex_training._checks import require_args
from vertex_training._dynamic import (
    ADOPTION_LABEL,
    PROVIDER_VERSION,
    BackendKind,
    BackendSettings,
    NotFoundError,
    Provider,
    canonical,
    common_inputs,
    digest,
    has_unknown,
    label_value,
    labelled,
    platform_options,
)
from vertex_training._secrets import SECRET_PATHS, secret_paths, warn_of_secrets
from vertex_training.cost.estimate import EndpointEstimate
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import JobPlatform
from vertex_training.serving.api import (
    EndpointArgs,
    ModelArgs,
    endpoint_bodies,
    judged,
    model_body,
    refuse,
    where_served,
)
from vertex_training.serving.estimate import estimate_endpoint

_log = logging.getLogger(__name__)

METADATA = ("displayName", "description", "labels")
"""Body fields an edit of which updates a model version or an endpoint in place; any other
is a new upload, or a new endpoint."""
DEFAULT_ALIAS = "default"


def model_id_for(identity: str) -> str:
    """The registry id of a resource's model: its name, readable, and a hash of the whole
    identity (``[a-z0-9_-]``, at most 63 characters, starting with a letter)."""
    name = label_value(identity.rsplit("/", 1)[-1])[:40].strip("-_") or "model"
    if not name[0].isalpha():
        name = f"m-{name}"
    return f"{name}-{digest(identity)[:12]}"


def endpoint_id_for(identity: str) -> str:
    """A numeric endpoint id (9 digits, no leading zero), as Vertex's own."""
    return str(10**8 + int(digest(identity), 16) % (9 * 10**8))


def deployed_model_id(identity: str, name: str, body: Mapping[str, Any]) -> str:
    """A ``DeployedModel.id`` (1-10 digits) for one deployment's body: another body is
    another id, so a changed deployment is deployed beside the one it replaces."""
    return str(10**9 + int(digest(identity, name, body), 16) % (9 * 10**9))


# ================================================================================ Model


def _body_findings(message: str, body: Mapping[str, Any], local: bool) -> list[Finding]:
    """The body through the real proto (``message`` of aiplatform_v1), parsed once: unknown
    fields and wrong types, named; on the local twin, what it refuses (its table)."""
    from google.cloud import aiplatform_v1 as v1

    from vertex_training.jobs.local_support import local_refusals
    from vertex_training.jobs.protos import BodyParseError, parse_message
    from vertex_training.serving.local_support import local_support

    try:
        parsed = parse_message(getattr(v1, message), canonical(body))
    except BodyParseError as error:
        return [error.finding]
    return local_refusals(parsed, local_support()) if local else []


class ModelProvider(Provider):
    """Uploads a version to Model Registry; stateless (it is pickled)."""

    body = "body"
    required = ("body", "model_id", "backend", "identity")
    # A new run of the source job (its name changes) is a new artifact: a new version,
    # even where it writes to the same directory as the run before.
    replacing = ("source_job", "model_id", "backend_target", "identity")
    updating = ("version_aliases", "provider_version", "backend", SECRET_PATHS)
    metadata = METADATA
    # The new version is uploaded (and takes the aliases) before the old one goes.
    delete_before_replace = False
    backends = "vertex_training.serving.backends.vertex:VertexServingBackend"
    outputs_from = {
        "name": "model",
        "version_id": "version_id",
        "version_name": "version_name",
        "aliases": "aliases",
        "artifact_uri": "artifact_uri",
    }

    def findings(
        self, news: Mapping[str, Any], settings: BackendSettings
    ) -> Iterable[tuple[str, Finding]]:
        body = dict(news["body"])
        found = _body_findings("Model", body, settings.kind is BackendKind.LOCAL)
        if not body.get("artifactUri"):
            found.append(
                Finding(
                    "artifactUri",
                    "the source job reports no model directory (it writes no model)",
                    valid="a job with a baseOutputDirectory",
                )
            )
        return [(self.body, f) for f in found]

    def adoption_content(self, props: Mapping[str, Any]) -> tuple[Any, ...]:
        # A new run of the source job is new content.
        return (props.get("source_job"), self._body(props, metadata=False))

    def fetch(self, backend: Any, id_: str) -> Any:
        model, _, version = id_.partition("@")
        return backend.get_version(model, version)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        backend = self.backend(props)  # check, which the engine runs first, judged props
        body = self.labelled_body(props)
        model_id = str(props["model_id"])
        record = backend.find_version(model_id, {ADOPTION_LABEL: body["labels"][ADOPTION_LABEL]})
        if record is not None:
            _log.info("adopting %s (uploaded by an interrupted run)", record.version_name)
        else:
            record = backend.upload(model_id, canonical(body))
        # The newest version is the default and takes the declared aliases from the others.
        backend.move_aliases(
            record.model, record.version_id, [DEFAULT_ALIAS, *props.get("version_aliases", [])]
        )
        record = backend.get_version(record.model, record.version_id)
        return pulumi.dynamic.CreateResult(id_=record.version_name, outs=self.state(record, props))

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        backend = self.backend(news)
        model, _, version = id_.partition("@")
        if self.metadata_changed(olds, news):
            backend.update_version(model, version, self.labelled_body(news))
        backend.move_aliases(model, version, [DEFAULT_ALIAS, *news.get("version_aliases", [])])
        record = backend.get_version(model, version)
        return pulumi.dynamic.UpdateResult(outs=self.state(record, news))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        model, _, version = id_.partition("@")
        self.backend(props).delete_version(model, version)


def _judged_on_platform(
    resource: str, resource_name: str, args: Any, args_type: type
) -> tuple[JobPlatform, str | None, dict[str, Any], list[Finding]]:
    """Where a ``resource`` lives (the platform, the region its hardware is judged in), its
    common inputs and the warnings of its Args (judged once, as early as the platform is
    known: here, or by a stack's reader); raises naming every error."""
    require_args(resource, resource_name, args, args_type)
    platform, region = where_served(args)
    warnings = refuse(f"{resource} {resource_name!r}", judged(args, platform.environment, region))
    backend = BackendSettings.of(platform)
    return (
        platform,
        region,
        common_inputs(resource_name, backend, platform.project, PROVIDER_VERSION),
        warnings,
    )


class Model(pulumi.dynamic.Resource, module="vertex", name="Model"):
    """A model in Vertex AI Model Registry (``pulumi-python:dynamic/vertex:Model``).

    ``pulumi up`` uploads the job's model directory (or adopts the version an interrupted
    ``up`` uploaded); when the job is replaced and trains again, the new artifact becomes a
    new version of the same model, the aliases move to it and the old version is deleted;
    ``pulumi destroy`` deletes the version, and the model with its last version. Locally
    the registry is a directory under the local root."""

    name: pulumi.Output[str]
    """``projects/P/locations/L/models/ID`` (no version)."""
    version_id: pulumi.Output[str]
    version_name: pulumi.Output[str]
    """``<name>@<version id>``: what a deployment serves."""
    aliases: pulumi.Output[list[str]]
    artifact_uri: pulumi.Output[str]

    def __init__(
        self, resource_name: str, args: ModelArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        platform, _, where, warnings = _judged_on_platform("Model", resource_name, args, ModelArgs)
        body = model_body(resource_name, args, platform)
        props = {
            "body": body,
            "source_job": getattr(args.job, "job_name", None),
            "model_id": model_id_for(where["identity"]),
            "version_aliases": list(args.version_aliases),
            SECRET_PATHS: secret_paths(body),
            **where,
            **dict.fromkeys(ModelProvider.output_names()),
        }
        opts = platform_options(args, opts)
        if args.job is not None:
            # The new version is uploaded after the job's replacement has trained.
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[args.job]))
        super().__init__(ModelProvider(), resource_name, props, opts)
        for warning in warnings:
            pulumi.log.warn(render(warning, "python"), resource=self)
        warn_of_secrets(self, props[SECRET_PATHS], lambda f: f"ModelArgs: {f}")


# ============================================================================= Endpoint


def _ids(props: Mapping[str, Any]) -> dict[str, str]:
    identity = str(props["identity"])
    return {
        name: deployed_model_id(identity, name, body)
        for name, body in sorted((props.get("deployments") or {}).items())
    }


def _split(props: Mapping[str, Any]) -> dict[str, int]:
    ids = _ids(props)
    return {
        ids[name]: int(pct) for name, pct in (props.get("traffic") or {}).items() if name in ids
    }


def _undeploy_all(backend: Any, name: str, ids: list[str]) -> None:
    """Undeploy each in turn; the traffic of those left goes to the first of them."""
    for index, deployed in enumerate(ids):
        left = ids[index + 1 :]
        backend.undeploy(name, deployed, {left[0]: 100} if left else {})


def _reconcile(backend: Any, props: Mapping[str, Any]) -> Any:
    """Make the endpoint serve what ``props`` declare: deploy the new, move the traffic,
    undeploy the old (the order that keeps every request served)."""
    record = backend.create_endpoint(str(props["endpoint_id"]), _endpoint_body(props))
    name = record.name
    ids = _ids(props)
    wanted = {ids[n]: body for n, body in (props.get("deployments") or {}).items()}
    split = _split(props)
    current = {k: int(v) for k, v in record.traffic.items()}
    for deployed in sorted(set(wanted) - record.deployed_ids):
        # A deployment joins with no traffic, unless it is the first.
        current = {**current, deployed: 0} if record.deployed_ids or current else {deployed: 100}
        backend.deploy(name, {**canonical(wanted[deployed]), "id": deployed}, current)
        record = backend.get_endpoint(name)
        current = {k: int(v) for k, v in record.traffic.items()}
    gone = sorted(record.deployed_ids - set(wanted))
    if wanted and {k: v for k, v in current.items() if v} != {k: v for k, v in split.items() if v}:
        backend.set_traffic(name, split)
    if wanted:
        for deployed in gone:
            backend.undeploy(name, deployed, split)
    else:
        _undeploy_all(backend, name, gone)
    return backend.get_endpoint(name)


def judged_digest(
    traffic: Mapping[str, Any], deployments: Mapping[str, Any], region: str | None
) -> str | None:
    """A hash of what the serving rules read of an endpoint (its split, its deployments
    but their models, which no rule reads) and where: ``check`` judges the inputs again
    unless theirs is the one the Args were judged with. None while a value is not known
    (an Output, preview's unknown): ``check`` judges them once known."""
    read = {
        name: {k: v for k, v in dict(body).items() if k != "model"}
        for name, body in deployments.items()
    }
    return None if has_unknown([traffic, read]) else digest(traffic, read, region)


def _endpoint_body(props: Mapping[str, Any]) -> dict[str, Any]:
    return labelled(props["body"], str(props["identity"]), {})


class EndpointProvider(Provider):
    """An endpoint and its deployed models; stateless (it is pickled)."""

    body = "body"
    required = ("body", "endpoint_id", "deployments", "traffic", "backend", "identity")
    unknown_in_preview = ("deployments",)  # a model's version is not known in preview
    replacing = ("endpoint_id", "backend_target", "identity")
    updating = ("deployments", "traffic", "judged", "provider_version", "backend", SECRET_PATHS)
    metadata = METADATA
    delete_before_replace = True
    backends = ModelProvider.backends
    kept_running = "serving"
    outputs_from = {
        "name": "name",
        "deployed_model_ids": "deployed_ids",
        "predict_url": "predict_url",
        "serving": "serving",
    }

    def outputs(self, record: Any, props: Mapping[str, Any]) -> dict[str, Any]:
        """A deployed model's id by the deployment's name, of those deployed."""
        ids = _ids(props)
        deployed = {n: i for n, i in ids.items() if i in record.deployed_ids}
        return {**super().outputs(record, props), "deployed_model_ids": deployed}

    def findings(
        self, news: Mapping[str, Any], settings: BackendSettings
    ) -> Iterable[tuple[str, Finding]]:
        from vertex_training.serving.rules import deployment_findings, traffic_findings

        local = settings.kind is BackendKind.LOCAL
        region = None if local else settings.location
        traffic, deployments = news["traffic"], news["deployments"]
        # The rules, unless on what the Args judged (a transform, a direct registration
        # or an edited state changed it; a value was not known then).
        rules = judged_digest(traffic, deployments, region) != news.get("judged")
        found = [(self.body, f) for f in _body_findings("Endpoint", news["body"], local)]
        if rules:
            found += [("traffic", f) for f in traffic_findings(traffic, deployments)]
        for name, body in sorted(deployments.items()):
            if has_unknown(body):
                continue  # the model's version is not known yet (preview)
            parsed = _body_findings("DeployedModel", body, local)
            if rules and not parsed:
                parsed = deployment_findings(canonical(body), region)
            found += [("deployments", f.at(f"{name}.{f.path}".rstrip("."))) for f in parsed]
        return found

    def fetch(self, backend: Any, id_: str) -> Any:
        return backend.get_endpoint(id_)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        record = _reconcile(self.backend(props), props)
        return pulumi.dynamic.CreateResult(id_=record.name, outs=self.state(record, props))

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        backend = self.backend(news)
        if self.metadata_changed(olds, news):
            backend.update_endpoint(id_, _endpoint_body(news))
        record = _reconcile(backend, news)
        return pulumi.dynamic.UpdateResult(outs=self.state(record, news))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        backend = self.backend(props)
        try:
            record = backend.get_endpoint(id_)
        except NotFoundError:
            return
        # The API deletes only an endpoint with nothing deployed.
        _undeploy_all(backend, id_, sorted(record.deployed_ids))
        backend.delete_endpoint(id_)


class Endpoint(pulumi.dynamic.Resource, module="vertex", name="Endpoint"):
    """A Vertex AI endpoint and its deployed models (``pulumi-python:dynamic/vertex:Endpoint``).

    ``pulumi up`` creates it and deploys each deployment; a change of the traffic split,
    of a deployment (its model's new version, its machines) or of the labels is an
    in-place update: new deployments join first, the traffic moves, the old ones are
    undeployed. ``pulumi destroy`` undeploys every model, then deletes the endpoint.
    Locally the endpoint is a prediction server on 127.0.0.1 that ``up`` and ``refresh``
    start again when it is not running."""

    name: pulumi.Output[str]
    """``projects/P/locations/L/endpoints/ID``."""
    predict_url: pulumi.Output[str]
    """Where to POST ``{"instances": [...]}``."""
    deployed_model_ids: pulumi.Output[dict[str, str]]
    """``DeployedModel.id`` by deployment name."""
    cost_estimate: EndpointEstimate
    """Per hour at the deployments' minimum replicas (``vt.log_stack_cost`` shows it)."""

    def __init__(
        self, resource_name: str, args: EndpointArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        platform, region, where, warnings = _judged_on_platform(
            "Endpoint", resource_name, args, EndpointArgs
        )
        body, deployments, traffic = endpoint_bodies(resource_name, args, platform)
        props = {
            "body": body,
            "endpoint_id": endpoint_id_for(where["identity"]),
            "deployments": deployments,
            "traffic": traffic,
            "judged": judged_digest(traffic, deployments, region),
            SECRET_PATHS: secret_paths(body),
            **where,
            **dict.fromkeys(EndpointProvider.output_names()),
        }
        super().__init__(EndpointProvider(), resource_name, props, platform_options(args, opts))
        self.cost_estimate = estimate_endpoint(resource_name, deployments, platform.region)
        for warning in warnings:
            pulumi.log.warn(render(warning, "python"), resource=self)
        warn_of_secrets(self, props[SECRET_PATHS], lambda f: f"EndpointArgs: {f}")


__all__ = [
    "Endpoint",
    "EndpointProvider",
    "Model",
    "ModelProvider",
    "deployed_model_id",
    "endpoint_id_for",
    "model_id_for",
]
