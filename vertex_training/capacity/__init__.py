"""Capacity as stack state: ``PersistentResource`` (Vertex AI pools kept provisioned,
billed by the hour) that jobs are placed on and checked against, and on ``local`` its
twin, a warm pool of worker processes (``capacity.local``).

Importing this package loads ``pulumi`` only: pulumi_gcp's ``vertex`` submodule loads
where a cloud resource is created, the warm pool where a local one is.
"""

from __future__ import annotations

from vertex_training.capacity.api import Autoscaling, PersistentResourceArgs, ResourcePool
from vertex_training.capacity.resource import PersistentResource

__all__ = ["Autoscaling", "PersistentResource", "PersistentResourceArgs", "ResourcePool"]
