"""Did-you-mean for a misspelt name: one phrasing for every route's messages.

Plain Python (``difflib``): the program's checks, the rules and the config reader share it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def _normal(name: str) -> str:
    # Spelling, not casing: 'spot' means SPOT, and '-' and '_' are one separator.
    return name.strip().lower().replace("-", "_")


def _tokens(name: str) -> tuple[str, ...]:
    return tuple(part for part in _normal(name).split("_") if part)


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    width = len(inner)
    return 0 < width < len(outer) and any(
        outer[i : i + width] == inner for i in range(len(outer) - width + 1)
    )


def closest(value: str, options: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The option ``value`` most likely meant, or None.

    A close spelling first (``SPTO`` -> ``SPOT``, ``maximise`` -> ``maximize``); else an
    option that holds the value's words or is held by them (``V100`` ->
    ``NVIDIA_TESLA_V100``, ``GRID_SEARH`` -> ``grid``), when only one does."""
    by_normal: dict[str, str] = {}
    for option in options:
        by_normal.setdefault(_normal(option), option)
    normal = _normal(value)
    if not normal or (normal in by_normal and by_normal[normal] == value):
        return None
    if normal in by_normal:
        return by_normal[normal]
    close = difflib.get_close_matches(normal, list(by_normal), n=1, cutoff=cutoff)
    if close:
        return by_normal[close[0]]
    words = _tokens(value)
    holding = [
        option
        for key, option in by_normal.items()
        if _contains(_tokens(key), words) or _contains(words, _tokens(key))
    ]
    return holding[0] if len(holding) == 1 else None


def did_you_mean(value: str, options: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest option, or ``""``."""
    guess = closest(value, options)
    return f" (did you mean {guess!r}?)" if guess is not None else ""
