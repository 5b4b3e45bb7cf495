"""Serving backends behind one small protocol (``ServingBackend``): the Model Registry and
endpoints on Vertex AI, or their local twin under the local root.

Both are chosen by the same ``BackendSettings`` the jobs carry (the providers' ``backends``),
so a stack's models and endpoints go where its jobs run. Each implementation is imported
only when it is used:
``google.cloud.aiplatform_v1`` must stay out of program import. The records the protocol
returns live in ``base``; this package names what its callers catch.
"""

from __future__ import annotations

from vertex_training.serving.backends.base import (
    ModelInUseError,
    ServingBackend,
    ServingNotFoundError,
    ServingRefusedError,
)

__all__ = [
    "ModelInUseError",
    "ServingBackend",
    "ServingNotFoundError",
    "ServingRefusedError",
]
