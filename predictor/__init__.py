"""The small prediction server of the serving image and of the local endpoint twin.

Stands alone like ``trainer/``: aiohttp and TensorFlow,
nothing of ``vertex_training``. ``python -m predictor --help`` lists its flags.
"""

__all__ = ["BadRequestError"]


class BadRequestError(ValueError):
    """A request that cannot be served as sent (HTTP 400); the message says what would be
    valid."""
