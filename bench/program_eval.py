"""Wall time to import and evaluate the dev stack's program under mocks.

Each measurement is a fresh ``python`` process (interpreter start, imports, config,
every resource registered against the mock monitor), the way ``pulumi up`` pays for
it. Printed against the 1.5 s target and against a baseline measured in the same run:
a fresh process that imports pulumi and evaluates an empty program under mocks.

Each stack row is followed by its floor: a fresh process that loads the same
pulumi_gcp and pulumi_docker_build modules the program loaded and registers the same
resources (type, name, parent, inputs) directly through the Pulumi SDK, with none of
this project's code. What a program costs above its floor is what this project's code
can still save.

    python bench/program_eval.py                 # dev stack and the example programs
    python bench/program_eval.py --jobs 10 100   # plus 10 and 100 declared jobs
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 1.5

# Runs in the child process: times the imports and the evaluation separately.
CHILD = """
import json, sys, time
started = time.perf_counter()
from tests.pulumi_mocks import run_program, run_pulumi, stack_file_config
from pathlib import Path
imported = time.perf_counter()
mode, stack_file, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if mode == "empty":
    run = run_pulumi(lambda: None, stack="dev", config={})
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
if len(sys.argv) > 4:  # the program's loaded provider modules and registrations, for FLOOR
    import types
    providers = [m for m, module in sys.modules.items() if type(module) is types.ModuleType
                 and m.split(".")[0] in ("pulumi_gcp", "pulumi_docker_build")]
    registered = [[r.type, r.name, r.urn, r.custom, r.parent, r.inputs]
                  for r in run.registrations]
    Path(sys.argv[4]).write_text(json.dumps({"modules": providers,
                                             "registrations": registered}))
print(json.dumps({"imports": imported - started, "evaluate": done - imported,
                  "resources": len(run.registrations)}))
"""

# Runs in the child process: the floor of a recorded program (see the module docstring).
FLOOR = """
import importlib, json, sys, time
started = time.perf_counter()
from tests.pulumi_mocks import run_pulumi
import pulumi
imported = time.perf_counter()
recorded = json.loads(open(sys.argv[1]).read())

def program():
    for name in recorded["modules"]:
        importlib.import_module(name)
    by_urn = {}
    for type_, name, urn, custom, parent, inputs in recorded["registrations"]:
        options = pulumi.ResourceOptions(parent=by_urn.get(parent))
        kind = pulumi.CustomResource if custom else pulumi.ComponentResource
        by_urn[urn] = kind(type_, name, inputs, options)

run = run_pulumi(program, stack="dev", config={})
done = time.perf_counter()
print(json.dumps({"imports": imported - started, "evaluate": done - imported,
                  "resources": len(run.registrations)}))
"""


def measure(
    mode: str, stack_file: Path, extra: dict[str, str], record: Path | None = None
) -> tuple[float, dict[str, float]]:
    """One fresh process: ``mode`` is empty, example, program or floor (of the program
    recorded in the file ``stack_file``); ``record`` names the file a program run writes
    its record to."""
    code, args = (
        (FLOOR, [str(stack_file)])
        if mode == "floor"
        else (CHILD, [mode, str(stack_file), json.dumps(extra), *([str(record)] if record else [])])
    )
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"program evaluation failed:\n{completed.stderr}")
    return wall, json.loads(completed.stdout.strip().splitlines()[-1])


def median_of(
    repeat: int, mode: str, stack_file: Path, extra: dict[str, str]
) -> tuple[float, dict[str, float]]:
    samples = [measure(mode, stack_file, extra) for _ in range(repeat)]
    walls = [wall for wall, _ in samples]
    middle = sorted(samples, key=lambda s: s[0])[len(samples) // 2]
    return statistics.median(walls), middle[1]


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
    rows: list[tuple[str, dict[str, str]]] = [("as declared", {})]
    for count in options.jobs:
        extra = jobs_config(count)
        if extra is None:
            print(f"{count} jobs: jobs not supported yet (no 'jobs' config key or no job declared)")
            continue
        rows.append((f"{count} jobs instead", extra))
    for label, extra in rows:
        wall, parts = median_of(options.repeat, "program", stack_file, extra)
        print(
            f"{options.stack} stack, {label}: {wall:.3f} s wall "
            f"(imports {parts['imports']:.3f} s, evaluate {parts['evaluate']:.3f} s, "
            f"{int(parts['resources'])} resources) | "
            f"{wall / TARGET_SECONDS:.2f}x the {TARGET_SECONDS} s target | "
            f"{wall / baseline:.2f}x baseline"
        )
        with tempfile.TemporaryDirectory() as directory:
            record = Path(directory) / "program.json"
            measure("program", stack_file, extra, record)
            floor, floor_parts = median_of(options.repeat, "floor", record, {})
        if floor_parts["resources"] != parts["resources"]:
            raise SystemExit(f"the floor registered {floor_parts['resources']:g} resources")
        print(
            f"  its floor (the same provider modules and registrations, no code of ours): "
            f"{floor:.3f} s = {floor / baseline:.2f}x baseline; "
            f"our code {wall - floor:.3f} s = {(wall - floor) / baseline:.2f}x baseline"
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
