"""The one CMEK key rule: a job's ``encryptionSpec.kmsKeyName`` and the platform's
``kms_key_name`` (plain Python: the platform rules use it too)."""

from __future__ import annotations

import re

KMS_KEY = re.compile(
    r"^projects/[^/]+/locations/([a-z0-9-]+)/keyRings/[A-Za-z0-9_-]+/cryptoKeys/[A-Za-z0-9_-]+$"
)
"""A Cloud KMS key's resource name; its first group is the key's location."""


def kms_key_problem(name: str | None, region: str | None) -> tuple[str, str] | None:
    """(what is wrong, what would be valid) with the key ``name``, or None (as for no key). A
    CMEK key must be in the region of what it encrypts (``region``; None: not known, any)."""
    if name is None:
        return None
    valid = f"projects/P/locations/{region or 'L'}/keyRings/K/cryptoKeys/C"
    match = KMS_KEY.match(name)
    if match is None:
        return f"{name!r} is not a Cloud KMS key name", valid
    if region is not None and match.group(1) != region:
        return (
            f"{name!r} is not a key in the region {region} (CMEK keys must be in the region "
            "of what they encrypt)",
            valid,
        )
    return None


__all__ = ["KMS_KEY", "kms_key_problem"]
