"""The platform, its jobs, the best trial's model and its endpoint from YAML, TypeScript
and Go (the generated SDKs, sdk/), through the real CLI and the component provider
(plugins/vertex-training): each example's ``./run`` runs the local stack's two jobs,
registers the best trial's model and serves it (a predict through ``predictUrl``
answers), a second ``up`` changes nothing, ``destroy`` leaves no job, process or port; a
wrong argument is one clear message in every language. Each example runs in a copy of
the project (the provider, the stand-in trainer and the example), with a temporary file
backend; ``./run`` installs from the example's own lock files. What is tested is the
plumbing of each language, not training: the copy's jobs run the stand-in trainer
(standin_trainer.py), which leaves the trainer's exported SavedModel where a trained model
would be, and its study is one round of two trials (``SMALLER``); the real trainer trains
through the engine in test_lifecycle.py and test_serving.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import REPO_ROOT, processes_with, run_command, use_standin_trainer
from tests.engine.standin_trainer import MODEL_ENV
from tests.engine.test_serving import PIXEL, port_of, predict

pytestmark = pytest.mark.slow

LANGUAGES = ("yaml-local", "ts-local", "go-local")
TOOLS = {"ts-local": "npm", "go-local": "go"}
BUILT = ("node_modules", "build", ".bin", ".pulumi-state", ".local-vertex")
MARKER = "VERTEX_TRAINING_LANGUAGE_TEST"
PROGRAMS = {"yaml-local": "Pulumi.yaml", "ts-local": "src/index.ts", "go-local": "main.go"}


def _smaller(trials: str, poll: str) -> tuple[tuple[str, str], ...]:
    """(text, its replacement) in a program that writes the study's trial count as
    ``trials`` and a poll interval as ``poll`` (%-formats): the same two jobs (a chief and a
    worker in one MWMS cluster; a study of parallel trials and its best trial), but one
    round of two trials, each job looked at every second."""
    return ((trials % 6, trials % 2), (poll % 5, poll % 1))


TOKEN = "tok-5ecret-lang-7Q"
SECRET = {
    "yaml-local": (
        (
            "      chief:\n        machineType: n1-standard-8\n",
            "      chief:\n        env:\n          API_TOKEN:\n"
            f"            fn::secret: {TOKEN}\n        machineType: n1-standard-8\n",
        ),
    ),
    "ts-local": (
        (
            'import * as vt from "@vertex-training/sdk";',
            'import * as vt from "@vertex-training/sdk";\n'
            'import * as pulumi from "@pulumi/pulumi";',
        ),
        (
            '      machineType: "n1-standard-8",\n      args: cassavaArgs,',
            f'      machineType: "n1-standard-8",\n      args: cassavaArgs,\n'
            f'      env: {{ API_TOKEN: pulumi.secret("{TOKEN}") }},',
        ),
    ),
    "go-local": (
        (
            'Chief:       vt.WorkerPoolArgs{MachineType: pulumi.String("n1-standard-8"), '
            "Args: cassavaArgs},",
            'Chief: vt.WorkerPoolArgs{MachineType: pulumi.String("n1-standard-8"), '
            'Args: cassavaArgs, Env: map[string]pulumi.StringInput{"API_TOKEN": '
            f'pulumi.ToSecret(pulumi.String("{TOKEN}")).(pulumi.StringOutput)}}}},',
        ),
    ),
}
"""(text, its replacement): the chief of cassava-mwms takes an env value given as a secret
in the language's own way (``fn::secret``, ``pulumi.secret``, ``pulumi.ToSecret``)."""


SMALLER = {
    "yaml-local": _smaller("maxTrialCount: %d", "pollIntervalSeconds: %d"),
    "ts-local": _smaller("maxTrialCount: %d", "pollIntervalSeconds: %d"),
    "go-local": _smaller("pulumi.Int(%d)", "PollIntervalSeconds: ptr(%d.0)"),
}


