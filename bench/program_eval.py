"""Wall time to import and evaluate the dev stack's program under mocks, against its floor.

Each measurement is a fresh ``python`` process (interpreter start, imports, config,
every resource registered against the mock monitor), the way ``pulumi up`` pays for
it. Printed against the 1.5 s target and against a baseline measured in the same run:
a fresh process that imports pulumi and evaluates an empty program under the mocks.

Each stack row is measured against its floor, run alternately with it: a fresh process
that imports only ``pulumi``, the mocks (which import nothing of ours) and the
pulumi_gcp / pulumi_docker_build packages the program's resource types come from (which
load their modules lazily, on first use), and registers the same resources (type, name,
parent, inputs) through ``pulumi.CustomResource`` / ``ComponentResource`` under the same
mocks. Everything else is ours: our imports, config reading, pulumi_gcp's typed classes
(the modules loaded when a class is first used), invokes, pickling, judging. The floor
refuses to count if any module of ours was loaded.

    python bench/program_eval.py                 # dev stack and the example programs
    python bench/program_eval.py --jobs 10 100   # plus 10 and 100 declared jobs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 1.5
OURS_TARGET_SECONDS = {0: 0.20, 100: 0.30}
"""Declared jobs (0: the stack as declared) -> what our code may cost above the floor."""

CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Every child may cache its modules' bytecode, as a user's ``pulumi up`` does: the first
run of each row compiles what it loads, the measured ones reuse it."""

# Runs in the child process: times the imports and the evaluation separately.
CHILD = """
import json, sys, time
started = time.perf_counter()
from tests.pulumi_mocks import run_program, run_pulumi, stack_file_config
from pathlib import Path
imported = time.perf_counter()
mode, stack_file, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if mode == "empty":
    run = run_pulumi(lambda: None, stack="dev", config={}, project="empty")
elif mode == "example":
    import runpy, yaml
    directory = Path(stack_file)
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())["name"]
    stacks = sorted(directory.glob("Pulumi.*.yaml"))
    run = run_pulumi(
        lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
        stack=stacks[0].name.split(".")[1] if stacks else "local",
        config=stack_file_config(stacks[0]) if stacks else {},
        project=project,
    )
else:
    config = stack_file_config(Path(stack_file)) | extra
    run = run_program(Path(stack_file).name.split(".")[1], config)
done = time.perf_counter()
if len(sys.argv) > 4:  # the program's registrations, for FLOOR
    import pulumi
    registered = [[r.type, r.name, r.urn, r.custom, r.parent, r.inputs]
                  for r in run.registrations]
    Path(sys.argv[4]).write_text(json.dumps({
        "project": pulumi.get_project(), "stack": pulumi.get_stack(),
        "registrations": registered}))
print(json.dumps({"imports": imported - started, "evaluate": done - imported,
                  "resources": len(run.registrations)}))
"""

# Runs in the child process: the floor of a recorded program (see the module docstring).
FLOOR = """
import importlib, json, sys, time
started = time.perf_counter()
import pulumi
from tests.pulumi_mocks import run_pulumi
imported = time.perf_counter()
recorded = json.loads(open(sys.argv[1]).read())
classes = sys.argv[2:] == ["classes"]
PACKAGES = {"gcp": "pulumi_gcp", "docker-build": "pulumi_docker_build"}

def program():
    by_urn = {}
    for type_, name, urn, custom, parent, inputs in recorded["registrations"]:
        package, module, class_name = type_.split(":")
        if package in PACKAGES:  # the package of its typed class (loaded with "classes")
            home = importlib.import_module(
                PACKAGES[package] + ("" if module == "index" else "." + module.split("/")[0]))
            if classes:
                getattr(home, class_name)
        options = pulumi.ResourceOptions(parent=by_urn.get(parent))
        kind = pulumi.CustomResource if custom else pulumi.ComponentResource
        by_urn[urn] = kind(type_, name, inputs, options)

run = run_pulumi(program, stack=recorded["stack"], config={}, project=recorded["project"])
done = time.perf_counter()
ours = sorted(m for m in sys.modules if m.split(".")[0] == "vertex_training")
print(json.dumps({"imports": imported - started, "evaluate": done - imported,
                  "resources": len(run.registrations), "ours": ours}))
"""


