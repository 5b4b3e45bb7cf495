"""One renderer of a finding, the surface its parameter: the same finding in each surface's
words, and the finding itself as it was made."""

from __future__ import annotations

import dataclasses

import pytest

from vertex_training.findings import Finding, Surface, render
from vertex_training.jobs.rules.hardware import acknowledge

GPU = "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
COUNT = Finding(
    GPU,
    "3 x NVIDIA_TESLA_T4 on n1-standard-16 is not valid",
    check="accelerator-count:NVIDIA_TESLA_T4x3@n1-standard-16",
    valid="1, 2, 4",
    caller="chief.accelerator.count",
)
SAID = f"{COUNT.message} (check {COUNT.check})"


@pytest.mark.parametrize(
    ("surface", "owner", "expected"),
    [
        (
            "python",
            "CustomJobArgs",
            f"CustomJobArgs.chief.accelerator.count: {SAID} (Vertex field {GPU}); valid: 1, 2, 4",
        ),
        ("stack", "", f"chief.accelerator.count: {SAID} (Vertex field {GPU}); valid: 1, 2, 4"),
        ("property", "", f"{SAID} (Vertex field {GPU}). Valid: 1, 2, 4"),
        ("check", "", f"chief.accelerator.count: {SAID}; valid: 1, 2, 4"),
        ("message", "", SAID),
    ],
)
def test_each_surface_says_the_finding_in_its_words(
    surface: Surface, owner: str, expected: str
) -> None:
    assert render(COUNT, surface, owner) == expected


def test_a_finding_keeps_what_it_was_given() -> None:
    made = Finding(GPU, "too many", check="accelerator-count:x")
    assert made.message == "too many"  # its check is said where it is rendered
    assert dataclasses.replace(made, caller="chief").message == "too many"


def test_an_acknowledged_error_warns_naming_its_check() -> None:
    (kept,) = acknowledge([COUNT], [COUNT.check])
    assert (kept.severity, kept.message) == ("warning", COUNT.message)
    assert (
        render(kept, "message") == f"{SAID} [acknowledged hardware check: a warning, not refused]"
    )


def test_a_warning_says_no_check_and_a_field_at_its_own_path_is_not_named_twice() -> None:
    warning = dataclasses.replace(COUNT, severity="warning", caller=GPU, valid="")
    assert render(warning, "stack") == f"{GPU}: {COUNT.message}"
