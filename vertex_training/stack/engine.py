"""One runner for every stack command: the real Pulumi engine, the program served inline.

``preview``, ``up``, ``refresh`` and ``destroy`` go through the Automation API
(``pulumi.automation``): this process serves the project's program (its ``__main__.py``,
run the way Pulumi's Python language host runs it) and hands the CLI its address, so no
``pulumi-language-python`` is needed. Everything else is what ``pulumi <command>`` would do
in the project directory: the same Pulumi.yaml, the stack settings from its
``stackConfigDir``, the backend from ``PULUMI_BACKEND_URL`` (or the CLI's login), the same
state, the dynamic providers started by the CLI with this environment's Python.

The engine's output is streamed as it comes (the local jobs' progress lines included) and
its exit status is returned. Ctrl-C asks the engine to cancel (it finishes the steps already
running and records them, as ``pulumi`` does); a second Ctrl-C stops it at once.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from vertex_training._project import PROJECT_FILE, project_root
from vertex_training.stack.secure import secure_paths

COMMANDS = ("preview", "up", "refresh", "destroy")
CLI_ENV = "VERTEX_TRAINING_PULUMI_CLI"
"""A ``pulumi`` binary to use instead of the project's ``.tools/bin`` or PATH."""
TOOLS_CLI = Path(".tools") / "bin" / "pulumi"
"""Where ``make pulumi-cli`` builds the CLI, relative to the project directory."""
STATE_DIR = ".pulumi-state"
"""The file backend used when none is configured and the CLI is not logged in."""
LOCAL_ENVIRONMENT = "local"

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it: every command reads the project
and stack files, which the pure-Python loader parses in tens of milliseconds."""


def _read_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)


class StackCommandError(Exception):
    """The command cannot start: the message says what is missing and how to get it."""


@dataclass(frozen=True)
class StackRun:
    """What one stack command runs on."""

    project_dir: Path
    """The directory holding Pulumi.yaml (the workspace)."""
    project_name: str
    """``name`` in Pulumi.yaml."""
    program_file: Path
    """The program served inline (``main`` in Pulumi.yaml, else ``__main__.py``)."""
    cli: Path
    """The ``pulumi`` binary."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment of the CLI and of everything it starts (providers, local jobs)."""


def find_project_dir(start: Path) -> Path:
    """The project directory of ``start`` (:func:`project_root`); an error where there is
    none, since the engine needs its Pulumi.yaml."""
    root = project_root(start)
    if not (root / PROJECT_FILE).is_file():
        raise StackCommandError(
            f"no {PROJECT_FILE} in {start.resolve()} or above it: run this in a Pulumi project"
        )
    return root


def _project_settings(project_dir: Path) -> dict[str, Any]:
    path = project_dir / PROJECT_FILE
    settings = _read_yaml(path) or {}
    if not isinstance(settings, dict) or not settings.get("name"):
        raise StackCommandError(f"{path}: a project file needs a `name`")
    return settings


def _program_file(project_dir: Path, settings: dict[str, Any]) -> Path:
    main = project_dir / str(settings.get("main") or ".")
    program = main / "__main__.py" if main.is_dir() else main
    if not program.is_file():
        raise StackCommandError(f"the project's program {program} does not exist")
    return program


def find_cli(project_dir: Path) -> Path:
    """The ``pulumi`` to run: ``$VERTEX_TRAINING_PULUMI_CLI``, else the one ``make
    pulumi-cli`` built into the project's ``.tools/bin``, else the one on PATH."""
    override = os.environ.get(CLI_ENV)
    if override:
        if not Path(override).is_file():
            raise StackCommandError(f"{CLI_ENV}={override} does not exist")
        return Path(override).resolve()
    built = project_dir / TOOLS_CLI
    if built.is_file():
        return built.resolve()
    on_path = shutil.which("pulumi")
    if on_path:
        return Path(on_path).resolve()
    raise StackCommandError(
        "no Pulumi CLI: `make pulumi-cli` builds the pinned one into .tools/bin from its Go "
        "modules (needs `go`), or install Pulumi (https://www.pulumi.com/docs/install/)"
    )


