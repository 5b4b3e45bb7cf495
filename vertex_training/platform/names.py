"""Names a platform gives what it creates in Google Cloud, unique per (stack, component).

Buckets, service accounts, custom roles, repositories and Workbench instances live in
namespaces wider than one component (a bucket name is global, an account id per
project), so two ``TrainingPlatform`` components of one stack must not derive the same
name. Each name carries a qualifier: by default the component's name, except for
``DEFAULT_COMPONENT`` ("platform", what this repo's ``__main__.py`` uses), whose names
stay what they were before components were named in them (renaming a bucket or an
account replaces it). An empty qualifier gives any component those earlier names.

A name that would pass Google Cloud's length limit is cut and ends with a short hash of
the whole, so two long names that differ only at their end stay distinct. Plain Python:
no pulumi.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "APP_LABEL",
    "BUCKET_NAME_MAX",
    "DEFAULT_COMPONENT",
    "SERVICE_ACCOUNT_ID_MAX",
    "PlatformNames",
    "derived_bucket_name",
    "name_qualifier",
    "platform_labels",
    "platform_names",
    "slug",
]

APP_LABEL = "vertex-training"
"""The ``app`` label of everything a platform creates."""

DEFAULT_COMPONENT = "platform"
"""The component name whose derived names do not include it (the names stacks had)."""

BUCKET_NAME_MAX = 63
"""Cloud Storage: 3-63 characters for a name without dots."""
SERVICE_ACCOUNT_ID_MAX = 30
"""IAM: account ids are 6-30 characters, ``[a-z][a-z0-9-]*[a-z0-9]``."""
_INSTANCE_NAME_MAX = 63
_ROLE_ID_MAX = 64
_REPOSITORY_ID_MAX = 63
_HASH_LENGTH = 6


def slug(text: str) -> str:
    """Lowercase letters, digits and '-' only: safe in resource ids and label values."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "stack"


def _fit(head: str, tail: str, max_length: int, separator: str = "-") -> str:
    """``head + tail``, or, when longer than ``max_length``, ``head`` cut and followed by
    a hash of the whole name so that distinct long names stay distinct."""
    whole = head + tail
    if len(whole) <= max_length:
        return whole
    digest = hashlib.sha256(whole.encode()).hexdigest()[:_HASH_LENGTH]
    room = max_length - len(tail) - len(digest) - len(separator)
    return head[:room].rstrip("-_.") + separator + digest + tail


def name_qualifier(component: str, chosen: str | None = None) -> str:
    """What tells this component's names apart: ``chosen`` when given (``""``: none),
    else the component's name, none for ``DEFAULT_COMPONENT``."""
    if chosen is not None:
        return slug(chosen) if chosen else ""
    return "" if component == DEFAULT_COMPONENT else slug(component)


def derived_bucket_name(project: str, stack: str, qualifier: str = "") -> str:
    """``<project>-<stack>[-<qualifier>]-vertex``, at most 63 characters."""
    parts = [project, slug(stack), qualifier]
    return _fit("-".join(p for p in parts if p), "-vertex", BUCKET_NAME_MAX)


@dataclass(frozen=True)
class PlatformNames:
    """The names a platform derives from its stack and component (the bucket's, which
    also needs the project, is ``derived_bucket_name``)."""

    training_account_id: str
    workbench_account_id: str
    workbench_instance: str
    tensorboard_role_id: str
    repository_id: str
    """The Artifact Registry repository's default id (``trainers`` before components)."""


def _cut(name: str, qualifier: str, max_length: int, separator: str = "-") -> str:
    """``name`` within ``max_length``: with a qualifier, cut and hashed (``_fit``); without
    one, cut as names were before components (hashing would rename, and so replace, it)."""
    if qualifier:
        return _fit(name, "", max_length, separator)
    return name[:max_length].rstrip("-")


def platform_names(stack: str, qualifier: str = "") -> PlatformNames:
    """The names a component of stack ``stack`` gives its resources (``qualifier`` from
    ``name_qualifier``)."""
    stack = slug(stack)
    tail = f"-{qualifier}" if qualifier else ""
    role_id = f"vertexTensorboardWriter_{stack}{tail}".replace("-", "_")
    return PlatformNames(
        training_account_id=_cut(f"vtx-train-{stack}{tail}", qualifier, SERVICE_ACCOUNT_ID_MAX),
        workbench_account_id=_cut(
            f"vtx-workbench-{stack}{tail}", qualifier, SERVICE_ACCOUNT_ID_MAX
        ),
        workbench_instance=_cut(f"vertex-workbench-{stack}{tail}", qualifier, _INSTANCE_NAME_MAX),
        tensorboard_role_id=_cut(role_id, qualifier, _ROLE_ID_MAX, separator="_"),
        repository_id=_cut(f"trainers{tail}", qualifier, _REPOSITORY_ID_MAX),
    )


def platform_labels(environment: str, stack: str, extra: Mapping[str, str]) -> dict[str, str]:
    """The labels of everything a platform creates (its jobs too)."""
    return {
        "app": APP_LABEL,
        "stack": slug(stack)[:63],
        "environment": environment,
        "managed-by": "pulumi",
        **extra,
    }
