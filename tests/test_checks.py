"""The compiled field checks (``check_fields``, ``matches``) answer exactly as the
reference reading of an annotation (``_matches``) for every field of every checked class."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pulumi
import pytest

from vertex_training import _checks
from vertex_training.jobs import api, pools, studies
from vertex_training.platform import platform

CHECKED = [
    cls
    for module in (api, pools, studies, platform)
    for _, cls in inspect.getmembers(module, inspect.isclass)
    if dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
]


class _Awaitable:
    def __await__(self):  # type: ignore[no-untyped-def]
        yield


class _Str(str):
    pass


VALUES: list[object] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    2.5,
    "",
    "text",
    "SPOT",
    "maximize",
    "log",
    _Str("SPOT"),
    b"bytes",
    Path("/tmp"),
    [],
    (),
    ["a", "b"],
    ("a", 1),
    [1, 2.5],
    [True],
    [None],
    {},
    {"k": "v"},
    {"k": 1},
    {1: "v"},
    {"k": ["v"]},
    object(),
    _Awaitable(),
    api.Metric(),
    api.Accelerator("NVIDIA_TESLA_T4"),
    api.WorkerPool(machine_type="n1-standard-4"),
    api.Scheduling(),
    [api.Metric()],
    [api.DoubleParameter(parameter_id="lr", min_value=0.1, max_value=1.0)],
    {"a": [api.DiscreteParameter(parameter_id="n", values=[1.0, 2.0])]},
]


def _output() -> pulumi.Output[str]:
    return pulumi.Output.from_input("later")


def test_every_checked_class_is_found() -> None:
    names = {cls.__name__ for cls in CHECKED}
    assert {"CustomJobArgs", "WorkerPool", "Study", "TrainingPlatformArgs"} <= names


@pytest.mark.parametrize("cls", CHECKED, ids=lambda cls: cls.__name__)
def test_compiled_checks_answer_as_the_annotation_reads(cls: type) -> None:
    values = [*VALUES, _output(), [_output()], {"k": _output()}]
    for name, expected, check in _checks._field_checks(cls):
        for value in values:
            want = _checks._matches(value, expected)
            assert check(value) is want, (cls.__name__, name, value)
            assert _checks.matches(value, expected) is want, (cls.__name__, name, value)
