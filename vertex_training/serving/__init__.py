"""Served models: ``Model`` (Model Registry: versions, aliases) and ``Endpoint`` (deployed
models, traffic split) as stack state, on Vertex AI or as a local twin (a local registry
and a 127.0.0.1 prediction server speaking Vertex's predict JSON).

Importing this package loads ``pulumi`` only: the backends (``aiplatform_v1``, the local
server) load in the provider process, where they are used.
"""

from __future__ import annotations

from vertex_training.serving.api import DeploymentArgs, EndpointArgs, ModelArgs
from vertex_training.serving.resources import Endpoint, Model

__all__ = ["DeploymentArgs", "Endpoint", "EndpointArgs", "Model", "ModelArgs"]
