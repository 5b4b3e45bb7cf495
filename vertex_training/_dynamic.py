"""What our dynamic providers share (the jobs', the served models'): where a resource lives
(``BackendSettings``, carried in its inputs), the labels every resource we submit carries,
values not known yet in preview, and the provider base that decides which inputs a check
requires, which replace and which change in place.

Providers are pickled by reference: a subclass's import path is part of every stack's
state, this module's is not.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import pulumi
import pulumi.dynamic
from pulumi.runtime.rpc import UNKNOWN

__all__ = [
    "ADOPTION_LABEL",
    "STACK_LABEL",
    "BackendKind",
    "BackendSettings",
    "Provider",
    "has_unknown",
    "is_unknown",
    "label_value",
    "labelled",
    "placement",
]

ADOPTION_LABEL = "pulumi-job-key"
"""Label carrying a hash of (project, stack, resource name, spec): ``create`` looks for a
job with it before submitting, because the create RPC has no request id."""
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


def is_unknown(value: Any) -> bool:
    """One value not known yet (preview), without looking inside it: the host hands
    unknowns over as ``pulumi.output.Unknown`` (keep_unknowns=True); older SDKs passed
    the sentinel string."""
    return isinstance(value, pulumi.output.Unknown) or (isinstance(value, str) and value == UNKNOWN)


def has_unknown(value: Any) -> bool:
    """Whether ``value`` holds a value not known yet, however deep."""
    if isinstance(value, Mapping):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_unknown(v) for v in value)
    return is_unknown(value)


class BackendKind(enum.StrEnum):
    VERTEX = "vertex"
    LOCAL = "local"


@dataclasses.dataclass(frozen=True)
class BackendSettings:
    """Where jobs run; carried in each job resource's inputs so that the same resources
    run on Vertex in ``dev``/``prod`` and on this machine in the ``local`` stack."""

    kind: BackendKind
    project: str | None = None
    """Vertex only: the Google Cloud project id."""
    location: str | None = None
    """Vertex only: the region, e.g. ``us-central1``."""
    local_root: str | None = None
    """Local only: the directory that holds job state, logs and the local "bucket"."""
    retry_initial_seconds: float = 1.0
    """First backoff of retried reads/lists/cancels/deletes (vertex)."""
    retry_timeout_seconds: float = 120.0
    """Give up retrying a transient error after this long (vertex)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", BackendKind(self.kind))
        if self.kind is BackendKind.VERTEX and not (self.project and self.location):
            raise ValueError(
                "backend: kind 'vertex' needs project and location (region), got "
                f"project={self.project!r} location={self.location!r}"
            )
        if self.kind is BackendKind.LOCAL and not self.local_root:
            raise ValueError("backend: kind 'local' needs local_root (a directory path)")

    @classmethod
    def of(cls, platform: Any) -> BackendSettings:
        """Where a platform's resources live: under its local root on a local platform,
        else in its project (a stand-in while another resource has not given it:
        ``placement`` carries the real one) and region."""
        if platform.environment == "local":
            assert platform.local_root is not None
            return cls(BackendKind.LOCAL, local_root=str(platform.local_root))
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
        return cls(**props)


def backend_target(backend: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a backend's settings (``BackendSettings.to_props()``) that decides
    *where* a resource lives: a change replaces it."""
    return {k: backend[k] for k in ("kind", "project", "location", "local_root") if k in backend}


def placement(
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
    """What our dynamic providers share (the jobs' and the served models'): how a check
    judges the inputs, which inputs replace and which change in place, the inputs kept
    beside the outputs."""

    serialize_as_secret_always = False  # nothing secret in here: keep the state readable
    body: ClassVar[str]
    """The input holding the REST body."""
    required: ClassVar[tuple[str, ...]]
    late: ClassVar[tuple[str, ...]] = ()
    """Inputs that may hold values not known yet (preview) while the others are judged."""
    replacing: ClassVar[tuple[str, ...]]
    """Inputs a change of which replaces the resource (so does the body's, outside
    ``metadata``)."""
    updating: ClassVar[tuple[str, ...]]
    """Inputs changed in place."""
    metadata: ClassVar[tuple[str, ...]]
    """Body fields changed in place."""
    delete_before_replace: ClassVar[bool] = False

    def inputs(self, props: Mapping[str, Any]) -> dict[str, Any]:
        keys = (self.body, *self.replacing, *self.updating)
        return {k: props[k] for k in keys if k in props}

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        """The ``required`` inputs; once all but the ``late`` ones are known, the backend's
        settings and the provider's ``problems``. The backend's target is kept beside the
        inputs (a new target replaces). Inputs equal to the state's were judged by the check
        that let them in: an unchanged resource is not judged again (so a no-op ``up``
        loads neither the protos nor the rules)."""
        if news == _olds:
            return pulumi.dynamic.CheckResult(news, [])
        failures = [
            pulumi.dynamic.CheckFailure(key, f"required input {key!r} missing")
            for key in self.required
            if key not in news
        ]
        early = {k: v for k, v in news.items() if k not in self.late}
        if failures or has_unknown(early) or not isinstance(news[self.body], Mapping):
            return pulumi.dynamic.CheckResult(news, failures)
        try:
            settings = BackendSettings.from_props(news["backend"])
        except (ValueError, TypeError, KeyError) as error:
            return pulumi.dynamic.CheckResult(
                news, [pulumi.dynamic.CheckFailure("backend", str(error))]
            )
        failures = []
        for problem in self.problems(news, settings):
            head = re.split(r"[.:\[]", problem, maxsplit=1)[0]
            prop = head if head in self.required else self.body
            failures.append(pulumi.dynamic.CheckFailure(prop, problem))
        news = {**news, "backend_target": backend_target(settings.to_props())}
        return pulumi.dynamic.CheckResult(news, failures)

    def problems(self, news: Mapping[str, Any], settings: BackendSettings) -> list[str]:
        """What the service would refuse of the inputs, each ``path: message``: a failure of
        the input the path starts at, else of the body."""
        raise NotImplementedError

    def _body(self, props: Mapping[str, Any], metadata: bool) -> Any:
        """The body's ``metadata`` fields, or all its others."""
        body = props.get(self.body)
        if not isinstance(body, Mapping):
            return None if metadata else body
        return {k: v for k, v in body.items() if (k in self.metadata) is metadata}

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

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces, changed = self.changes(olds, news)
        return pulumi.dynamic.DiffResult(
            changes=bool(replaces or changed),
            replaces=replaces,
            delete_before_replace=self.delete_before_replace,
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        outputs = self.current(id_, props)
        if outputs is None:
            # Deleted elsewhere: an empty id drops it from the state.
            return pulumi.dynamic.ReadResult(id_="", outs={})
        inputs = self.inputs(props)
        return pulumi.dynamic.ReadResult(id_=id_, outs={**inputs, **outputs}, inputs=inputs)

    def current(self, id_: str, props: Mapping[str, Any]) -> dict[str, Any] | None:
        """The resource's outputs as the service has them now; None where it is gone."""
        raise NotImplementedError
