"""Jobs run images by digest: a tag can move under a job that is running, a digest cannot.

The one rule for the job rules, the platform's Args, the stack config and the policy pack.
"""

from __future__ import annotations

import re

DIGEST_REFERENCE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
"""``REGISTRY/PATH@sha256:<64 hex digits>``."""

DIGEST_FORM = "REGISTRY/PATH@sha256:<64 hex digits>"
"""What a reference by digest looks like, for messages."""


def is_by_digest(image: str) -> bool:
    """True for ``REGISTRY/PATH@sha256:<64 hex digits>``; a tag (``:latest``) is not."""
    return DIGEST_REFERENCE.match(image) is not None


def not_by_digest(image: str) -> str:
    """What is wrong with ``image`` (``DIGEST_FORM`` is what would be valid); callers add
    where it is."""
    return f"{image!r} is not an image by digest (a tag can move while a job runs)"


__all__ = ["DIGEST_FORM", "DIGEST_REFERENCE", "is_by_digest", "not_by_digest"]
