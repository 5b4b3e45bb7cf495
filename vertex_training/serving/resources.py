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

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic

from vertex_training._dynamic import (
    ADOPTION_LABEL,
    BackendKind,
    BackendSettings,
    Provider,
    has_unknown,
    label_value,
    labelled,
    placement,
)
from vertex_training.cost.estimate import EndpointEstimate
from vertex_training.serving.api import (
    EndpointArgs,
    ModelArgs,
    ServingContext,
    endpoint_bodies,
    model_body,
    serving_context,
)
from vertex_training.serving.estimate import estimate_endpoint

_log = logging.getLogger(__name__)

PROVIDER_VERSION = "1"
"""Bump when a provider's behaviour changes: the diff shows it (in place, no API call)."""

MODEL_METADATA = ("displayName", "description", "labels")
"""Body fields an edit of which updates the version in place (no new upload)."""
ENDPOINT_METADATA = ("displayName", "description", "labels")
"""Endpoint body fields updated in place; any other changes the endpoint (a replacement)."""
DEFAULT_ALIAS = "default"


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def model_id_for(identity: str) -> str:
    """The registry id of a resource's model: its name, readable, and a hash of the whole
    identity (``[a-z0-9_-]``, at most 63 characters, starting with a letter)."""
    name = label_value(identity.rsplit("/", 1)[-1])[:40].strip("-_") or "model"
    if not name[0].isalpha():
        name = f"m-{name}"
    return f"{name}-{_digest(identity)[:12]}"


def endpoint_id_for(identity: str) -> str:
    """A numeric endpoint id (9 digits, no leading zero), as Vertex's own."""
    return str(10**8 + int(_digest(identity), 16) % (9 * 10**8))


def deployed_model_id(identity: str, name: str, body: Mapping[str, Any]) -> str:
    """A ``DeployedModel.id`` (1-10 digits) for one deployment's body: another body is
    another id, so a changed deployment is deployed beside the one it replaces."""
    return str(10**9 + int(_digest(identity, name, _canonical(body)), 16) % (9 * 10**9))


