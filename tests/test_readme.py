"""The README's two examples work as written: the smallest dev stack is a valid stack file
(no problem, no warning) and the smallest program registers a platform and one job."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

import vertex_training as vt
from tests import PROJECT_ROOT
from tests.pulumi_mocks import run_pulumi


def readme_block(language: str, holding: str = "") -> str:
    """The README's one ``language`` block (that holds ``holding``)."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", readme, re.S | re.M)
    (block,) = [b for b in blocks if holding in b]
    return block


def test_the_smallest_dev_stack_is_valid(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.team.yaml"
    stack_file.write_text(readme_block("yaml"), encoding="utf-8")
    stack = vt.load_stack(stack_file)
    assert stack.config.environment == "dev"
    assert stack.config.warnings == ()
    assert set(stack.jobs) == {"horses"}


def test_the_smallest_program_registers_a_platform_and_one_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "__main__.py"
    program.write_text(readme_block("python", "vt.TrainingPlatform"), encoding="utf-8")
    # As run from this repository: the image builds docker/trainer.Dockerfile.
    monkeypatch.chdir(PROJECT_ROOT)
    run = run_pulumi(lambda: runpy.run_path(str(program)), stack="team")
    run.one("vertex-training:index:TrainingPlatform")
    job = run.one("pulumi-python:dynamic/vertex:CustomJob")
    assert job.name == "horses"
    assert "modelDir" in run.outputs


def test_the_readme_is_short_and_counts_the_examples_there_are() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    (said,) = re.findall(r"\[`examples/`\]\(examples\) has (\w+) whole projects", readme)
    examples = [p for p in (PROJECT_ROOT / "examples").iterdir() if (p / "Pulumi.yaml").is_file()]
    assert words.index(said) + 1 == len(examples)


def test_the_sdk_snippet_lists_the_jobs_of_a_local_vertex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from google.cloud.aiplatform import initializer

    from vertex_training.local import wire
    from vertex_training.local.server import LocalVertex

    for key, value in vars(initializer.global_config).items():  # restored after the test
        monkeypatch.setattr(initializer.global_config, key, value)
    vertex = LocalVertex(tmp_path, "local", "us-central1")
    server = wire.serve(vertex.handlers, admin=vertex.admin)
    try:
        snippet = readme_block("python", "aiplatform.init")
        exec(snippet.replace("127.0.0.1:8808", server.address), {})
    finally:
        server.stop()
    assert capsys.readouterr().out == "[]\n"
