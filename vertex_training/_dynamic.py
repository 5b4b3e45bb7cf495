"""What our dynamic providers share (the jobs', the served models', and any later one):
where a resource lives (``BackendSettings``, carried in its inputs), the labels every
resource we submit carries, values not known yet in preview, and the ``Provider`` base.

A provider built on ``Provider`` declares, as class attributes, its body input, which
inputs replace and which change in place, its backends by kind and its outputs by record
attribute; it implements ``findings`` (what ``check`` refuses), ``fetch`` (the service's
record), ``create``, ``update`` and ``delete``. The base does the rest: ``check`` (the
findings as ``CheckFailure`` values), ``diff`` (with ``extra_changes`` for what only the
service can tell), ``read`` (a ``NotFoundError`` drops the resource), the adoption label.

Providers are pickled by reference: a subclass's import path is part of every stack's
state, this module's is not.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pulumi
import pulumi.dynamic

from vertex_training._checks import is_known
from vertex_training._pulumi_internals import pickler_kept_unwrapped
from vertex_training.findings import Finding, render

__all__ = [
    "ADOPTION_LABEL",
    "PROVIDER_VERSION",
    "STACK_LABEL",
    "BackendKind",
    "BackendSettings",
    "NotFoundError",
    "Provider",
    "adoption_label",
    "canonical",
    "common_inputs",
    "has_unknown",
    "label_value",
    "labelled",
    "platform_options",
]

# Every resource of ours pickles its provider: without this, each one pickles slower
# than the last, and a program of about 970 fails (see the function).
pickler_kept_unwrapped()

PROVIDER_VERSION = "4"
"""Bump when a provider's behaviour changes: the diff shows it (an in-place update, no
API call for a job; a model or endpoint makes sure of what it serves), so a provider
change is never invisible. One version for every provider here: they share this base.
4: one base for jobs and serving (one adoption label form, one table of local refusals)."""

ADOPTION_LABEL = "pulumi-job-key"
"""Label carrying a hash of (project, stack, resource name, content): ``create`` looks for
what an interrupted ``up`` made with it before making it again, because the create RPCs
have no request id."""
STACK_LABEL = "pulumi-stack"

_LABEL_SAFE = re.compile(r"[^a-z0-9_-]+")


def label_value(text: str, max_length: int = 63) -> str:
    """``text`` as a Vertex label value (lowercase, digits, ``-_``, at most 63
    characters); hashed tail when it had to be cut so that values stay distinct."""
    clean = _LABEL_SAFE.sub("-", text.lower()).strip("-")
    if clean == text and len(clean) <= max_length:
        return clean
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{clean[: max_length - len(digest) - 1].rstrip('-')}-{digest}".lstrip("-")


def labelled(body: Mapping[str, Any], identity: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """``body`` as sent: its own labels, ``labels`` and the stack's label."""
    stack = identity.split("/")[1] if "/" in identity else ""
    own = dict(body.get("labels") or {})
    return {**body, "labels": {**own, **labels, STACK_LABEL: label_value(stack)}}


def canonical(value: Any) -> Any:
    """Numbers cross the engine as floats (2 -> 2.0): the same meaning, one value."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


def digest(*parts: Any) -> str:
    """A hash of ``parts`` in their canonical form (JSON, keys sorted)."""
    text = json.dumps(canonical(list(parts)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def adoption_label(identity: str, *content: Any) -> dict[str, str]:
    """The adoption label of resource ``identity`` holding ``content``: the same resource
    and content give the same label; any change another, so that a replacement never
    adopts what it replaces. Readable: the resource's name, then the hash."""
    name = identity.rsplit("/", 1)[-1]
    return {ADOPTION_LABEL: label_value(f"{name[:40]}-{digest(identity, *content)[:20]}")}


class NotFoundError(LookupError):
    """What a resource names is gone from the service (deleted elsewhere): ``read`` drops
    it from the state. Each backend's not-found error is one of these."""


def has_unknown(value: Any) -> bool:
    """Whether ``value`` holds a value not known yet (preview), however deep."""
    if isinstance(value, Mapping):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_unknown(v) for v in value)
    return not is_known(value)


class BackendKind(enum.StrEnum):
    VERTEX = "vertex"
    LOCAL = "local"


