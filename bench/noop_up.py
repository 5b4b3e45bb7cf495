"""Wall time of a no-op ``up`` of the local stack through the real CLI, as a whole process,
against an empty Python project's no-op ``up`` through the same CLI and Automation API.

Both run in copies under one temporary directory, each with its own file backend and
``PULUMI_HOME``. The local stack's first ``up`` trains its jobs for real (minutes on a
loaded machine), once; then the two no-op ``up`` commands run alternately, ``--repeat``
times each, and the medians and their ratio are printed (target: at most 1.5x). Ours is
``python -m vertex_training.stack up --stack local --expect-no-changes`` (6 resources
unchanged: the program, then the dynamic provider process the CLI starts, which unpickles
our providers for their check and diff); the empty project is the same Automation API calls
(``create_or_select_stack``, ``up``) on a program that declares nothing. The local stack is
destroyed at the end (its endpoint's server stops), and anything of the temporary projects
still running is stopped.

    python bench/noop_up.py              # 5 of each
    python bench/noop_up.py --repeat 9
    python bench/noop_up.py --keep DIR   # keep the stacks in DIR for the next run (the
                                         # code is copied again, the first up not rerun)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.5
PROJECT_FILES = ("Pulumi.yaml", "__main__.py", "requirements.lock", ".dockerignore")
PROJECT_PACKAGES = ("vertex_training", "trainer", "predictor", "docker")
STACK = "local"

EMPTY_PROJECT = """\
name: empty
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
"""

# The empty project's whole process: the Automation API calls the stack runner makes.
EMPTY_UP = """
import os, sys
from pulumi import automation as auto
command = auto.PulumiCommand(root=None)
command.command = sys.argv[1]
workspace = auto.LocalWorkspaceOptions(
    work_dir=os.getcwd(), pulumi_command=command, env_vars=dict(os.environ))
stack = auto.create_or_select_stack(
    stack_name="local", project_name="empty", program=lambda: None, opts=workspace)
stack.up(expect_no_changes=sys.argv[2:] == ["--expect-no-changes"], on_output=print)
"""


def environment(root: Path, name: str) -> dict[str, str]:
    state = root / f"state-{name}"
    state.mkdir(exist_ok=True)
    cli_dir = ROOT / ".tools" / "bin"
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {  # bytecode cached, as a user's `up` has it (the first up compiles)
        **inherited,
        "PATH": f"{cli_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        f"{os.environ.get('PATH', '')}",
        "VERTEX_TRAINING_PULUMI_CLI": str(cli_dir / "pulumi"),
        "PULUMI_BACKEND_URL": f"file://{state}",
        "PULUMI_CONFIG_PASSPHRASE": "",
        "PULUMI_HOME": str(root / f"home-{name}"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "TF_USE_LEGACY_KERAS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def our_project(root: Path) -> Path:
    """A copy of this project's program and packages (the code copied afresh)."""
    project = root / "ours"
    (project / "stacks").mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, project / name)
    for package in PROJECT_PACKAGES:
        shutil.rmtree(project / package, ignore_errors=True)
        shutil.copytree(
            ROOT / package, project / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy2(ROOT / "stacks" / f"Pulumi.{STACK}.yaml", project / "stacks")
    if not (project / ".venv").exists():
        (project / ".venv").symlink_to(Path(sys.executable).parents[1])
    return project


def empty_project(root: Path) -> Path:
    project = root / "empty"
    project.mkdir(exist_ok=True)
    (project / "Pulumi.yaml").write_text(EMPTY_PROJECT, encoding="utf-8")
    (project / "__main__.py").write_text("", encoding="utf-8")
    if not (project / ".venv").exists():
        (project / ".venv").symlink_to(Path(sys.executable).parents[1])
    return project


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (this process's children: the CLI, the program, the providers)
    of ``command``, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[:4])} exited {done.returncode}:\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def stop_leftovers(root: Path) -> None:
    """Stop, by id, what was started for the temporary projects (their environment names
    the temporary root) and still runs."""
    marker = str(root).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (proc / "environ").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="no-op ups of each (median)")
    parser.add_argument("--keep", type=Path, help="keep the stacks here, for the next run")
    options = parser.parse_args()
    if not (ROOT / ".tools" / "bin" / "pulumi").is_file():
        raise SystemExit("no Pulumi CLI in .tools/bin: make pulumi-cli")
    with contextlib.ExitStack() as cleanup:
        if options.keep:
            options.keep.mkdir(parents=True, exist_ok=True)
            root = options.keep.resolve()
        else:
            root = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="noop-up-")))
        measure(root, options.repeat, keep=options.keep is not None)


def measure(root: Path, repeat: int, keep: bool) -> None:
    first = not (root / "ours").exists()
    ours, empty = our_project(root), empty_project(root)
    ours_env, empty_env = environment(root, "ours"), environment(root, "empty")
    cli = str(ROOT / ".tools" / "bin" / "pulumi")
    ours_up = [sys.executable, "-m", "vertex_training.stack", "up", "--stack", STACK]
    empty_up = [sys.executable, "-c", EMPTY_UP, cli]
    try:
        if first:
            started = time.perf_counter()
            timed(ours_up, ours, ours_env)
            timed(empty_up, empty, empty_env)
            print(
                f"first up of the local stack (trains its jobs): "
                f"{time.perf_counter() - started:.0f} s",
                flush=True,
            )
        else:  # the code was copied again: compile it once
            timed([*ours_up, "--expect-no-changes"], ours, ours_env)
        samples: dict[str, list[tuple[float, float]]] = {"ours": [], "empty": []}
        for _ in range(repeat):  # alternately, so both see the same load
            samples["ours"].append(timed([*ours_up, "--expect-no-changes"], ours, ours_env))
            samples["empty"].append(timed([*empty_up, "--expect-no-changes"], empty, empty_env))
        wall = {name: statistics.median(w for w, _ in runs) for name, runs in samples.items()}
        cpu = {name: statistics.median(c for _, c in runs) for name, runs in samples.items()}
        print(
            f"empty Python project, no-op up: {wall['empty']:.3f} s wall "
            f"({cpu['empty']:.3f} s CPU)\n"
            f"local stack, no-op up (6 resources unchanged): {wall['ours']:.3f} s wall "
            f"({cpu['ours']:.3f} s CPU)\n"
            f"ratio: {wall['ours'] / wall['empty']:.2f}x wall "
            f"(target at most {TARGET_RATIO}x), {cpu['ours'] / cpu['empty']:.2f}x CPU "
            f"(medians of {repeat}, run alternately)"
        )
    finally:
        if not keep:
            subprocess.run(
                [*ours_up[:3], "destroy", "--stack", STACK],
                cwd=ours,
                env=ours_env,
                capture_output=True,
                check=False,
            )
            stop_leftovers(root)


if __name__ == "__main__":
    main()
