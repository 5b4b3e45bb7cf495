"""What the hardware-rule tests share."""

from __future__ import annotations

from typing import Any

from vertex_training.jobs.finding import Finding
from vertex_training.jobs.rules.hardware import check_machine_spec


def machine_spec(
    path: str,
    machine: str,
    accelerator: str | None = None,
    count: int = 0,
    topology: str | None = None,
    **rules: Any,
) -> list[Finding]:
    """The findings of one ``machineSpec`` at ``path``, its hardware given in order; ``rules``
    are ``check_machine_spec``'s other keywords (``target``,
    ``scheduling_strategy``)."""
    return check_machine_spec(
        path=path,
        machine_type=machine,
        accelerator_type=accelerator,
        accelerator_count=count,
        tpu_topology=topology,
        **rules,
    )
