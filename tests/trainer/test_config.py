"""Flags and output locations: codelab defaults, precedence, clear errors."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests import PROJECT_ROOT, modules_loaded_by, run_python
from trainer.config import (
    CACHE_DIR_ENV,
    CACHE_MAX_BYTES_ENV,
    OutputPaths,
    parse_config,
    resolve_output_paths,
)


def test_cassava_defaults_are_the_codelab_settings() -> None:
    config = parse_config(["--workload", "cassava", "--job-dir", "gs://b/job"], environ={})
    assert (config.image_size, config.epochs, config.batch_size_per_replica) == (300, 2, 64)
    assert config.learning_rate == pytest.approx(1e-4)
    assert config.weights == "imagenet"
    assert config.workload.num_classes == 5
    assert config.paths.model_dir == "gs://b/job/model"
    assert config.paths.checkpoint_dir == "gs://b/job/checkpoints"
    assert config.paths.tensorboard_dir == "gs://b/job/logs"


def test_horses_or_humans_defaults_and_codelab_flag_names() -> None:
    argv = ["--workload", "horses_or_humans", "--model-dir", "/m"]
    config = parse_config(argv, environ={})
    assert (config.image_size, config.epochs, config.batch_size_per_replica) == (150, 10, 64)
    assert (config.learning_rate, config.momentum, config.num_units) == (0.01, 0.9, 64)
    assert config.weights == "none"
    argv += ["--learning_rate", "0.05", "--momentum", "0.5", "--num_units", "512"]
    tuned = parse_config(argv, environ={})
    assert (tuned.learning_rate, tuned.momentum, tuned.num_units) == (0.05, 0.5, 512)
    assert tuned.optimizer == "sgd"


def test_the_optimizer_is_a_tunable_choice() -> None:
    from trainer.models import build_horses_or_humans_model

    argv = ["--workload", "horses_or_humans", "--model-dir", "/m", "--image-size", "32"]
    adam = parse_config([*argv, "--optimizer=adam"], environ={})
    model = build_horses_or_humans_model(adam)
    assert type(model.optimizer).__name__ == "Adam"
    sgd = build_horses_or_humans_model(parse_config(argv, environ={}))
    assert type(sgd.optimizer).__name__ == "SGD"


def test_optimizer_is_for_horses_only(capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_message(["--workload", "cassava", "--job-dir", "/j", "--optimizer", "adam"], capsys)
    assert "--optimizer applies to horses_or_humans only" in err


def resolved(environ: Mapping[str, str] | None = None, **flags: str) -> OutputPaths:
    """``resolve_output_paths`` with the flags given (the others unset) and ``environ``."""
    return resolve_output_paths(
        job_dir=flags.get("job_dir"),
        model_dir=flags.get("model_dir"),
        checkpoint_dir=flags.get("checkpoint_dir"),
        tensorboard_dir=flags.get("tensorboard_dir"),
        environ=environ or {},
    )


def test_vertex_variables_win_over_flags() -> None:
    env = {
        "AIP_MODEL_DIR": "gs://b/out/model/",
        "AIP_CHECKPOINT_DIR": "gs://b/out/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": "gs://b/out/logs/",
    }
    paths = resolved(env, job_dir="/j", model_dir="/m", checkpoint_dir="/c", tensorboard_dir="/t")
    assert paths.model_dir == "gs://b/out/model/"
    assert paths.checkpoint_dir == "gs://b/out/checkpoints/"
    assert paths.tensorboard_dir == "gs://b/out/logs/"


def test_explicit_flags_win_over_the_job_dir_layout() -> None:
    paths = resolved(job_dir="/j/", model_dir="/m", checkpoint_dir="/c")
    assert (paths.model_dir, paths.checkpoint_dir, paths.tensorboard_dir) == ("/m", "/c", "/j/logs")


def test_model_dir_alone_keeps_checkpoints_beside_the_model() -> None:
    paths = resolved(model_dir="gs://b/m/")
    assert paths.checkpoint_dir == "gs://b/m-checkpoints"
    assert paths.tensorboard_dir is None


def test_a_trial_writes_its_model_under_its_own_directory() -> None:
    """Vertex gives each trial ``<base>/<trial id>/model``; from the flags, every directory
    gets ``trial-<id>``: parallel trials never share a model or a checkpoint."""
    vertex = {"AIP_MODEL_DIR": "gs://b/out/7/model/", "CLOUD_ML_TRIAL_ID": "7"}
    paths = resolved(vertex)
    assert paths.model_dir == "gs://b/out/7/model/"
    flags = resolved({"CLOUD_ML_TRIAL_ID": "7"}, job_dir="/j")
    assert flags == OutputPaths("/j/model/trial-7", "/j/checkpoints/trial-7", "/j/logs/trial-7")
    explicit = resolved({"CLOUD_ML_TRIAL_ID": "7"}, model_dir="/m/", checkpoint_dir="/c")
    assert (explicit.model_dir, explicit.checkpoint_dir) == ("/m/trial-7", "/c/trial-7")


def test_disk_cache_defaults_to_the_system_temp_dir_and_can_be_moved_or_disabled() -> None:
    import tempfile

    base = ["--workload", "cassava", "--job-dir", "/j"]
    default = parse_config(base, environ={})
    assert default.cache_dir == str(Path(tempfile.gettempdir()) / "trainer-decoded-cache")
    assert parse_config([*base, "--cache-dir", "/ssd/c"], environ={}).cache_dir == "/ssd/c"
    assert parse_config([*base, "--no-disk-cache"], environ={}).cache_dir is None


def test_the_cache_dir_and_its_bound_come_from_the_environment_the_flag_wins() -> None:
    """The local backend points every replica of a stack at one directory this way."""
    base = ["--workload", "cassava", "--job-dir", "/j"]
    env = {CACHE_DIR_ENV: "/stack/decoded-cache", CACHE_MAX_BYTES_ENV: "1048576"}
    from_env = parse_config(base, environ=env)
    assert (from_env.cache_dir, from_env.cache_max_bytes) == ("/stack/decoded-cache", 1048576)
    assert parse_config([*base, "--cache-dir", "/ssd/c"], environ=env).cache_dir == "/ssd/c"
    assert parse_config([*base, "--no-disk-cache"], environ=env).cache_dir is None
    assert parse_config(base, environ={}).cache_max_bytes is None


@pytest.mark.parametrize("value", ["-1", "0", "lots"])
def test_a_bad_cache_bound_exits_naming_the_variable(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_config(
            ["--workload", "cassava", "--job-dir", "/j"], environ={CACHE_MAX_BYTES_ENV: value}
        )
    assert f"{CACHE_MAX_BYTES_ENV}={value!r}: valid: a positive number of bytes" in (
        capsys.readouterr().err
    )


def _exit_message(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as excinfo:
        parse_config(argv, environ={})
    assert excinfo.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "no model destination: set AIP_MODEL_DIR"),
        (["--job-dir", "/j", "--epochs", "0"], "--epochs: expected a positive integer, got 0"),
        (
            ["--job-dir", "/j", "--image-size", "16"],
            "--image-size: expected an integer of at least 32",
        ),
        (["--job-dir", "/j", "--learning_rate", "-1"], "expected a positive finite number"),
        (["--job-dir", "/j", "--momentum", "1.5"], "expected a number in [0, 1], got 1.5"),
        (["--job-dir", "/j", "--data-dir", "/no/such/dir"], "--data-dir '/no/such/dir' does not"),
        (["--job-dir", "/j", "--weights", "imagenet"], "applies to cassava only"),
        (["--job-dir", "/j", "--data", "csv"], "invalid choice: 'csv'"),
        (["--job-dir", "/j", "--cache-dir", "gs://b/cache"], "must be on the replica's local"),
        (["--job-dir", "/j", "--cache-dir", "/c", "--no-disk-cache"], "contradict each other"),
    ],
)
def test_bad_flags_exit_with_a_clear_message(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _exit_message(["--workload", "horses_or_humans", *extra], capsys)


def test_cassava_refuses_the_sgd_flags(capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_message(["--workload", "cassava", "--job-dir", "/j", "--num_units", "8"], capsys)
    assert "--num_units applies to horses_or_humans only" in err


def test_unknown_workload(capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_message(["--workload", "mnist", "--job-dir", "/j"], capsys)
    assert "invalid choice: 'mnist'" in err


def test_entry_point_module_runs_help_without_loading_tensorflow() -> None:
    code = (
        "import sys, runpy; sys.argv = ['trainer.task', '--help']\n"
        "try:\n    runpy.run_module('trainer.task', run_name='__main__')\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "import os; assert os.environ['TF_USE_LEGACY_KERAS'] == '1'\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow imported for --help'\n"
        "print('OK')"
    )
    out = run_python("-c", code)
    assert "--workload {cassava,horses_or_humans}" in out
    assert out.rstrip().endswith("OK")


def test_metric_module_is_cheap_to_import() -> None:
    """vertex_training imports trainer.metric for the tuning spec: no TensorFlow with it."""
    code = "from trainer.metric import HYPERTUNE_METRIC_TAG as tag\nassert tag == 'accuracy', tag"
    assert modules_loaded_by(code, ("tensorflow", "tf_keras")) == []


def test_trainer_code_logs_and_never_prints() -> None:
    import ast

    offenders = [
        f"{source.name}:{node.lineno}"
        for source in sorted((PROJECT_ROOT / "trainer").glob("*.py"))
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
    ]
    assert not offenders, f"use logging, not print: {offenders}"
