"""Training-step bench: images/s of ``fit`` steps, our setup against the codelab's.

    .venv/bin/python bench/train_step.py [--workload horses_or_humans] [--steps 20]

Same model, same batch, same image size; only the setup differs:
- codelab: float32 images in [0, 1] fed to the model, compiled as in the codelab;
- ours: uint8 images, rescaled inside the model (trainer.models), and, where a GPU is
  present, the mixed_float16 policy and XLA (jit_compile), as trainer.training does.
Data is a cached in-memory batch so the input pipeline is not measured here (see
bench/input_pipeline.py). Each variant runs in a fresh process (the precision policy is
global); one warm-up epoch traces and compiles, then ``--steps`` steps are timed; the
variants alternate for ``--rounds`` rounds and each keeps its best.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# workload: (codelab image size, codelab batch per replica); cassava is shrunk on CPU.
SETTINGS = {"horses_or_humans": (150, 64), "cassava": (300, 64)}


def _measure(variant: str, workload: str, image_size: int, batch: int, steps: int) -> dict:
    import numpy as np
    import tensorflow as tf
    import tf_keras

    import bench.codelab_baseline as codelab
    from trainer.config import parse_config
    from trainer.models import build_model

    gpu = bool(tf.config.list_physical_devices("GPU"))
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(batch, image_size, image_size, 3), dtype=np.uint8)
    classes = 2 if workload == "horses_or_humans" else 5
    labels = rng.integers(0, classes, size=(batch,))

    if variant == "codelab":
        images = tf.constant(pixels, tf.float32) / 255.0
        if workload == "horses_or_humans":
            model = codelab.horses_create_model(64, 0.01, 0.9, image_size=image_size)
        else:
            model = codelab.cassava_create_model(classes, weights=None, image_size=image_size)
    else:
        images = tf.constant(pixels)
        if gpu:
            tf_keras.mixed_precision.set_global_policy("mixed_float16")
        argv = ["--workload", workload, "--model-dir", "/unused", "--image-size", str(image_size)]
        if workload == "cassava":
            argv += ["--weights", "none"]
        model = build_model(parse_config(argv, environ={}), jit_compile=gpu)

    dataset = tf.data.Dataset.from_tensors((images, labels)).repeat().prefetch(2)
    model.fit(dataset, epochs=1, steps_per_epoch=3, verbose=0)  # trace / compile
    start, cpu_start = time.perf_counter(), time.process_time()
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
    seconds = time.perf_counter() - start
    cpu_ms = 1000 * (time.process_time() - cpu_start) / (steps * batch)
    return {
        "images_per_s": steps * batch / seconds,
        "seconds": seconds,
        "cpu_ms": cpu_ms,
        "gpu": gpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(SETTINGS), default="horses_or_humans")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="best of N alternating rounds")
    parser.add_argument("--image-size", type=int, help="default: the codelab's")
    parser.add_argument("--batch", type=int, help="default: the codelab's per-replica batch")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size, batch = SETTINGS[args.workload]
    size, batch = args.image_size or size, args.batch or batch
    if args.child:
        print(json.dumps(_measure(args.child, args.workload, size, batch, args.steps)))
        return

    # Alternate the variants and keep each one's best round: on a shared machine the
    # noise only ever slows a run down.
    results: dict[str, dict] = {}
    for _ in range(args.rounds):
        for variant in ("codelab", "ours"):
            command = [sys.executable, __file__, "--child", variant, "--workload", args.workload]
            command += ["--steps", str(args.steps), "--image-size", str(size)]
            command += ["--batch", str(batch)]
            out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            best = results.get(variant)
            if best is None or result["images_per_s"] > best["images_per_s"]:
                results[variant] = result
    device = "GPU (ours: mixed_float16 + XLA)" if results["ours"]["gpu"] else "CPU"
    print(f"{args.workload}: {size}px, batch {batch}, {args.steps} timed steps on {device}")
    for variant, result in results.items():
        print(
            f"  {variant:8s} {result['images_per_s']:8.1f} images/s ({result['seconds']:.1f}s, "
            f"{result['cpu_ms']:.1f} CPU-ms/image)"
        )
    ratio = results["ours"]["images_per_s"] / results["codelab"]["images_per_s"]
    print(f"  ratio    {ratio:.2f}x images/s")


if __name__ == "__main__":
    main()
