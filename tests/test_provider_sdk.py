"""The generated SDKs (sdk/nodejs, sdk/go): what is committed is what the pinned generator
(tools/sdkgen) writes from the committed schema (tests/test_provider_schema.py holds that
schema to the provider's), and a mistake in a program is the compiler's: a misspelled
TypeScript key fails ``tsc`` and a wrong Go type fails ``go build``, each naming the
field. Each needs its toolchain (Go; Node with the TypeScript example's lock file): where
it is missing the test skips, saying why, except under ``CI=true``, where it fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SDK = REPO / "sdk"
BUILT = ("bin", "node_modules")
"""What building an SDK adds beside the generated files (ignored by git)."""


def _needs(tool: str) -> None:
    if shutil.which(tool) is None:
        reason = f"needs {tool}, which this machine does not have"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and this test {reason}")
        pytest.skip(reason)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not set(path.relative_to(root).parts) & set(BUILT)
    }


def _run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, **env},
    )


def test_the_committed_sdks_are_what_the_generator_writes(tmp_path: Path) -> None:
    _needs("go")
    done = _run(
        ["go", "run", ".", str(SDK / "schema.json"), str(tmp_path)],
        REPO / "tools" / "sdkgen",
        GOFLAGS="-mod=readonly",
    )
    assert done.returncode == 0, done.stderr
    for language in ("nodejs", "go"):
        committed, generated = _files(SDK / language), _files(tmp_path / language)
        stale = sorted(
            k for k in committed.keys() | generated.keys() if committed.get(k) != generated.get(k)
        )
        assert stale == [], f"sdk/{language} is stale (run make sdk): {stale}"


GO_PROGRAM = """package main

import (
\t"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
\tvt "vertex-training/sdk/go/vertextraining"
)

func main() {
\tpulumi.Run(func(ctx *pulumi.Context) error {
\t\t_, err := vt.NewCustomJob(ctx, "job", &vt.CustomJobArgs{
\t\t\tChief: vt.WorkerPoolArgs{
\t\t\t\tMachineType:  pulumi.String("n1-standard-4"),
\t\t\t\tReplicaCount: pulumi.String("two"),
\t\t\t},
\t\t})
\t\treturn err
\t})
}
"""


def test_a_wrong_go_type_fails_go_build_at_the_field(tmp_path: Path) -> None:
    _needs("go")
    example = REPO / "examples" / "go-local"
    go_mod = (example / "go.mod").read_text(encoding="utf-8")
    go_mod = go_mod.replace("../../sdk/go", str(SDK / "go")).replace(
        "vertex-training/examples/go-local", "wrong"
    )
    (tmp_path / "go.mod").write_text(go_mod, encoding="utf-8")
    shutil.copy2(example / "go.sum", tmp_path / "go.sum")
    (tmp_path / "main.go").write_text(GO_PROGRAM, encoding="utf-8")
    done = _run(["go", "build", "-o", os.devnull, "."], tmp_path, GOFLAGS="-mod=readonly")
    assert done.returncode != 0
    line = 1 + GO_PROGRAM.splitlines().index('\t\t\t\tReplicaCount: pulumi.String("two"),')
    # The field's line and the type it takes; the program is otherwise right (one error).
    (error,) = [e for e in done.stderr.splitlines() if re.match(r"\./main\.go:\d+:\d+: ", e)]
    assert error.startswith(f"./main.go:{line}:"), done.stderr
    assert "as pulumi.IntPtrInput value" in error, done.stderr


TS_PROGRAM = """import * as vt from "@vertex-training/sdk";

const platform = new vt.TrainingPlatform("platform", {
  environment: vt.TrainingPlatformEnvironment.Local,
});
new vt.CustomJob("job", {
  platform,
  chief: { machineType: "n1-standard-4", replicaCont: 2 },
});
"""


def test_a_misspelled_typescript_key_fails_tsc_naming_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _needs("npm")
    ts_node_modules = request.getfixturevalue("ts_node_modules")
    # The example's lock file installs TypeScript and @pulumi/pulumi; the SDK is linked by
    # path as in the example (../../sdk/nodejs), compiled as its ./run compiles it.
    example = tmp_path / "examples" / "ts-local"
    shutil.copytree(
        SDK / "nodejs", tmp_path / "sdk" / "nodejs", ignore=shutil.ignore_patterns(*BUILT)
    )
    shutil.copytree(
        REPO / "examples" / "ts-local",
        example,
        ignore=shutil.ignore_patterns(*BUILT, "build", ".pulumi-state"),
    )
    shutil.copytree(ts_node_modules, example / "node_modules", symlinks=True, copy_function=os.link)
    sdk = "node_modules/@vertex-training/sdk"
    done = _run(["node_modules/.bin/tsc", "-p", sdk, "--preserveSymlinks"], example)
    assert done.returncode == 0, done.stdout
    (example / "src" / "index.ts").write_text(TS_PROGRAM, encoding="utf-8")
    done = _run(["node_modules/.bin/tsc", "-p", ".", "--noEmit"], example)
    assert done.returncode != 0
    (error,) = [e for e in done.stdout.splitlines() if "error TS" in e]
    assert error.startswith("src/index.ts(8,"), done.stdout
    assert "'replicaCont' does not exist in type 'WorkerPoolArgs'" in error, done.stdout
    assert "Did you mean to write 'replicaCount'?" in error, done.stdout
