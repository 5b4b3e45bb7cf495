"""TensorBoard from the trainer: per-epoch scalars read back from the event files, per
trial directories, and a profiler trace of a few steps (``--profile-steps``), refused
before training when the range does not fit in an epoch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.test_config import _exit_message, resolved
from tests.trainer.test_training import TINY, Run, run, trainer_env
from trainer.config import ProfileSteps, ProfileStepsError, parse_config

HORSES = ["--workload", "horses_or_humans"]
# 64 generated examples in batches of 16: 4 steps per epoch.
FOUR_STEPS = [*TINY, "--synthetic-examples", "64"]


@pytest.mark.parametrize(
    ("value", "expected"), [("2,3", ProfileSteps(2, 3)), ("5", ProfileSteps(5, 5))]
)
def test_profile_steps_parse(value: str, expected: ProfileSteps) -> None:
    config = parse_config([*HORSES, "--job-dir", "/j", "--profile-steps", value], environ={})
    assert config.profile_steps == expected


@pytest.mark.parametrize("value", ["0,2", "3,2", "a,b", "1,2,3", "-1"])
def test_malformed_profile_steps_name_the_flag(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    message = _exit_message([*HORSES, "--job-dir", "/j", f"--profile-steps={value}"], capsys)
    assert "--profile-steps" in message
    assert "START,END" in message


def test_profile_steps_beyond_steps_per_epoch_fail_at_parse_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*HORSES, "--job-dir", "/j", "--steps-per-epoch", "4", "--profile-steps", "3,6"]
    message = _exit_message(argv, capsys)
    assert "--profile-steps 3,6: an epoch has 4 steps here; valid: 1 <= START <= END <= 4" in (
        message
    )


def test_profile_steps_need_a_tensorboard_dir(capsys: pytest.CaptureFixture[str]) -> None:
    message = _exit_message([*HORSES, "--model-dir", "/m", "--profile-steps", "1,2"], capsys)
    assert "--profile-steps writes into the TensorBoard logs" in message


def test_check_within() -> None:
    ProfileSteps(1, 4).check_within(4)
    with pytest.raises(ProfileStepsError, match="valid: 1 <= START <= END <= 3"):
        ProfileSteps(2, 4).check_within(3)


def test_trials_sharing_flags_get_their_own_tensorboard_dir() -> None:
    paths = resolved({"CLOUD_ML_TRIAL_ID": "7"}, job_dir="/j")
    assert paths.tensorboard_dir == "/j/logs/trial-7"
    # Vertex's (and the local backend's) AIP_TENSORBOARD_LOG_DIR is per trial already.
    vertex = resolved(
        {"CLOUD_ML_TRIAL_ID": "7", "AIP_TENSORBOARD_LOG_DIR": "gs://b/o/7/logs/"}, job_dir="/j"
    )
    assert vertex.tensorboard_dir == "gs://b/o/7/logs/"


def _scalars(run_dir: Path) -> dict[str, dict[int, float]]:
    """tag -> {step: value} from a run directory's event files."""
    import tensorflow as tf

    found: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                number = (
                    float(tf.make_ndarray(value.tensor))
                    if value.HasField("tensor")
                    else (value.simple_value)
                )
                found.setdefault(value.tag, {})[event.step] = number
    return found


@pytest.mark.slow
def test_scalars_every_epoch_and_a_trace_of_the_asked_steps(horses_run: tuple[Path, Run]) -> None:
    base, result = horses_run
    logs = base / "logs"
    train, validation = _scalars(logs / "train"), _scalars(logs / "validation")
    assert set(train["epoch_loss"]) == {1, 2, 3}
    assert set(validation["epoch_accuracy"]) == {1, 2, 3}
    assert all(0.0 <= v <= 1.0 for v in validation["epoch_accuracy"].values())
    traces = list((logs / "train" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
    assert "profiler: tracing steps 2-3" in result.log


@pytest.mark.slow
def test_profile_steps_past_the_epoch_are_refused_before_training(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = trainer_env(AIP_TENSORBOARD_LOG_DIR=str(logs))
    args = [*HORSES, *FOUR_STEPS, "--epochs", "1", "--model-dir", str(tmp_path / "model")]
    args += ["--profile-steps", "2,9"]
    result = run(args, env, tmp_path / "trainer.log")
    assert result.returncode == 2, result.log[-3000:]
    assert "--profile-steps 2,9: an epoch has 4 steps here; valid: 1 <= START <= END <= 4" in (
        result.log
    )
    assert "start_epoch=" not in result.log
    assert not logs.exists() and not (tmp_path / "model").exists()
