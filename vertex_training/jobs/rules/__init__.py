"""Validation rules over a job body's read-only view: the hardware catalog and the API's limits.

Findings name fields by their Vertex API path (``jobSpec.workerPoolSpecs[1].machineSpec``).
"""
