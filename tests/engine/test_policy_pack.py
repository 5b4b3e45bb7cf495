"""The policy pack under the real engine, started through its executable launcher
(``policy/run-pack``, what ``make preview POLICY=1`` passes): the local stack passes, a
violating variant fails with the policy's own message, and the budget policy judges a real
Vertex job body as the engine hands it over (read-only proxies of lists and mappings, which
no mock produces) in a platform team's own project: another directory, no ``stacks/``, the
pack run from this repository with its budget in the pack config. Needs the pack's
environment (``make policy-venv``)."""

from __future__ import annotations

import copy
import json
import shutil
import textwrap

import pytest

from tests.engine.conftest import REPO_ROOT, ProjectMaker, PulumiProject, repo_stack_config

pytestmark = pytest.mark.slow

POLICY_VENV = REPO_ROOT / "policy" / "venv"
LAUNCHER = "policy/run-pack"


def _with_pack(project: PulumiProject) -> PulumiProject:
    shutil.copytree(
        REPO_ROOT / "policy",
        project.dir / "policy",
        ignore=shutil.ignore_patterns("__pycache__", "venv"),
    )
    (project.dir / "policy" / "venv").symlink_to(POLICY_VENV.resolve())
    return project


@pytest.fixture(scope="module")
def project(new_project: ProjectMaker) -> PulumiProject:
    """This repository's local stack with the pack beside it (previews only: each test
    sees the stack as created, whichever runs first)."""
    if not (POLICY_VENV / "bin" / "python").is_file():
        pytest.fail("no policy/venv for the pack: make policy-venv (make test builds it)")
    return _with_pack(new_project("policy", copy.deepcopy(repo_stack_config())))


def _preview(
    project: PulumiProject, config: dict[str, object] | None = None, pack: str = LAUNCHER
) -> tuple[int, str]:
    args = ["preview", "--policy-pack", pack]
    if config is not None:
        path = project.root / "policy-config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        args += ["--policy-pack-config", str(path)]
    done = project.stack(*args, check=False)
    return done.returncode, done.stdout + done.stderr


def test_local_stack_passes_the_pack(project: PulumiProject) -> None:
    code, output = _preview(project)

    assert code == 0, output[-4000:]
    assert "vertex-training@" in output  # the pack ran and reported
    # Before the fix, every job body the engine handed the pack was "unreadable".
    assert "failed to run policy" not in output, output[-4000:]
    assert "unreadable" not in output, output[-4000:]


def test_a_violating_variant_fails(project: PulumiProject) -> None:
    code, output = _preview(project, {"required-labels": {"enforcementLevel": "mandatory"}})

    assert code != 0
    assert "missing label(s) team, cost-center" in output


# A team's own program: a job with no platform, on the Vertex backend. The engine previews
# it (check and diff need no cloud), so the pack sees a Vertex body exactly as a dev or
# prod stack's.
TEAM_PROJECT = "name: team-training\nruntime: python\n"
VERTEX_JOB_PROGRAM = textwrap.dedent(
    """
    import vertex_training as vt

    vt.CustomJob(
        "t4-train",
        vt.CustomJobArgs(
            project="my-project",
            region="us-central1",
            base_output_directory="gs://my-bucket/jobs/t4-train",
            service_account="trainer@my-project.iam.gserviceaccount.com",
            chief=vt.WorkerPool(
                machine_type="n1-standard-8",
                accelerator=vt.Accelerator("NVIDIA_TESLA_T4", 1),
                image="us-docker.pkg.dev/my-project/trainers/trainer@sha256:" + "a" * 64,
                args=["--epochs", "5"],
            ),
            labels={"team": "ml", "cost-center": "research", "environment": "dev"},
            scheduling=vt.Scheduling(timeout_seconds=4 * 3600),
        ),
    )
    """
)


@pytest.fixture(scope="module")
def team_project(new_project: ProjectMaker) -> PulumiProject:
    if not (POLICY_VENV / "bin" / "python").is_file():
        pytest.fail("no policy/venv for the pack: make policy-venv (make test builds it)")
    program = {"Pulumi.yaml": TEAM_PROJECT, "__main__.py": VERTEX_JOB_PROGRAM}
    return new_project("team-policy", {}, program=program)


def test_budget_policy_judges_a_team_projects_vertex_job_body(
    team_project: PulumiProject,
) -> None:
    assert not (team_project.dir / "stacks").exists()
    pack = str(REPO_ROOT / LAUNCHER)
    within, output = _preview(team_project, {"budget": {"budget": 10_000}}, pack)
    assert within == 0, output[-4000:]
    assert "vertex-training@" in output  # the pack ran and reported
    assert "unreadable" not in output, output[-4000:]

    # The environment comes from the job's own label: the mandatory level makes it fail.
    code, output = _preview(
        team_project, {"budget": {"enforcementLevel": "mandatory", "budget": 1}}, pack
    )

    assert code != 0, output[-4000:]
    assert "is over the budget of $1.00" in output, output[-4000:]
    assert "unreadable" not in output
    assert "Traceback" not in output