@dataclasses.dataclass(frozen=True)
class BackendSettings:
    """Which Vertex AI a resource lives in; carried in each resource's inputs. Every
    resource speaks the Vertex API through its clients: to Google's Vertex in
    ``dev``/``prod``, to the local Vertex of ``local_root`` in the ``local`` stack."""

    kind: BackendKind
    project: str | None = None
    """The Google Cloud project id (on the local Vertex, the platform's)."""
    location: str | None = None
    """The region, e.g. ``us-central1``."""
    local_root: str | None = None
    """Local only: the local Vertex's directory (job state, logs, the local "bucket")."""
    retry_initial_seconds: float = 1.0
    """First backoff of retried reads/lists/cancels/deletes (vertex)."""
    retry_timeout_seconds: float = 120.0
    """Give up retrying a transient error after this long (vertex)."""

    def __post_init__(self) -> None:
        if not (self.project and self.location):
            raise ValueError(
                f"backend: kind {self.kind.value!r} needs project and location (region), got "
                f"project={self.project!r} location={self.location!r}"
            )
        if self.kind is BackendKind.LOCAL and not self.local_root:
            raise ValueError("backend: kind 'local' needs local_root (a directory path)")

    @classmethod
    def of(cls, platform: Any) -> BackendSettings:
        """Where a platform's resources live: under its local root on a local platform,
        else in its project (a stand-in while another resource has not given it:
        ``common_inputs`` carries the real one) and region."""
        if platform.environment == "local":
            assert platform.local_root is not None
            return cls(
                BackendKind.LOCAL,
                project=platform.project,
                location=platform.region,
                local_root=str(platform.local_root),
            )
        project = platform.project if isinstance(platform.project, str) else "(not known yet)"
        return cls(BackendKind.VERTEX, project=project, location=platform.region)

    def to_props(self) -> dict[str, Any]:
        # Every field is a plain value: no deep copy (``dataclasses.asdict``) per resource.
        props = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {k: v for k, v in props.items() if v is not None} | {"kind": self.kind.value}

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> BackendSettings:
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(props) - known)
        if unknown:
            raise ValueError(f"backend: unknown keys {unknown}; valid: {sorted(known)}")
        if props.get("kind") not in {k.value for k in BackendKind}:
            raise ValueError(
                f"backend.kind: {props.get('kind')!r} invalid; valid: "
                f"{[k.value for k in BackendKind]}"
            )
        return cls(**{**props, "kind": BackendKind(props["kind"])})


