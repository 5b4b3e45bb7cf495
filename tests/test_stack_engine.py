"""The stack runner's own logic, without the CLI (tests/engine runs it with the real one)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vertex_training.stack import engine
from vertex_training.stack.__main__ import main

PROJECT = "name: demo\nruntime: python\nstackConfigDir: stacks\n"


def _project(tmp_path: Path, environment: str | None = "local") -> Path:
    (tmp_path / "Pulumi.yaml").write_text(PROJECT, encoding="utf-8")
    (tmp_path / "__main__.py").write_text("import helper\nhelper.ran.append(1)\n")
    (tmp_path / "helper.py").write_text("ran = []\n")
    (tmp_path / "stacks").mkdir()
    if environment is not None:
        (tmp_path / "stacks" / "Pulumi.s.yaml").write_text(
            f"config:\n  demo:environment: {environment}\n", encoding="utf-8"
        )
    return tmp_path


def test_the_project_is_found_from_below_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "sub" / "deeper").mkdir(parents=True)

    assert engine.find_project_dir(root / "sub" / "deeper") == root.resolve()


def test_no_project_is_a_usage_error_naming_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    assert main(["preview", "--stack", "local"]) == engine.EXIT_USAGE
    assert f"no Pulumi.yaml in {tmp_path.resolve()} or above it" in capsys.readouterr().err


def test_a_missing_cli_names_both_ways_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    monkeypatch.delenv(engine.CLI_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    with pytest.raises(engine.StackCommandError, match="make pulumi-cli") as raised:
        engine.find_cli(root)
    assert "install Pulumi (https://www.pulumi.com/docs/install/)" in str(raised.value)


def test_the_built_cli_comes_before_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    built = root / ".tools" / "bin" / "pulumi"
    built.parent.mkdir(parents=True)
    built.write_text("#!/bin/sh\n")
    monkeypatch.delenv(engine.CLI_ENV, raising=False)

    assert engine.find_cli(root) == built.resolve()


def test_the_program_runs_as_main_with_its_directory_importable(tmp_path: Path) -> None:
    root = _project(tmp_path)
    sys.modules.pop("helper", None)

    engine.inline_program(root / "__main__.py")()

    assert sys.modules["helper"].ran == [1]
    assert str(root) not in sys.path
    sys.modules.pop("helper", None)


@pytest.mark.parametrize(("environment", "expected"), [("local", ""), ("dev", None)])
def test_only_a_local_stack_gets_the_empty_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environment: str, expected: str | None
) -> None:
    root = _project(tmp_path, environment)
    cli = root / "pulumi"
    cli.write_text("#!/bin/sh\nexit 0\n")  # `pulumi whoami` succeeds: logged in
    cli.chmod(0o755)
    monkeypatch.setenv(engine.CLI_ENV, str(cli))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)

    run = engine.prepare("s", root)

    assert run.env.get("PULUMI_CONFIG_PASSPHRASE") == expected
    assert run.env["PATH"].split(os.pathsep)[:2] == [str(root), str(Path(sys.executable).parent)]
    assert "PULUMI_BACKEND_URL" not in run.env  # the CLI's own login stays in charge


SECRET_STACK = (
    "config:\n  demo:environment: local\n  demo:jobs:\n    - name: j\n"
    "      chief: {env: {TOKEN: {secure: v1:abc}}}\n"
)


def _logged_in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack_file: str) -> Path:
    root = _project(tmp_path)
    (root / "stacks" / "Pulumi.s.yaml").write_text(stack_file, encoding="utf-8")
    cli = root / "pulumi"
    cli.write_text("#!/bin/sh\nexit 0\n")  # `pulumi whoami` succeeds: logged in
    cli.chmod(0o755)
    monkeypatch.setenv(engine.CLI_ENV, str(cli))
    return root


@pytest.mark.parametrize("empty", [None, ""])
def test_a_stack_that_holds_a_secret_needs_the_users_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty: str | None
) -> None:
    root = _logged_in_project(tmp_path, monkeypatch, SECRET_STACK)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    if empty is None:
        monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    else:  # what `make` exports: an empty passphrase protects nothing
        monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", empty)

    with pytest.raises(engine.StackCommandError) as refused:
        engine.prepare("s", root)
    said = str(refused.value)
    assert "stack 's' holds secrets (demo:jobs) and no passphrase is set" in said
    assert "PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE" in said
    assert "delete the stack file's `encryptionsalt` line, set your passphrase" in said


def test_a_passphrase_file_is_used_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _logged_in_project(tmp_path, monkeypatch, SECRET_STACK)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(tmp_path / "passphrase"))

    run = engine.prepare("s", root)

    assert "PULUMI_CONFIG_PASSPHRASE" not in run.env
    assert run.env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(tmp_path / "passphrase")


def test_no_backend_and_no_login_is_the_project_file_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    cli = root / "pulumi"
    cli.write_text("#!/bin/sh\nexit 1\n")  # `pulumi whoami` fails: not logged in
    cli.chmod(0o755)
    monkeypatch.setenv(engine.CLI_ENV, str(cli))
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)

    run = engine.prepare("s", root)

    assert run.env["PULUMI_BACKEND_URL"] == f"file://{root.resolve() / '.pulumi-state'}"


def test_a_missing_plugin_is_one_line_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no pulumi-resource-gcp on PATH either
    message = engine.missing_plugin_message([("gcp", "10.2.0")], [("gcp", "9.0.0")])

    assert message is not None
    assert message.startswith("the stack needs the Pulumi provider plugin `gcp` 10.2.0")
    assert "`pulumi plugin install resource gcp 10.2.0`" in message


def test_every_missing_plugin_is_named_in_the_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    needed = [("docker-build", "0.0.22"), ("gcp", "10.2.0")]
    message = engine.missing_plugin_message(needed, [])

    assert message is not None
    assert message.startswith(
        "the stack needs the Pulumi provider plugins `docker-build` 0.0.22, `gcp` 10.2.0, "
        "which are not installed"
    )
    assert "`pulumi plugin install resource docker-build 0.0.22` and `pulumi plugin " in message


def test_an_installed_plugin_or_one_on_path_gets_no_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert engine.missing_plugin_message([("gcp", "10.2.0")], [("gcp", "v10.2.0")]) is None
    assert engine.missing_plugin_message([], []) is None
    on_path = tmp_path / "pulumi-resource-gcp"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert engine.missing_plugin_message([("gcp", "10.2.0")], []) is None


def test_the_needed_plugins_are_those_of_the_provider_packages_loaded() -> None:
    import pulumi_gcp  # the package only: its resource modules stay unloaded

    metadata = Path(pulumi_gcp.__file__).parent / "pulumi-plugin.json"
    version = json.loads(metadata.read_text())["version"]
    assert ("gcp", version) in engine.loaded_providers()


def test_a_file_backend_directory_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    cli = root / "pulumi"
    cli.write_text("#!/bin/sh\nexit 0\n")
    cli.chmod(0o755)
    monkeypatch.setenv(engine.CLI_ENV, str(cli))
    state = tmp_path / "not" / "yet"
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{state}")

    engine.prepare("s", root)

    assert state.is_dir()


@pytest.mark.parametrize(("status", "expected"), [(3, 3), (1, 1), (255, 255)])
def test_the_exit_status_is_the_clis_own(tmp_path: Path, status: int, expected: int) -> None:
    """Read from the SDK's structured result, not its error text: this fails if the pinned
    SDK stops raising ``CommandError`` from the frame that holds the ``CommandResult``."""
    from pulumi import automation as auto

    cli = tmp_path / "bin" / "pulumi"
    cli.parent.mkdir()
    # `version` answers the SDK's version check; every other command fails, saying a
    # "code:" line of its own that must not be taken for the status.
    cli.write_text(
        '#!/bin/sh\nif [ "$1" = version ]; then echo v3.272.0; exit 0; fi\n'
        f'echo " code: 42"; echo " code: 43" >&2; exit {status}\n'
    )
    cli.chmod(0o755)
    command = auto.PulumiCommand(root=str(tmp_path), skip_version_check=True)

    with pytest.raises(auto.errors.CommandError) as raised:
        command.run(["preview"], str(tmp_path), {})

    assert engine._exit_code(raised.value) == expected


def test_an_error_without_a_result_is_status_1() -> None:
    assert engine._exit_code(RuntimeError("\n code: 3\n")) == 1
