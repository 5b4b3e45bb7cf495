"""bench/train_step.py --backend jax builds the same networks with Keras 3 as the trainer
builds with tf-keras: what it measures on a GPU without TensorFlow is our model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: the shim swaps modules in sys.modules while importing.
_PROBE = """
import json, os, sys
os.environ["KERAS_BACKEND"] = "tensorflow"  # Keras 3 on the backend installed here
sys.path.insert(0, sys.argv[1])
import keras
import tensorflow
from bench.train_step import _keras3_as_tf_keras
from trainer.config import parse_config

def summary(model):
    return {
        "params": int(model.count_params()),
        "layers": [type(layer).__name__ for layer in model.layers],
        "output": [int(d) for d in model.output.shape[1:]],
    }

def build(codelab, build_model):
    horses = ["--workload", "horses_or_humans", "--model-dir", "/unused"]
    cassava = ["--workload", "cassava", "--model-dir", "/unused", "--weights", "none"]
    return {
        "codelab horses": summary(codelab.horses_create_model(64, 0.01, 0.9)),
        "ours horses": summary(build_model(parse_config(horses, environ={}))),
        "codelab cassava": summary(codelab.cassava_create_model(5, weights=None)),
        "ours cassava": summary(build_model(parse_config(cassava, environ={}))),
    }

tf_keras_before = sys.modules.get("tf_keras")
with _keras3_as_tf_keras(keras):
    import bench.codelab_baseline as codelab
    from trainer.models import build_model
    shimmed = sys.modules["tf_keras"] is keras and codelab.tf.keras is keras
restored = sys.modules["tensorflow"] is tensorflow
restored = restored and sys.modules.get("tf_keras") is tf_keras_before
keras3 = build(codelab, build_model)
for name in ("bench.codelab_baseline", "trainer.models"):
    del sys.modules[name]
import bench.codelab_baseline as codelab
from trainer.models import build_model
tf_keras = build(codelab, build_model)
result = {"shimmed": shimmed, "restored": restored, "keras3": keras3, "tf_keras": tf_keras}
print(json.dumps(result))
"""


def test_keras3_builds_the_same_networks_as_tf_keras() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(REPO)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/usr/bin"},
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["shimmed"], "the builders did not see Keras 3"
    assert result["restored"], "the shim left stand-ins for tensorflow or tf_keras behind"
    assert result["keras3"] == result["tf_keras"]
    assert result["keras3"]["ours cassava"]["params"] > 23_000_000  # ResNet-50 + head
    assert result["keras3"]["ours horses"]["output"] == [1]