def backend_target(backend: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a backend's settings (``BackendSettings.to_props()``) that decides
    *where* a resource lives: a change replaces it."""
    return {k: backend[k] for k in ("kind", "project", "location", "local_root") if k in backend}


def platform_options(
    args: Any, opts: pulumi.ResourceOptions | None
) -> pulumi.ResourceOptions | None:
    """``opts`` over the options of the platform ``args`` name (its provider, its parent)."""
    if args.platform is None:
        return opts
    return pulumi.ResourceOptions.merge(args.platform.resource_options(), opts)


def common_inputs(
    resource_name: str, backend: BackendSettings, project: pulumi.Input[str], version: str
) -> dict[str, Any]:
    """The inputs each of our resources carries: its identity (project, stack, name), the
    backend and its target (with the project on Vertex: it may come from another resource,
    which the engine resolves in place), the provider's version."""
    props = backend.to_props()
    target = backend_target(props)
    if backend.kind is BackendKind.VERTEX:
        props["project"] = target["project"] = project
    return {
        "backend": props,
        "backend_target": target,
        "identity": f"{pulumi.get_project()}/{pulumi.get_stack()}/{resource_name}",
        "provider_version": version,
    }


class Provider(pulumi.dynamic.ResourceProvider):
    """What our dynamic providers share: the backend, how a check judges the inputs, which
    inputs replace and which change in place, the outputs, a refresh."""

    serialize_as_secret_always = False  # nothing secret in here: keep the state readable
    body: ClassVar[str]
    """The input holding the REST body."""
    required: ClassVar[tuple[str, ...]]
    unknown_in_preview: ClassVar[tuple[str, ...]] = ()
    """Inputs that may hold values not known yet (preview) while the others are judged."""
    replacing: ClassVar[tuple[str, ...]]
    """Inputs a change of which replaces the resource (so does the body's, outside
    ``metadata``)."""
    updating: ClassVar[tuple[str, ...]]
    """Inputs changed in place."""
    metadata: ClassVar[tuple[str, ...]]
    """Body fields changed in place."""
    delete_before_replace: ClassVar[bool] = False
    backends: ClassVar[str]
    """The backend class, ``"module:Class"`` (imported when used), built from the
    ``BackendSettings``: the Vertex clients, pointed at Google or at the local Vertex."""
    outputs_from: ClassVar[Mapping[str, str]]
    """Each output, by the attribute of the backend's record it is read from."""

    def backend(self, props: Mapping[str, Any]) -> Any:
        """A fresh backend for the resource's ``backend`` input (none is kept on ``self``:
        the provider is pickled)."""
        module, _, name = self.backends.partition(":")
        return getattr(importlib.import_module(module), name)(
            BackendSettings.from_props(props["backend"])
        )

    @classmethod
    def output_names(cls) -> tuple[str, ...]:
        """The outputs, registered as None so that the engine knows them in preview."""
        return tuple(cls.outputs_from)

    def outputs(self, record: Any, props: Mapping[str, Any]) -> dict[str, Any]:
        """The outputs as the backend's ``record`` has them (``props``: the inputs)."""
        return {key: _plain(getattr(record, attr)) for key, attr in self.outputs_from.items()}

    def inputs(self, props: Mapping[str, Any]) -> dict[str, Any]:
        keys = (self.body, *self.replacing, *self.updating)
        return {k: props[k] for k in keys if k in props}

    def state(self, record: Any, props: Mapping[str, Any]) -> dict[str, Any]:
        """What the engine keeps of a resource: its inputs and its ``record``'s outputs."""
        return {**self.inputs(props), **self.outputs(record, props)}

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        """The ``required`` inputs; once all but the ``unknown_in_preview`` ones are known,
        the backend's settings and the provider's ``findings``, each a failure of its input. The
        backend's target is kept beside the inputs (a new target replaces). Inputs equal to
        the state's were judged by the check that let them in: an unchanged resource is not
        judged again (so a no-op ``up`` loads neither the protos nor the rules)."""
        if news == _olds:
            return pulumi.dynamic.CheckResult(news, [])
        failures = [
            pulumi.dynamic.CheckFailure(key, f"required input {key!r} missing")
            for key in self.required
            if key not in news
        ]
        early = {k: v for k, v in news.items() if k not in self.unknown_in_preview}
        if failures or has_unknown(early) or not isinstance(news[self.body], Mapping):
            return pulumi.dynamic.CheckResult(news, failures)
        try:
            settings = BackendSettings.from_props(news["backend"])
        except (ValueError, TypeError, KeyError) as error:
            return pulumi.dynamic.CheckResult(
                news, [pulumi.dynamic.CheckFailure("backend", str(error))]
            )
        failures = [
            pulumi.dynamic.CheckFailure(prop, render(finding, "check"))
            for prop, finding in self.findings(news, settings)
            if finding.severity == "error"
        ]
        news = {**news, "backend_target": backend_target(settings.to_props())}
        return pulumi.dynamic.CheckResult(news, failures)

    def findings(
        self, news: Mapping[str, Any], settings: BackendSettings
    ) -> Iterable[tuple[str, Finding]]:
        """What the service would refuse of the inputs: each finding with the input it is
        a failure of (its path is relative to that input)."""
        raise NotImplementedError

    def _body(self, props: Mapping[str, Any], metadata: bool) -> Any:
        """The body's ``metadata`` fields, or all its others."""
        body = props.get(self.body)
        if not isinstance(body, Mapping):
            return None if metadata else body
        return {k: v for k, v in body.items() if (k in self.metadata) is metadata}

    def adoption_content(self, props: Mapping[str, Any]) -> tuple[Any, ...]:
        """What the adoption label hashes beside the identity: the body but its
        ``metadata``, so that an edit of those alone is not new content (a crashed ``up``
        whose resource they were edited after still adopts it)."""
        return (self._body(props, metadata=False),)

    def adoption_labels(self, props: Mapping[str, Any]) -> dict[str, str]:
        return adoption_label(str(props["identity"]), *self.adoption_content(props))

    def labelled_body(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The body as sent: the declared one plus our stack and adoption labels."""
        return labelled(props[self.body], str(props["identity"]), self.adoption_labels(props))

    def metadata_changed(self, olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
        return bool(self._body(olds, True) != self._body(news, True))

    def changes(
        self, olds: Mapping[str, Any], news: Mapping[str, Any]
    ) -> tuple[list[str], list[str]]:
        """The inputs that replace the resource, and those that change it in place. An
        unchanged ``up`` makes no API call."""
        replaces = [k for k in self.replacing if olds.get(k) != news.get(k)]
        if self._body(olds, False) != self._body(news, False):
            replaces.insert(0, self.body)
        changed = [k for k in self.updating if olds.get(k) != news.get(k)]
        if self.metadata_changed(olds, news):
            changed.append(self.body)
        return replaces, changed

    kept_running: ClassVar[str | None] = None
    """The output the service keeps true (an endpoint serving, a pool warm)."""

    def extra_changes(self, id_: str, props: Mapping[str, Any]) -> list[str]:
        """What changes in place although no input did: asked only when nothing else
        changed. On a local platform whose local Vertex is not running (the machine
        restarted), ``kept_running``: the update starts it, which runs them again. Read from
        its address file: an unchanged `up` starts nothing."""
        root = (props.get("backend") or {}).get("local_root")
        if self.kept_running is None or not root:
            return []  # Vertex keeps what it runs; diff makes no API call
        from vertex_training._local_vertex import running

        return [] if running(Path(root)) else [self.kept_running]

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces, changed = self.changes(olds, news)
        if not replaces and not changed:
            changed = self.extra_changes(id_, news)
        return pulumi.dynamic.DiffResult(
            changes=bool(replaces or changed),
            replaces=replaces,
            delete_before_replace=self.delete_before_replace,
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        try:
            record = self.fetch(self.backend(props), id_)
        except NotFoundError:
            # Deleted elsewhere: an empty id drops it from the state.
            return pulumi.dynamic.ReadResult(id_="", outs={})
        return pulumi.dynamic.ReadResult(
            id_=id_, outs=self.state(record, props), inputs=self.inputs(props)
        )

    def fetch(self, backend: Any, id_: str) -> Any:
        """The service's record of ``id_``; raises a ``NotFoundError`` where it is gone."""
        raise NotImplementedError


def _plain(value: Any) -> Any:
    """A record's value as the engine keeps it: enums by value, records as dicts."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
