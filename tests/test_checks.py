"""The runtime type checks of the Args (pydantic, strict): each wrong type is refused
naming the argument, what was given and what is valid; a value not known yet (an Output
or awaitable) passes wherever a ``pulumi.Input`` is declared."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pulumi
import pytest

from vertex_training import _checks
from vertex_training.jobs import api, pools, studies
from vertex_training.platform import platform
from vertex_training.serving import api as serving

CHECKED = [
    cls
    for module in (api, pools, studies, platform, serving)
    for _, cls in inspect.getmembers(module, inspect.isclass)
    if issubclass(cls, _checks.Checked)
    and dataclasses.is_dataclass(cls)
    and cls.__module__ == module.__name__
]


class _Awaitable:
    def __await__(self):  # type: ignore[no-untyped-def]
        yield


def _output() -> pulumi.Output[str]:
    return pulumi.Output.from_input("later")


POOL = pools.WorkerPool(machine_type="n1-standard-4")
PARAMETER = studies.DoubleParameter(parameter_id="lr", min_value=0.1, max_value=1.0)
IMAGE = platform.ImageBuild(context=Path("trainer"))

CASES: list[tuple[Any, str, Any, bool]] = [
    (POOL, "replica_count", 3, True),
    (POOL, "replica_count", True, False),  # a bool is not a number
    (POOL, "replica_count", "3", False),  # no coercion
    (POOL, "replica_count", 3.0, False),
    (POOL, "replica_count", "later", False),
    (POOL, "args", ["a", "b"], True),
    (POOL, "args", ("a",), True),
    (POOL, "args", "ab", False),  # text is not a list of text
    (POOL, "args", ["a", 1], False),
    (POOL, "command", None, True),
    (POOL, "env", {"K": "v"}, True),
    (POOL, "env", {"K": 1}, False),
    (POOL, "env", ["K"], False),
    (POOL, "accelerator", pools.Accelerator("NVIDIA_TESLA_T4"), True),
    (POOL, "accelerator", {"type": "NVIDIA_TESLA_T4"}, False),
    (POOL, "nfs_mounts", [pools.Accelerator("NVIDIA_TESLA_T4")], False),
    (POOL, "extra_fields", {"lustreMounts": [{"a": 1}]}, True),
    (PARAMETER, "min_value", 1, True),  # a whole number is a number
    (PARAMETER, "min_value", True, False),
    (PARAMETER, "scale", "log", True),
    (PARAMETER, "scale", "LOG", False),
    (pools.Scheduling(), "strategy", "SPOT", True),
    (pools.Scheduling(), "strategy", "spot", False),
    (IMAGE, "context", "trainer", True),  # a path may be given as text
    (IMAGE, "context", 3, False),
]
"""(valid Args, field, value, accepted)."""

LATER_CASES: list[tuple[Any, str, Any]] = [
    (POOL, "replica_count", _output()),
    (POOL, "machine_type", _Awaitable()),
    (POOL, "args", _output()),
    (POOL, "args", ["a", _output()]),
    (POOL, "env", {"K": _output()}),
]
"""(valid Args, a ``pulumi.Input`` field, a value not known yet)."""


def _check(args: Any, name: str, value: Any) -> None:
    changed = dataclasses.replace(args, **{name: getattr(args, name)})  # a fresh copy
    object.__setattr__(changed, name, value)
    _checks.Checked.__post_init__(changed)  # the type checks alone


def test_every_checked_class_is_found() -> None:
    names = {cls.__name__ for cls in CHECKED}
    assert {"CustomJobArgs", "WorkerPool", "Study", "TrainingPlatformArgs", "ModelArgs"} <= names


@pytest.mark.parametrize("cls", CHECKED, ids=lambda cls: cls.__name__)
def test_every_checked_class_has_a_validator_of_each_field(cls: type) -> None:
    """Validators are built on a class's first construction: each must build, and judge
    every field of its class."""
    assert set(_checks._adapter(cls).core_schema["fields"]) == {
        f.name for f in dataclasses.fields(cls)
    }


@pytest.mark.parametrize(("args", "name", "value", "accepted"), CASES)
def test_a_value_is_judged_by_its_declared_type(
    args: object, name: str, value: Any, accepted: bool
) -> None:
    if accepted:
        _check(args, name, value)
    else:
        with pytest.raises(
            _checks.InvalidArgumentsError, match=f"{type(args).__name__}.{name}: got"
        ):
            _check(args, name, value)


@pytest.mark.parametrize(("args", "name", "value"), LATER_CASES)
def test_a_value_not_known_yet_passes_where_an_input_is_declared(
    args: object, name: str, value: Any
) -> None:
    _check(args, name, value)


def test_a_value_not_known_yet_is_refused_where_no_input_is_declared() -> None:
    with pytest.raises(_checks.InvalidArgumentsError, match=r"WorkerPool\.accelerator: got"):
        _check(POOL, "accelerator", _output())


def test_the_message_names_the_argument_what_was_given_and_what_is_valid() -> None:
    with pytest.raises(_checks.InvalidArgumentsError) as caught:
        pools.WorkerPool(machine_type="n1-standard-4", replica_count="3", image=3)  # type: ignore[arg-type]
    assert isinstance(caught.value, pulumi.RunError)
    assert str(caught.value).splitlines() == [
        "WorkerPool.replica_count: got str '3'; valid: int or an Output of int",
        "WorkerPool.image: got int 3; valid: str or an Output of str or None",
    ]