class Example:
    """A copy of the project with one example, run through its ``./run``."""

    def __init__(
        self, root: Path, name: str, bin_dir: Path, node_modules: Path | None = None
    ) -> None:
        self.root = root
        for part in ("vertex_training", "predictor", "plugins", "sdk"):
            shutil.copytree(
                REPO_ROOT / part,
                root / part,
                ignore=shutil.ignore_patterns("__pycache__", "node_modules", "bin"),
            )
        use_standin_trainer(root)
        shutil.copy2(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
        (root / ".venv").symlink_to((REPO_ROOT / ".venv").resolve())
        (root / ".tools").mkdir()
        (root / ".tools" / "bin").symlink_to(bin_dir)
        self.dir = root / "examples" / name
        shutil.copytree(
            REPO_ROOT / "examples" / name, self.dir, ignore=shutil.ignore_patterns(*BUILT)
        )
        if node_modules is not None:  # installed from this lock file: ./run skips `npm ci`
            shutil.copytree(
                node_modules, self.dir / "node_modules", symlinks=True, copy_function=os.link
            )
        self.env = {
            **os.environ,
            "PULUMI_BACKEND_URL": f"file://{root / 'state'}",
            MARKER: str(root),
        }

    def train_smaller(self, name: str) -> None:
        """Rewrite the copy's program with ``SMALLER[name]`` and ``SECRET[name]``; each
        text must be there."""
        program = self.dir / PROGRAMS[name]
        text = program.read_text(encoding="utf-8")
        for old, new in (*SMALLER[name], *SECRET[name]):
            assert old in text, f"{program.name} no longer says {old!r}"
            text = text.replace(old, new)
        program.write_text(text, encoding="utf-8")

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_command([str(self.dir / "run"), *args], cwd=self.dir, env=self.env, check=check)

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.run("outputs").stdout)

    def pulumi(self, *args: str) -> Any:
        """``pulumi <args> --stack local`` here, its JSON output."""
        done = subprocess.run(
            ["pulumi", *args, "--stack", "local"],
            cwd=self.dir,
            env={**self.env, "PATH": f"{self.root / '.tools' / 'bin'}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    def last_changes(self) -> dict[str, int]:
        return self.pulumi("stack", "history", "--json")[0].get("resourceChanges", {})

    def resources(self) -> list[str]:
        return [
            r["type"] for r in self.pulumi("stack", "export")["deployment"].get("resources", [])
        ]

    def processes(self) -> list[str]:
        return processes_with(f"{MARKER}={self.root}".encode())


def _example(request: pytest.FixtureRequest, tmp_path: Path, name: str, bin_dir: Path) -> Example:
    tool = TOOLS.get(name)
    if tool and shutil.which(tool) is None:
        pytest.skip(f"{name} needs {tool}, which this machine does not have")
    if name == "yaml-local" and not (bin_dir / "pulumi-language-yaml").is_file():
        pytest.skip("no YAML language host: make pulumi-cli builds it (tools/pulumi-yaml)")
    packages = request.getfixturevalue("ts_node_modules") if name == "ts-local" else None
    return Example(tmp_path, name, bin_dir, packages)


@pytest.mark.parametrize("name", LANGUAGES)
def test_up_runs_both_jobs_and_serves_again_changes_nothing_destroy_leaves_nothing(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    name: str,
    pulumi_bin_dir: Path,
    model_dir: Path,
) -> None:
    example = _example(request, tmp_path, name, pulumi_bin_dir)
    example.env[MODEL_ENV] = str(model_dir)  # what the best trial leaves, and is served
    example.train_smaller(name)
    done = example.run("up")
    # The secret reaches the job (and the warning says so), never the state or the output.
    said = done.stdout + done.stderr
    assert TOKEN not in said
    assert "chief.env: holds a secret" in said, said[-4000:]
    state = [p for p in (example.root / "state").rglob("*") if p.is_file()]
    assert state and not [p for p in state if TOKEN in p.read_text(errors="replace")]
    example.env["PULUMI_CONFIG_PASSPHRASE"] = ""  # ./run's: the example's stack holds none
    assert TOKEN in json.dumps(example.pulumi("stack", "export", "--show-secrets"))
    jobs = example.outputs()["jobs"]
    assert {n: j["state"] for n, j in jobs.items()} == {
        "cassava-mwms": "SUCCEEDED",
        "horses-humans-tuning": "SUCCEEDED",
    }
    assert jobs["horses-humans-tuning"]["bestTrial"]["state"] == "SUCCEEDED"
    url = example.outputs()["endpoints"]["horses-humans"]["predictUrl"]
    assert len(predict(url, [PIXEL])["predictions"]) == 1

    example.run("up")
    assert set(example.last_changes()) == {"same"}, example.last_changes()
    assert example.outputs()["jobs"] == jobs  # the same jobs: nothing submitted again

    example.run("destroy")
    assert example.resources() == []
    assert example.outputs() == {}
    assert example.processes() == []
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port_of(url))) != 0  # no server on its port


