"""Run a stack's jobs on this machine without the Pulumi engine.

``python -m vertex_training.runner``.

The way to try the project where the Pulumi CLI is not installed, and the end-to-end test
of the local stack in CI. Jobs run on ``LocalBackend`` under the stack's ``localRoot``.
"""
