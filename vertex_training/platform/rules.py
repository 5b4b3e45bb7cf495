"""Rules on platform values, shared by ``TrainingPlatformArgs`` and the stack config reader:
names Google Cloud accepts (projects, buckets, repositories, images, zones) and the
environment kinds. Plain Python: no pulumi_gcp.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from dataclasses import dataclass

__all__ = [
    "GCP_PROJECT_ID",
    "IMAGE_NAME",
    "IMAGE_REFERENCE",
    "KMS_KEY",
    "REPOSITORY_ID",
    "SETTINGS",
    "ZONE",
    "Bounds",
    "EnvironmentKind",
    "InvalidValueError",
    "check_bucket_name",
    "check_settings",
]

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*[a-z0-9]$")
REPOSITORY_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
IMAGE_NAME = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
IMAGE_REFERENCE = re.compile(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})?$"
)
ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)-[a-z]$")
GCP_PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


KMS_KEY = re.compile(
    r"^projects/[^/]+/locations/[a-z0-9-]+/keyRings/[A-Za-z0-9_-]+/cryptoKeys/[A-Za-z0-9_-]+$"
)


class EnvironmentKind(enum.StrEnum):
    """What a stack stands up; the kind decides the safety rules, config the sizes."""

    LOCAL = "local"
    """No Google Cloud account: jobs run on this machine, nothing ``gcp:`` is registered."""
    DEV = "dev"
    """Cheap and disposable: buckets force-destroyed, staging objects expire."""
    PROD = "prod"
    """Trained models survive ``pulumi destroy``: versioning, soft delete, protection."""

    @property
    def is_cloud(self) -> bool:
        return self is not EnvironmentKind.LOCAL


class InvalidValueError(ValueError):
    """A value Google Cloud would refuse: ``problem`` and what would be ``valid``."""

    def __init__(self, problem: str, valid: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.valid = valid


def check_bucket_name(name: str) -> None:
    """Raise ``_FieldValueError`` unless ``name`` follows the Cloud Storage naming rules."""
    valid = (
        "3-63 characters of lowercase letters, digits, '-', '_' and '.', starting and "
        "ending with a letter or digit, no 'goog' prefix, no 'google', not an IP address"
    )
    max_length = 222 if "." in name else 63
    if not 3 <= len(name) <= max_length:
        raise InvalidValueError(f"'{name}' has {len(name)} characters", valid)
    if not _BUCKET_NAME.match(name):
        raise InvalidValueError(f"'{name}' is not a valid bucket name", valid)
    if any(len(part) > 63 or not part for part in name.split(".")):
        raise InvalidValueError(f"'{name}' has an empty or over-long dot-separated part", valid)
    if name.startswith("goog") or "google" in name:
        raise InvalidValueError(f"'{name}' uses a name reserved by Google", valid)
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return
    raise InvalidValueError(f"'{name}' looks like an IP address", valid)


@dataclass(frozen=True)
class Bounds:
    """The range Google Cloud accepts for one platform setting, and how to phrase it."""

    low: int
    high: int
    unit: str
    what: str = "is out of range"
    off: int | None = None
    """A value outside the range that is accepted too (0: the feature off)."""

    @property
    def valid(self) -> str:
        span = f"an integer from {self.low} to {self.high}"
        return span if self.off is None else f"{self.off}, or {span}"

    def check(self, value: int) -> None:
        """Raise ``InvalidValueError`` unless ``value`` is in range (or ``off``)."""
        if value != self.off and not self.low <= value <= self.high:
            raise InvalidValueError(f"{value} {self.unit} {self.what}", self.valid)


SETTINGS: dict[str, Bounds] = {
    "image_keep_count": Bounds(1, 1000, "images"),
    "staging_retention_days": Bounds(1, 3650, "days"),
    # Cloud Storage soft delete: a retention of 7 to 90 days, or 0 to turn it off.
    "soft_delete_retention_days": Bounds(
        7, 90, "days", "is not a soft delete duration Cloud Storage accepts", off=0
    ),
    "disk_size_gb": Bounds(150, 64000, "GB", "is not a valid boot disk size"),
    "idle_timeout_minutes": Bounds(10, 1440, "minutes"),
}
"""The one place each platform setting's range lives: ``TrainingPlatformArgs`` (and its
``Workbench``) and the stack config reader both check these, by these names."""


def check_settings(values: dict[str, int]) -> list[tuple[str, InvalidValueError]]:
    """(name, error) for each of ``values`` (a ``SETTINGS`` name -> value) out of range,
    every one of them (one run reports them all)."""
    out = []
    for name, value in values.items():
        try:
            SETTINGS[name].check(value)
        except InvalidValueError as error:
            out.append((name, error))
    return out