def _canonical(value: Any) -> Any:
    """Numbers cross the engine as floats (2 -> 2.0): the same meaning, one text."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _backend(props: Mapping[str, Any]) -> Any:
    from vertex_training.serving.backends import serving_backend_for

    return serving_backend_for(BackendSettings.from_props(dict(props["backend"])))


def _parse_problems(message: str, body: Mapping[str, Any]) -> list[str]:
    """The body through the real proto (``message`` of aiplatform_v1): unknown fields and
    wrong types, named."""
    from google.cloud import aiplatform_v1 as v1

    from vertex_training.jobs.protos import BodyParseError, parse_message

    try:
        parse_message(getattr(v1, message), _canonical(body))
    except BodyParseError as error:
        return [str(error)]
    return []


# ================================================================================ Model


def _labelled_model_body(props: Mapping[str, Any]) -> dict[str, Any]:
    body = dict(props["body"])
    identity = str(props["identity"])
    content = {k: v for k, v in body.items() if k not in MODEL_METADATA}
    digest = _digest(identity, props.get("source_job"), _canonical(content))[:20]
    adoption = label_value(f"{identity.rsplit('/', 1)[-1][:30]}-{digest}")
    return labelled(body, identity, {ADOPTION_LABEL: adoption})


def _model_outputs(record: Any) -> dict[str, Any]:
    return {
        "name": record.model,
        "version_id": record.version_id,
        "version_name": record.version_name,
        "aliases": list(record.aliases),
        "artifact_uri": record.artifact_uri,
    }


MODEL_OUTPUTS = ("name", "version_id", "version_name", "aliases", "artifact_uri")


class ModelProvider(Provider):
    """Uploads a version to Model Registry; stateless (it is pickled)."""

    body = "body"
    required = ("body", "model_id", "backend", "identity")
    # A new run of the source job (its name changes) is a new artifact: a new version,
    # even where it writes to the same directory as the run before.
    replacing = ("source_job", "model_id", "backend_target", "identity")
    updating = ("version_aliases", "provider_version", "backend")
    metadata = MODEL_METADATA
    # The new version is uploaded (and takes the aliases) before the old one goes.
    delete_before_replace = False

    def problems(self, news: Mapping[str, Any], settings: BackendSettings) -> list[str]:
        from vertex_training.serving.rules import local_refusals

        body = dict(news["body"])
        problems = _parse_problems("Model", body)
        if settings.kind is BackendKind.LOCAL:
            problems += local_refusals("Model", body)
        if not body.get("artifactUri"):
            problems.append(
                "artifactUri: the source job reports no model directory (it writes no "
                "model); valid: a job with a baseOutputDirectory"
            )
        return problems

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        if not props["body"].get("artifactUri"):
            raise ValueError("artifactUri: the source job reports no model directory")
        backend = _backend(props)
        body = _labelled_model_body(props)
        model_id = str(props["model_id"])
        record = backend.find_version(model_id, {ADOPTION_LABEL: body["labels"][ADOPTION_LABEL]})
        if record is not None:
            _log.info("adopting %s (uploaded by an interrupted run)", record.version_name)
        else:
            record = backend.upload(model_id, _canonical(body))
        # The newest version is the default and takes the declared aliases from the others.
        backend.move_aliases(
            record.model, record.version_id, [DEFAULT_ALIAS, *props.get("version_aliases", [])]
        )
        record = backend.get_version(record.model, record.version_id)
        outs = {**self.inputs(props), **_model_outputs(record)}
        return pulumi.dynamic.CreateResult(id_=record.version_name, outs=outs)

    def current(self, id_: str, props: Mapping[str, Any]) -> dict[str, Any] | None:
        from vertex_training.serving.backends import ServingNotFoundError

        model, _, version = id_.partition("@")
        try:
            return _model_outputs(_backend(props).get_version(model, version))
        except ServingNotFoundError:
            return None

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        backend = _backend(news)
        model, _, version = id_.partition("@")
        body = _labelled_model_body(news)
        if self.metadata_changed(olds, news):
            backend.update_version(model, version, body)
        backend.move_aliases(model, version, [DEFAULT_ALIAS, *news.get("version_aliases", [])])
        record = backend.get_version(model, version)
        return pulumi.dynamic.UpdateResult(outs={**self.inputs(news), **_model_outputs(record)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        model, _, version = id_.partition("@")
        _backend(props).delete_version(model, version)


def _placement(resource_name: str, context: ServingContext) -> dict[str, Any]:
    return placement(resource_name, context.backend, context.project, PROVIDER_VERSION)


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
        context = serving_context("Model", resource_name, args, ModelArgs)
        body, warnings = model_body(resource_name, args, context)
        where = _placement(resource_name, context)
        props = {
            "body": body,
            "source_job": getattr(args.job, "job_name", None),
            "model_id": model_id_for(where["identity"]),
            "version_aliases": list(args.version_aliases),
            **where,
            **dict.fromkeys(MODEL_OUTPUTS),
        }
        if args.platform is not None:
            opts = pulumi.ResourceOptions.merge(args.platform.resource_options(), opts)
        if args.job is not None:
            # The new version is uploaded after the job's replacement has trained.
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[args.job]))
        super().__init__(ModelProvider(), resource_name, props, opts)
        for warning in warnings:
            pulumi.log.warn(warning, resource=self)


# ============================================================================= Endpoint

ENDPOINT_OUTPUTS = ("name", "deployed_model_ids", "predict_url", "serving")


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
        backend.deploy(name, {**_canonical(wanted[deployed]), "id": deployed}, current)
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
    return backend.ensure_serving(name)


def _endpoint_body(props: Mapping[str, Any]) -> dict[str, Any]:
    return labelled(props["body"], str(props["identity"]), {})


def _endpoint_outputs(record: Any, props: Mapping[str, Any]) -> dict[str, Any]:
    ids = _ids(props)
    return {
        "name": record.name,
        "deployed_model_ids": {n: i for n, i in ids.items() if i in record.deployed_ids},
        "predict_url": record.predict_url,
        "serving": record.serving,
    }


class EndpointProvider(Provider):
    """An endpoint and its deployed models; stateless (it is pickled)."""

    body = "body"
    required = ("body", "endpoint_id", "deployments", "traffic", "backend", "identity")
    late = ("deployments",)  # a model's version is not known in preview
    replacing = ("endpoint_id", "backend_target", "identity")
    updating = ("deployments", "traffic", "provider_version", "backend")
    metadata = ENDPOINT_METADATA
    delete_before_replace = True

    def problems(self, news: Mapping[str, Any], settings: BackendSettings) -> list[str]:
        from vertex_training.serving.rules import local_refusals, traffic_problems

        problems = _parse_problems("Endpoint", news["body"])
        problems += traffic_problems("traffic", news["traffic"], list(news["deployments"]))
        for name, body in sorted(news["deployments"].items()):
            if has_unknown(body):
                continue  # the model's version is not known yet (preview)
            problems += [f"deployments.{name}: {p}" for p in _parse_problems("DeployedModel", body)]
            if settings.kind is BackendKind.LOCAL:
                problems += [
                    f"deployments.{name}.{p}" for p in local_refusals("DeployedModel", body)
                ]
        if settings.kind is BackendKind.LOCAL:
            problems += local_refusals("Endpoint", news["body"])
        return problems

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces, changed = self.changes(olds, news)
        if not replaces and not changed and self._local_server_down(id_, news):
            # The machine restarted (or the server died): `up` starts it again.
            changed.append("serving")
        return pulumi.dynamic.DiffResult(
            changes=bool(replaces or changed),
            replaces=replaces,
            delete_before_replace=self.delete_before_replace,
        )

    @staticmethod
    def _local_server_down(id_: str, props: Mapping[str, Any]) -> bool:
        if (props.get("backend") or {}).get("kind") != BackendKind.LOCAL.value:
            return False  # Vertex keeps its replicas running; diff makes no API call
        from vertex_training.serving.backends import ServingNotFoundError

        try:
            return not _backend(props).get_endpoint(id_).serving
        except ServingNotFoundError:
            return True

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        backend = _backend(props)
        record = _reconcile(backend, props)
        outs = {**self.inputs(props), **_endpoint_outputs(record, props)}
        return pulumi.dynamic.CreateResult(id_=record.name, outs=outs)

    def current(self, id_: str, props: Mapping[str, Any]) -> dict[str, Any] | None:
        from vertex_training.serving.backends import ServingNotFoundError

        try:
            # A refresh notices a dead local server and starts it again.
            return _endpoint_outputs(_backend(props).ensure_serving(id_), props)
        except ServingNotFoundError:
            return None

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        backend = _backend(news)
        if self.metadata_changed(olds, news):
            backend.update_endpoint(id_, _endpoint_body(news))
        record = _reconcile(backend, news)
        return pulumi.dynamic.UpdateResult(
            outs={**self.inputs(news), **_endpoint_outputs(record, news)}
        )

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from vertex_training.serving.backends import ServingNotFoundError

        backend = _backend(props)
        try:
            record = backend.get_endpoint(id_)
        except ServingNotFoundError:
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
        context = serving_context("Endpoint", resource_name, args, EndpointArgs)
        body, deployments, traffic, warnings = endpoint_bodies(resource_name, args, context)
        where = _placement(resource_name, context)
        props = {
            "body": body,
            "endpoint_id": endpoint_id_for(where["identity"]),
            "deployments": deployments,
            "traffic": traffic,
            **where,
            **dict.fromkeys(ENDPOINT_OUTPUTS),
        }
        if args.platform is not None:
            opts = pulumi.ResourceOptions.merge(args.platform.resource_options(), opts)
        super().__init__(EndpointProvider(), resource_name, props, opts)
        self.cost_estimate = estimate_endpoint(resource_name, deployments, context.region)
        for warning in warnings:
            pulumi.log.warn(warning, resource=self)


__all__ = [
    "Endpoint",
    "EndpointProvider",
    "Model",
    "ModelProvider",
    "deployed_model_id",
    "endpoint_id_for",
    "model_id_for",
]