def _wrong_accelerator_count(job: dict[str, Any]) -> None:
    job["chief"]["accelerator"] = {"type": "NVIDIA_TESLA_V100", "count": 3}


def _python_message() -> str:
    """What the Python stack config reader says about the same mistake (a pool's, refused
    where the reader builds the pool)."""
    from vertex_training.jobs.declarations import read_job

    entry = {"name": "cassava-mwms", "chief": {"machineType": "n1-standard-8"}}
    _wrong_accelerator_count(entry)
    declaration, problems = read_job(entry, "jobs[0]")
    assert declaration is None
    (problem,) = problems
    return problem.message


@pytest.mark.parametrize("name", ["yaml-local", "ts-local"])
def test_a_wrong_argument_is_one_clear_message(
    request: pytest.FixtureRequest, tmp_path: Path, name: str, pulumi_bin_dir: Path
) -> None:
    example = _example(request, tmp_path, name, pulumi_bin_dir)
    if name == "yaml-local":
        import yaml

        program = yaml.safe_load((example.dir / "Pulumi.yaml").read_text(encoding="utf-8"))
        _wrong_accelerator_count(program["resources"]["cassava-mwms"]["properties"])
        (example.dir / "Pulumi.yaml").write_text(yaml.safe_dump(program), encoding="utf-8")
        done = example.run("preview", check=False)
    else:
        done = example.run("preview", "--bad-config", check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "invalid args for CustomJob 'cassava-mwms'" in said
    # The CLI's line for the property: its path, Python's own message, and the fix; once.
    (line,) = [line for line in said.splitlines() if _python_message() in line]
    assert "property chief.accelerator.count with value 3 has a problem:" in line
    assert "Fix: set chief.accelerator.count in the args of CustomJob 'cassava-mwms'" in line
    assert "Traceback" not in said
    assert example.processes() == []


def test_a_job_on_a_persistent_resources_id_is_held_to_its_pools(
    request: pytest.FixtureRequest, tmp_path: Path, pulumi_bin_dir: Path
) -> None:
    """YAML places a job on a PersistentResource by its ``resourceId`` output: the provider,
    which constructed the resource, refuses at preview a job whose pools fit none of its
    pools, with Python's words, before anything is created."""
    import yaml

    example = _example(request, tmp_path, "yaml-local", pulumi_bin_dir)
    program = yaml.safe_load((example.dir / "Pulumi.yaml").read_text(encoding="utf-8"))
    program["resources"]["warm"] = {
        "type": "vertex-training:PersistentResource",
        "properties": {"platform": "${platform}", "pools": [{"machineType": "n1-standard-4"}]},
    }
    job = program["resources"]["cassava-mwms"]["properties"]
    job["persistentResourceId"] = "${warm.resourceId}"
    (example.dir / "Pulumi.yaml").write_text(yaml.safe_dump(program), encoding="utf-8")
    done = example.run("preview", check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "invalid args for CustomJob 'cassava-mwms'" in said
    (line,) = [line for line in said.splitlines() if "property chief " in line]
    assert (
        "n1-standard-8, pd-ssd 100 GB matches no pool of persistent resource 'warm' "
        "(pools[0]: n1-standard-4, pd-ssd 100 GB)" in line
    )
    assert "Traceback" not in said
    assert example.processes() == []