def _stack_file(project_dir: Path, settings: dict[str, Any], stack: str) -> Path:
    """Where the project keeps the stack's settings (``stackConfigDir``)."""
    return project_dir / str(settings.get("stackConfigDir") or ".") / f"Pulumi.{stack}.yaml"


def stack_file(stack: str, start: Path | None = None) -> Path:
    """The settings file of ``stack`` in the project of ``start`` (default: the working
    directory); an error where the project or the file is missing."""
    project_dir = find_project_dir(start or Path.cwd())
    path = _stack_file(project_dir, _project_settings(project_dir), stack)
    if not path.is_file():
        raise StackCommandError(f"no stack {stack!r}: {path} does not exist")
    return path


def _stack_config(project_dir: Path, settings: dict[str, Any], stack: str) -> dict[str, Any]:
    """The stack file's ``config`` (empty where there is no file yet)."""
    path = _stack_file(project_dir, settings, stack)
    if not path.is_file():
        return {}
    return dict((_read_yaml(path) or {}).get("config") or {})


def _stack_environment(settings: dict[str, Any], config: dict[str, Any]) -> str:
    """The stack's ``environment`` (``local`` by the project's default)."""
    key = f"{settings['name']}:environment"
    default = ((settings.get("config") or {}).get("environment") or {}).get("default", "")
    return str(config.get(key, default))


PASSPHRASE, PASSPHRASE_FILE = "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"


def _passphrase(env: dict[str, str], stack: str, secrets: list[str], local: bool) -> None:
    """The passphrase the CLI encrypts with, in ``env``: the user's where the stack holds a
    secret (``secrets``: its keys), never an empty one; an empty one only for a local stack
    that holds none and where the user set none."""
    if secrets:
        if not (env.get(PASSPHRASE) or env.get(PASSPHRASE_FILE)):
            raise StackCommandError(
                f"stack {stack!r} holds secrets ({', '.join(secrets)}) and no passphrase is "
                f"set: set {PASSPHRASE} (or {PASSPHRASE_FILE}, a file holding it) to the one "
                "they were encrypted with. Secrets set under an empty passphrase (the committed "
                "local stack's salt): delete the stack file's `encryptionsalt` line, set your "
                f"passphrase and set them again (`pulumi config set --secret --path ... --stack "
                f"{stack}`)"
            )
        if not env.get(PASSPHRASE):
            env.pop(PASSPHRASE, None)  # the file's passphrase, not an empty one beside it
    elif local and PASSPHRASE not in env and PASSPHRASE_FILE not in env:
        env[PASSPHRASE] = ""  # nothing to protect: no prompt