def measure(
    mode: str, stack_file: Path, extra: dict[str, str], record: Path | None = None
) -> tuple[float, dict]:
    """One fresh process: ``mode`` is empty, example, program, floor (of the program
    recorded in the file ``stack_file``) or classes (that floor, loading the typed classes
    too); ``record`` names the file a program run writes its record to."""
    code, args = (
        (FLOOR, [str(stack_file), *(["classes"] if mode == "classes" else [])])
        if mode in ("floor", "classes")
        else (CHILD, [mode, str(stack_file), json.dumps(extra), *([str(record)] if record else [])])
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"program evaluation failed:\n{completed.stderr}")
    parts = json.loads(completed.stdout.strip().splitlines()[-1])
    # CPU seconds (user + system) swing less than wall time on a loaded machine.
    parts["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, parts


def median_of(
    repeat: int, mode: str, stack_file: Path, extra: dict[str, str]
) -> tuple[float, dict]:
    measure(mode, stack_file, extra)  # compiles what it loads
    samples = [measure(mode, stack_file, extra) for _ in range(repeat)]
    return middle(samples)


def middle(samples: list[tuple[float, dict]]) -> tuple[float, dict]:
    """The median wall time, with the parts of the run nearest it."""
    walls = [wall for wall, _ in samples]
    return statistics.median(walls), sorted(samples, key=lambda s: s[0])[len(samples) // 2][1]


def jobs_config(count: int) -> dict[str, str] | None:
    """``count`` copies of the first job declared in a stack file, or None if unsupported."""
    sys.path.insert(0, str(ROOT))
    import yaml

    from vertex_training.stack.config import PROJECT_NAME, known_config_keys

    if "jobs" not in known_config_keys():
        return None
    for stack in ("dev", "local", "prod"):
        document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()) or {}
        declared = (document.get("config") or {}).get(f"{PROJECT_NAME}:jobs") or []
        if declared:
            template = declared[0]
            copies = []
            for index in range(count):
                job = dict(template) if isinstance(template, dict) else template
                for field in ("name", "id", "displayName", "display_name"):
                    # Declarations are keyed by name: each copy needs its own.
                    if isinstance(job, dict) and field in job:
                        job[field] = f"{job[field]}-{index}"
                copies.append(job)
            # The stack's models and endpoints name its jobs, which the copies replace.
            serving = {f"{PROJECT_NAME}:{key}": "[]" for key in ("models", "endpoints")}
            return {f"{PROJECT_NAME}:jobs": json.dumps(copies), **serving}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--jobs", type=int, nargs="*", default=[], help="declared job counts")
    options = parser.parse_args()
    stack_file = ROOT / "stacks" / f"Pulumi.{options.stack}.yaml"

    baseline, base_parts = median_of(options.repeat, "empty", stack_file, {})
    print(
        f"baseline (python + pulumi + empty program under mocks): {baseline:.3f} s "
        f"(imports {base_parts['imports']:.3f} s)"
    )
    rows: list[tuple[tuple[str, int], dict[str, str]]] = [(("as declared", 0), {})]
    for count in options.jobs:
        extra = jobs_config(count)
        if extra is None:
            print(f"{count} jobs: jobs not supported yet (no 'jobs' config key or no job declared)")
            continue
        rows.append(((f"{count} jobs instead", count), extra))
    for (label, count), extra in rows:
        with tempfile.TemporaryDirectory() as directory:
            record = Path(directory) / "program.json"
            measure("program", stack_file, extra, record)
            programs, floors, classes = [], [], []
            for _ in range(options.repeat):  # alternately, so all see the same load
                programs.append(measure("program", stack_file, extra))
                floors.append(measure("floor", record, {}))
                classes.append(measure("classes", record, {}))
        wall, parts = middle(programs)
        floor, floor_parts = middle(floors)
        with_classes, _ = middle(classes)
        if floor_parts["resources"] != parts["resources"]:
            raise SystemExit(f"the floor registered {floor_parts['resources']:g} resources")
        if floor_parts["ours"]:
            raise SystemExit(f"the floor loaded modules of ours: {floor_parts['ours']}")
        print(
            f"{options.stack} stack, {label}: {wall:.3f} s wall "
            f"(imports {parts['imports']:.3f} s, evaluate {parts['evaluate']:.3f} s, "
            f"{int(parts['resources'])} resources) | "
            f"{wall / TARGET_SECONDS:.2f}x the {TARGET_SECONDS} s target | "
            f"{wall / baseline:.2f}x baseline"
        )
        target = OURS_TARGET_SECONDS.get(count)
        print(
            f"  its floor (pulumi and the resources' provider packages, the same registrations, "
            f"no code of ours): {floor:.3f} s = {floor / baseline:.2f}x baseline; "
            f"our code +{wall - floor:.3f} s = {wall / floor:.2f}x the floor"
            + (f" (target at most +{target:.2f} s)" if target is not None else "")
        )
        print(
            f"  of which pulumi_gcp's typed classes (the floor loading them: {with_classes:.3f} s) "
            f"+{with_classes - floor:.3f} s, the rest +{wall - with_classes:.3f} s"
        )
        cpu, floor_cpu, classes_cpu = (
            statistics.median(p["cpu"] for _, p in runs) for runs in (programs, floors, classes)
        )
        print(
            f"  CPU time (user + system): {cpu:.3f} s, its floor {floor_cpu:.3f} s, with the "
            f"classes {classes_cpu:.3f} s: our code +{cpu - floor_cpu:.3f} s, of which the "
            f"classes +{classes_cpu - floor_cpu:.3f} s"
        )
    # The Python examples (the other languages' programs run under the engine).
    for example in sorted((ROOT / "examples").glob("*/__main__.py")):
        wall, parts = median_of(options.repeat, "example", example.parent, {})
        print(
            f"examples/{example.parent.name}: {wall:.3f} s wall "
            f"(imports {parts['imports']:.3f} s, evaluate {parts['evaluate']:.3f} s, "
            f"{int(parts['resources'])} resources) | "
            f"{wall / TARGET_SECONDS:.2f}x the {TARGET_SECONDS} s target | "
            f"{wall / baseline:.2f}x baseline"
        )


if __name__ == "__main__":
    main()
