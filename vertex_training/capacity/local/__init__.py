"""The local twin of a persistent resource: a warm pool of worker processes (``WarmPool``)
that the local backend runs the replicas of jobs placed on the resource in."""

from vertex_training.capacity.local.resource import WarmPool, WarmPoolArgs

__all__ = ["WarmPool", "WarmPoolArgs"]