def _logged_in(cli: Path, env: dict[str, str]) -> bool:
    done = subprocess.run(
        [str(cli), "whoami", "--non-interactive"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return done.returncode == 0


def prepare(stack: str, start: Path | None = None) -> StackRun:
    """Find the project, its program and the CLI, and the environment they run in."""
    project_dir = find_project_dir(start or Path.cwd())
    settings = _project_settings(project_dir)
    cli = find_cli(project_dir)
    env = dict(os.environ)
    # The CLI starts dynamic providers through `pulumi-resource-pulumi-python` (beside it),
    # which runs the `python` on PATH: it must be this environment's, which has the package.
    python_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([str(cli.parent), python_bin, env.get("PATH", "")])
    if sys.prefix != sys.base_prefix:
        env["PULUMI_RUNTIME_VIRTUALENV"] = sys.prefix
    env.setdefault("PULUMI_SKIP_UPDATE_CHECK", "true")
    if not env.get("PULUMI_BACKEND_URL") and not _logged_in(cli, env):
        env["PULUMI_BACKEND_URL"] = f"file://{project_dir / STATE_DIR}"
    backend = env.get("PULUMI_BACKEND_URL", "")
    if backend.startswith("file://"):
        # The CLI refuses a file backend whose directory does not exist yet.
        local_dir = Path(backend.removeprefix("file://")).expanduser()
        (local_dir if local_dir.is_absolute() else project_dir / local_dir).mkdir(
            parents=True, exist_ok=True
        )
    config = _stack_config(project_dir, settings, stack)
    secrets = sorted({str(path[0]) for path in secure_paths(config)})
    local = _stack_environment(settings, config) == LOCAL_ENVIRONMENT
    _passphrase(env, stack, secrets, local)
    return StackRun(
        project_dir=project_dir,
        project_name=str(settings["name"]),
        program_file=_program_file(project_dir, settings),
        cli=cli,
        env=env,
    )


def inline_program(program_file: Path) -> Callable[[], None]:
    """The project's program as the Automation API serves it: run as ``__main__`` with its
    directory first on ``sys.path``, as the language host runs it."""

    def program() -> None:
        directory = str(program_file.parent)
        sys.path.insert(0, directory)
        try:
            runpy.run_path(str(program_file), run_name="__main__")
        finally:
            if directory in sys.path:
                sys.path.remove(directory)

    return program


def _cli_children() -> list[int]:
    """The ``pulumi`` processes this process started (Linux's /proc; empty elsewhere)."""
    pids: list[int] = []
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids += [int(pid) for pid in children.read_text().split()]
        except OSError:
            continue
    found = []
    for pid in pids:
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if Path(argv0.decode(errors="replace")).name == "pulumi":
            found.append(pid)
    return found


def _terminal_sent_it() -> bool:
    """A Ctrl-C typed in the terminal reaches the whole foreground process group, the
    CLI included; a SIGINT sent to this process alone does not."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


@contextmanager
def _cancel_on_interrupt(say: Callable[[str], None]) -> Iterator[list[int]]:
    """SIGINT asks the engine to cancel instead of unwinding this process: the Automation
    API would otherwise stop serving the program while the CLI still needs it."""
    interrupts: list[int] = []

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        interrupts.append(signum)
        if len(interrupts) == 1:
            say(
                "Cancelling: the engine finishes the steps already running "
                "(Ctrl-C again stops it now)."
            )
        if not _terminal_sent_it():
            for pid in _cli_children():
                try:
                    os.kill(pid, signal.SIGINT)
                except ProcessLookupError:
                    continue

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)


def _exit_code(error: BaseException) -> int:
    """The CLI's exit status (1 where it is not a status the shell can pass on).

    The pinned SDK's ``CommandError`` keeps only the text of the ``CommandResult`` it was
    made from; the result itself is a local of the ``PulumiCommand.run`` frame that raised
    it, which the traceback holds. Read there, never parsed from the text
    (tests/test_stack_engine.py fails if a new SDK stops raising it that way)."""
    from pulumi.automation import CommandResult

    results = [frame.f_locals.get("result") for frame, _ in traceback.walk_tb(error.__traceback__)]
    codes = [result.code for result in results if isinstance(result, CommandResult)]
    code = codes[-1] if codes else 1
    return code if 0 < code < 256 else 1


def loaded_providers() -> list[tuple[str, str]]:
    """(name, version) of the resource plugin of each Pulumi provider package the program
    imported into this process (its ``pulumi-plugin.json``): the plugins the engine needs."""
    needed = []
    for package in sorted(m for m in sys.modules if m.startswith("pulumi_") and "." not in m):
        try:
            text = (importlib.resources.files(package) / "pulumi-plugin.json").read_text()
        except (OSError, TypeError, ModuleNotFoundError):
            continue
        meta = json.loads(text)
        if meta.get("resource") and meta.get("name") and meta.get("version"):
            needed.append((str(meta["name"]), str(meta["version"]).removeprefix("v")))
    return needed


def missing_plugin_message(
    needed: list[tuple[str, str]], installed: list[tuple[str, str]]
) -> str | None:
    """One clear line for the provider plugins in ``needed`` that are neither among the
    ``installed`` resource plugins (name, version) nor on PATH: after a failed command,
    those the engine could neither find nor download."""
    have = {(name, version.removeprefix("v")) for name, version in installed}
    missing = [
        (name, version)
        for name, version in needed
        if (name, version) not in have and not shutil.which(f"pulumi-resource-{name}")
    ]
    if not missing:
        return None
    plugins = ", ".join(f"`{name}` {version}" for name, version in missing)
    commands = " and ".join(
        f"`pulumi plugin install resource {name} {version}`" for name, version in missing
    )
    one = len(missing) == 1
    return (
        f"the stack needs the Pulumi provider plugin{'' if one else 's'} {plugins}, which "
        f"{'is' if one else 'are'} not installed and could not be downloaded. Install "
        f"{'it' if one else 'them'} with {commands} (offline: add `--file <the plugin's "
        "release archive>`), then run the command again. The local stack needs no provider "
        "plugin."
    )


def _installed_plugins(workspace: Any) -> list[tuple[str, str]]:
    """(name, version) of the resource plugins the CLI has installed."""
    from pulumi import automation as auto

    try:
        plugins = workspace.list_plugins()
    except auto.errors.CommandError:
        return []
    return [(p.name, p.version or "") for p in plugins if p.kind == "resource"]


def run(options: argparse.Namespace, start: Path | None = None) -> int:
    """Run one stack command through the engine (``options``: what the user asked of it,
    ``python -m vertex_training.stack --help``); the CLI's exit status."""
    from pulumi import automation as auto

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    setup = prepare(options.stack, start)
    os.environ.clear()
    os.environ.update(setup.env)
    os.chdir(setup.project_dir)

    def on_output(line: str) -> None:
        print(line, flush=True)

    command = auto.PulumiCommand(root=None)
    command.command = str(setup.cli)
    workspace = auto.LocalWorkspaceOptions(
        work_dir=str(setup.project_dir), pulumi_command=command, env_vars=setup.env
    )
    program = inline_program(setup.program_file)
    try:
        stack = auto.create_or_select_stack(
            stack_name=options.stack,
            project_name=setup.project_name,
            program=program,
            opts=workspace,
        )
    except auto.errors.CommandError as error:
        say(f"error: cannot select stack {options.stack!r}:{error}")
        return _exit_code(error)
    packs = {
        "policy_packs": list(options.policy_packs),
        "policy_pack_configs": list(options.policy_pack_configs),
    }
    changes = {"expect_no_changes": options.expect_no_changes}
    flags_of: dict[str, dict[str, Any]] = {
        "preview": {"diff": options.diff, "json": options.json, **changes, **packs},
        "up": {"diff": options.diff, **changes, **packs},
        "refresh": {"clear_pending_creates": options.clear_pending_creates, **changes},
        "destroy": {"exclude_protected": options.exclude_protected},
    }
    flags = flags_of[options.command]
    operation = getattr(stack, options.command)
    with _cancel_on_interrupt(say) as interrupts:
        try:
            # What the user did not ask for is left out (None), as the CLI's defaults.
            operation(
                **{k: v or None for k, v in flags.items()},
                on_output=on_output,
                on_error=say,
                color="auto",
            )
        except auto.errors.CommandError as error:
            code = _exit_code(error)
            needed = loaded_providers()  # the local stack's program loads none
            hint = needed and missing_plugin_message(needed, _installed_plugins(stack.workspace))
            if hint:
                say(f"error: {hint}")
            elif interrupts:
                say(f"{options.command} cancelled.")
            return EXIT_INTERRUPTED if interrupts and code == 1 else code
    return 0
