"""The real Pulumi CLI and engine on a copy of this project, with a temporary file backend.

Every stack command here goes through ``python -m vertex_training.stack`` (what ``make
up`` runs): the real engine, the program served inline through the Automation API. The
engine serializes inputs and unknowns, calls the dynamic provider's
``check``/``diff``/``create``/``update``/``delete`` and starts the provider process the way it
does for a user; ``pulumi stack ...`` subcommands run the CLI directly. The CLI is the one
``make pulumi-cli`` builds (the release pinned in tools/pulumi/go.mod); where none can be
had the tests skip and say why, except under ``CI=true``, where they fail.
``VERTEX_TRAINING_PULUMI_CLI=/path/to/pulumi`` runs them with another CLI (its plugins
beside it), e.g. to try a new release before the pin moves.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.standin_trainer import HOLD_ENV
from vertex_training.local.server import IDLE_EXIT_SECONDS

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO_ROOT / ".tools" / "bin"
STACK = "local"
CLI_OVERRIDE_ENV = "VERTEX_TRAINING_PULUMI_CLI"
# What a fresh clone's program needs: the project file, the program and what it imports.
PROJECT_FILES = ("Pulumi.yaml", "__main__.py", "requirements.lock", ".dockerignore")
PROJECT_PACKAGES = ("vertex_training", "trainer", "predictor", "docker")
COMMAND_TIMEOUT_S = 900
STANDIN_TRAINER = Path(__file__).with_name("standin_trainer.py")


def pinned_cli_version() -> str:
    """The CLI release pinned in tools/pulumi/go.mod (``v3.x.y``)."""
    go_mod = (REPO_ROOT / "tools" / "pulumi" / "go.mod").read_text(encoding="utf-8")
    match = re.search(r"^\s*github\.com/pulumi/pulumi/pkg/v3 (v\S+)", go_mod, re.MULTILINE)
    assert match, "tools/pulumi/go.mod pins no pkg/v3 version"
    return match.group(1)


def _cli_version(cli: Path | str | None) -> str | None:
    if cli is None or not Path(cli).is_file():
        return None
    done = subprocess.run([str(cli), "version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _find_cli(version: str) -> Path | None:
    for candidate in (TOOLS_BIN / "pulumi", shutil.which("pulumi")):
        if candidate and _cli_version(candidate) == version:
            return Path(candidate)
    return None


def _no_cli(reason: str) -> None:
    # CI promises the engine tests: a CI run without them is a failure, not a skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pulumi_bin_dir() -> Path:
    """The directory of the CLI (the dynamic provider launcher is beside it)."""
    override = os.environ.get(CLI_OVERRIDE_ENV)
    if override:
        assert _cli_version(override), f"{CLI_OVERRIDE_ENV}={override} is not a working CLI"
        return Path(override).resolve().parent
    version = pinned_cli_version()
    cli = _find_cli(version)
    if cli is None and shutil.which("go"):
        # Quick when `make test` built it already; where it failed, the reason comes back.
        build = subprocess.run(
            ["make", "--no-print-directory", "pulumi-cli"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        cli = _find_cli(version)
        if cli is None:
            _no_cli(
                f"no Pulumi CLI {version}: building it from its Go modules failed "
                f"(make pulumi-cli):\n{(build.stdout + build.stderr)[-2000:]}"
            )
    if cli is None:
        _no_cli(f"no Pulumi CLI {version} on PATH and no Go to build one (make pulumi-cli)")
    assert cli is not None
    return cli.resolve().parent


def run_command(
    command: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    check: bool = True,
    timeout: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end, its output captured; with ``check``, an exit other than 0
    fails the test with the end of that output."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        pytest.fail(
            f"{Path(command[0]).name} {' '.join(command[1:4])} exited {done.returncode}:\n"
            f"{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
        )
    return done


class PulumiProject:
    """A copy of this project (or of another project directory, ``source``, e.g. an
    example) with one stack in its own file backend; with ``standin_trainer``, the copy's
    jobs run standin_trainer.py where they would train, and hold while ``trainer_hold``
    exists."""

    def __init__(
        self,
        root: Path,
        bin_dir: Path,
        stack_config: Mapping[str, Any],
        source: Path | None = None,
        *,
        standin_trainer: bool = False,
    ) -> None:
        self.root = root
        self.dir = root / "project"
        if source is None:
            self.dir.mkdir(parents=True)
            for name in PROJECT_FILES:
                shutil.copy2(REPO_ROOT / name, self.dir / name)
            for package in PROJECT_PACKAGES:
                shutil.copytree(
                    REPO_ROOT / package,
                    self.dir / package,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
            # The project's virtualenv, as `make install` leaves it in a clone.
            (self.dir / ".venv").symlink_to((REPO_ROOT / ".venv").resolve())
            if standin_trainer:
                use_standin_trainer(self.dir)
        else:
            assert not standin_trainer, "an example runs this checkout's trainer"
            shutil.copytree(
                source, self.dir, ignore=shutil.ignore_patterns("__pycache__", "venv", ".local-*")
            )
        settings = yaml.safe_load((self.dir / "Pulumi.yaml").read_text(encoding="utf-8"))
        self.stack_config_dir = self.dir / str(settings.get("stackConfigDir") or ".")
        self.stack_config_dir.mkdir(exist_ok=True)
        if stack_config:
            self.write_config(stack_config)
        state = root / "state"
        state.mkdir()
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            CLI_OVERRIDE_ENV: str(bin_dir / "pulumi"),
            "PULUMI_BACKEND_URL": f"file://{state}",
            "PULUMI_CONFIG_PASSPHRASE": "",
            "PULUMI_HOME": str(root / "pulumi-home"),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "TF_USE_LEGACY_KERAS": "1",
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
        if source is not None:
            # An example depends on this package by path (its requirements.txt: ../..).
            self.env["PYTHONPATH"] = str(REPO_ROOT)
        self.env.pop("PULUMI_ACCESS_TOKEN", None)
        self.trainer_hold = root / "trainer-hold"
        if standin_trainer:
            self.env[HOLD_ENV] = str(self.trainer_hold)
        self.pulumi("stack", "init")

    @property
    def config_file(self) -> Path:
        return self.stack_config_dir / f"Pulumi.{STACK}.yaml"

    @property
    def local_root(self) -> Path:
        """The local backend's directory: ``localRoot``'s default, inside this copy."""
        return self.dir / ".local-vertex"

    def write_config(self, stack_config: Mapping[str, Any]) -> None:
        # Keep what `stack init` added (the passphrase salt) and replace the config.
        existing: dict[str, Any] = {}
        if self.config_file.is_file():
            existing = yaml.safe_load(self.config_file.read_text(encoding="utf-8")) or {}
        existing["config"] = dict(stack_config["config"])
        self.config_file.write_text(yaml.safe_dump(existing, sort_keys=False), encoding="utf-8")

    def command(self, *args: str) -> list[str]:
        """A ``pulumi`` subcommand that runs no program (stack output, export, cancel...)."""
        return ["pulumi", *args, "--stack", STACK, "--non-interactive", "--color", "never"]

    def stack_command(self, *args: str) -> list[str]:
        """A stack command through the engine, as ``make preview|up|refresh|destroy``."""
        return [sys.executable, "-m", "vertex_training.stack", *args, "--stack", STACK]

    def _run(
        self, command: list[str], check: bool, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        return run_command(command, cwd=self.dir, env=self.env, check=check, timeout=timeout)

    def pulumi(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return self._run(self.command(*args), check, timeout)

    def stack(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return self._run(self.stack_command(*args), check, timeout)

    def refused(self, *args: str) -> str:
        """The output of a stack command that must fail cleanly: it exits non-zero, with no
        traceback."""
        done = self.stack(*args, check=False)
        output = done.stdout + done.stderr
        assert done.returncode != 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
        return output

    def up(self) -> subprocess.CompletedProcess[str]:
        return self.stack("up")

    def preview_steps(self, *extra: str) -> list[dict[str, Any]]:
        """The dynamic resources' steps of ``preview --json``."""
        done = self.stack("preview", "--json", *extra)
        steps = json.loads(done.stdout).get("steps", [])
        return [s for s in steps if ":dynamic/" in s["urn"]]

    def output(self, name: str) -> Any:
        return json.loads(self.pulumi("stack", "output", name, "--json").stdout)

    def export(self) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "export").stdout)

    def last_update(self) -> dict[str, Any]:
        """The newest entry of ``pulumi stack history``: its kind and resource changes."""
        history = json.loads(self.pulumi("stack", "history", "--json").stdout)
        return history[0]

    def job_urns(self) -> dict[str, str]:
        """Job resource URN by declared job name (the URN ends in ``::<name>``)."""
        resources = self.export()["deployment"].get("resources", [])
        return {
            r["urn"].rsplit("::", 1)[-1]: r["urn"]
            for r in resources
            if ":dynamic/vertex:" in r["type"]
        }

    def processes(self) -> list[str]:
        """Processes started for this project (the CLI, plugins, job supervisors and
        replicas all inherit its environment, which names the temporary root)."""
        return processes_with(str(self.root).encode())

    def kill_session(self, session_id: int) -> None:
        """SIGKILL every process of one session, as when the terminal or machine that ran
        a command goes away. The engine starts its plugins (language host, providers) in
        process groups of their own, so killing the CLI's group alone would leave them.
        Local jobs run in sessions of their own and survive, as a Vertex job would."""
        while members := _session_members(session_id):
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)

    def kill_leftovers(self) -> None:
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if str(self.root).encode() in (proc / "environ").read_bytes():
                    os.kill(int(proc.name), signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue


LOCAL_VERTEX = "vertex_training.local serve"
"""The command line of a local Vertex."""


def processes_with(marker: bytes) -> list[str]:
    """The command lines of this machine's processes (but this one) whose environment
    holds ``marker``. A local Vertex that holds nothing any more exits by itself, soon:
    when it is all that is left, it is given that time."""
    deadline = time.monotonic() + IDLE_EXIT_SECONDS + 15
    while (found := _processes_with(marker)) and time.monotonic() < deadline:
        if not all(LOCAL_VERTEX in p for p in found):
            break
        time.sleep(0.2)
    return found


def _processes_with(marker: bytes) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if marker in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def _session_members(session_id: int) -> list[int]:
    members = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == session_id and fields[0] != "Z":
            members.append(int(proc.name))
    return members


def repo_stack_config() -> dict[str, Any]:
    """The repository's ``local`` stack file, as it is."""
    path = REPO_ROOT / "stacks" / f"Pulumi.{STACK}.yaml"
    config: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return config


def wait_for(condition: Any, timeout_s: float, what: str, interval_s: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval_s)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def use_standin_trainer(root: Path) -> None:
    """The ``trainer`` package of a copy (``root``) becomes standin_trainer.py alone."""
    trainer = root / "trainer"
    shutil.rmtree(trainer, ignore_errors=True)
    trainer.mkdir()
    (trainer / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy2(STANDIN_TRAINER, trainer / "task.py")


ProjectMaker = Callable[..., PulumiProject]


@pytest.fixture(scope="module")
def new_project(
    tmp_path_factory: pytest.TempPathFactory, pulumi_bin_dir: Path
) -> Iterator[ProjectMaker]:
    """Makes this module's projects: ``new_project(name, config)`` is a copy of this project
    with ``config`` as its stack file; ``program={file: text}`` makes a project of those
    files instead, ``source=`` copies that directory (an example); ``standin_trainer`` as
    in PulumiProject. When the module ends, whatever a copy left running goes, so that one
    failure does not hold the cores the next tests need."""
    made: list[PulumiProject] = []

    def make(
        name: str,
        config: Mapping[str, Any],
        *,
        source: Path | None = None,
        program: Mapping[str, str] | None = None,
        standin_trainer: bool = False,
    ) -> PulumiProject:
        if program is not None:
            source = tmp_path_factory.mktemp(f"{name}-source")
            for file, text in program.items():
                (source / file).write_text(text, encoding="utf-8")
        made.append(
            PulumiProject(
                tmp_path_factory.mktemp(name),
                pulumi_bin_dir,
                config,
                source,
                standin_trainer=standin_trainer,
            )
        )
        return made[-1]

    yield make
    for project in made:
        if project.processes():
            project.pulumi("cancel", "--yes", check=False)
            project.stack("destroy", check=False)
            project.kill_leftovers()
