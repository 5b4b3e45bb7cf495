"""Training-step bench: images/s per GPU of ``fit`` steps, our setup against the codelab's.

    .venv/bin/python bench/train_step.py [--workload all] [--steps 50] [--reference]
    python3 bench/train_step.py --backend jax --reference   # a GPU machine without TensorFlow

Same model, same batch, same image size; only the setup differs:
- codelab: float32 images in [0, 1] fed to the model, compiled as in the codelab;
- ours: uint8 images, rescaled inside the model (trainer.models), and, where a GPU is
  present, the mixed_float16 policy and XLA (jit_compile), as trainer.training does;
- ours-bf16 (GPU only): ours under mixed_bfloat16, to say whether bf16 would be better.
Data is one host batch repeated, so the input pipeline is not measured here (see
bench/input_pipeline.py); it is copied to the GPU every step, as a real batch is. Each
variant runs in a fresh process (the precision policy is global); one warm-up epoch traces
and compiles, then ``--steps`` steps are timed; the variants alternate for ``--rounds``
rounds and each keeps its best.

``--backend jax`` builds the very same networks (the builders of trainer.models and of
bench/codelab_baseline.py, which use only the Keras API) with Keras 3 on JAX: for a GPU
machine whose CUDA has no TensorFlow build. There XLA compiles every variant, the codelab's
too, which flatters the codelab against TensorFlow, where it runs without XLA.

On a GPU it also prints, for cassava, NVIDIA's published ResNet-50 training throughput for
that GPU scaled to our image size as the ceiling (``PUBLISHED_RESNET50_TRAINING``; none was
found for H100, L4 or T4), with ``--reference`` a measured one (torchvision's ResNet-50 on
the same GPU at our image size, the way NVIDIA benchmarks it), and how many vCPUs keep one
GPU fed: GPU images/s x CPU-ms per image (the input pipeline's, from
bench/input_pipeline.py, plus the host CPU the step itself used), against the vCPUs per GPU
of the dev stack's machines and of a3-highgpu-8g. Without a GPU it says so, runs the
horses CNN on the CPU as a check of the script, and derives the vCPUs per GPU at the
published ceilings instead of a measured rate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# workload: (codelab image size, codelab batch per replica)
SETTINGS = {"horses_or_humans": (150, 64), "cassava": (300, 64)}

# Input pipeline CPU-ms per image, ours, from bench/input_pipeline.py on this repo's
# 2-core bench machine: first epoch (decode + resize + disk cache write and read) and later
# epochs (raw uint8 blocks from the disk cache). The training machine's vCPUs (one
# hyperthread each) may be slower per core: re-measure there before sizing a machine.
INPUT_CPU_MS = {"cassava": (1.85, 0.07), "horses_or_humans": (1.8, 0.03)}

PUBLISHED_IMAGE_SIZE = 224  # NVIDIA's ResNet-50 training figures are at 224x224


@dataclass(frozen=True)
class PublishedThroughput:
    """NVIDIA's single-GPU ResNet-50 v1.5 training throughput, mixed precision."""

    images_per_s: float | None
    """At 224x224; ``None`` where no published figure was at hand (then no ceiling)."""
    setup: str
    source: str


# Matched against the device name TensorFlow reports, first match wins (A100 before A10).
PUBLISHED_RESNET50_TRAINING: dict[str, PublishedThroughput] = {
    "V100": PublishedThroughput(
        1270,
        "DGX-1 V100 16GB, TF 20.06-tf1 NGC, AMP + XLA, batch 256",
        "NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md,"
        " 'Training performance: NVIDIA DGX-1 (8x V100 16G)'",
    ),
    "A100": PublishedThroughput(
        2375,
        "DGX A100 40GB, TF 20.06-tf1 NGC, AMP + XLA, batch 256",
        "NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md,"
        " 'Training performance: NVIDIA DGX A100 (8x A100 40GB)'",
    ),
    "H100": PublishedThroughput(
        None,
        "not in the sources consulted: DeepLearningExamples' ResNet-50 READMEs (MXNet, "
        "PyTorch, TensorFlow; snapshot of 2024-04) and NGC's pages give V100 and A100 only",
        "NVIDIA 'Data Center Deep Learning Product Performance' training table; pass "
        "--ceiling, or measure one with --reference",
    ),
    "L4": PublishedThroughput(
        None,
        "not in the sources consulted",
        "NVIDIA 'Data Center Deep Learning Product Performance'; pass --ceiling",
    ),
    "T4": PublishedThroughput(
        None,
        "not in the sources consulted (the resnet50v1.5 README has T4 inference only)",
        "NVIDIA 'Data Center Deep Learning Product Performance'; pass --ceiling",
    ),
}


REFERENCE_BATCH = 256  # NVIDIA's batch per GPU for its mixed-precision ResNet-50 figures

GPU_PROBES = {
    "tensorflow": "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))",
    "jax": "import jax; print(sum(d.platform == 'gpu' for d in jax.devices()))",
}


def ceiling_at(images_per_s_224: float, image_size: int) -> float:
    """ResNet-50's work grows with the pixel count: scale by (224 / size)^2."""
    return images_per_s_224 * (PUBLISHED_IMAGE_SIZE / image_size) ** 2


# Machines of stacks/Pulumi.dev.yaml, and the H100 machine for reference.
MACHINES = {
    "n1-standard-8 + 1 V100 (dev cassava)": 8 / 1,
    "n1-standard-4 + 2 V100 (dev horses trials)": 4 / 2,
    "a3-highgpu-8g (208 vCPU, 8 H100)": 208 / 8,
}


def vcpus_per_gpu(images_per_s: float, cpu_ms_per_image: float) -> float:
    """CPU-seconds per second = cores busy feeding one GPU at that rate."""
    return images_per_s * cpu_ms_per_image / 1000


def _published_for(device_name: str) -> tuple[str, PublishedThroughput] | None:
    for gpu, published in PUBLISHED_RESNET50_TRAINING.items():
        if gpu in device_name:
            return gpu, published
    return None


@contextlib.contextmanager
def _keras3_as_tf_keras(keras: Any) -> Iterator[None]:
    """While importing the model builders, let ``tf_keras`` and ``tf.keras`` name Keras 3.

    Both builders use only the Keras API (layers, applications, ``Model``, ``compile``),
    which Keras 3 shares: the models built are the same networks, run on another backend.
    The stand-ins are removed afterwards, so Keras itself never sees a fake TensorFlow.
    """
    shims = {
        "tf_keras": keras,
        "tensorflow": types.SimpleNamespace(keras=keras),
        "tensorflow_datasets": types.SimpleNamespace(),
    }
    saved = {name: sys.modules.get(name) for name in shims}
    sys.modules.update(shims)  # type: ignore[arg-type]
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _measure(
    variant: str, workload: str, image_size: int, batch: int, steps: int, *, backend: str
) -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(batch, image_size, image_size, 3), dtype=np.uint8)
    classes = 2 if workload == "horses_or_humans" else 5
    labels = rng.integers(0, classes, size=(batch,))
    images = pixels.astype(np.float32) / 255.0 if variant == "codelab" else pixels

    if backend == "tensorflow":
        import tensorflow as tf
        import tf_keras as keras

        import bench.codelab_baseline as codelab
        from trainer.models import build_model

        gpus = tf.config.list_physical_devices("GPU")
        device_name = (
            str(tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU"))
            if gpus
            else "CPU"
        )
        data: Any = tf.data.Dataset.from_tensors((images, labels)).repeat().prefetch(2)
    else:
        os.environ["KERAS_BACKEND"] = "jax"
        import jax
        import keras

        with _keras3_as_tf_keras(keras):
            import bench.codelab_baseline as codelab
            from trainer.models import build_model
        device = jax.devices()[0]
        gpus = [device] if device.platform == "gpu" else []
        device_name = str(getattr(device, "device_kind", device.platform))

        def repeat() -> Iterator[tuple[Any, Any]]:
            while True:  # the same host batch each step: it is copied to the GPU each step
                yield images, labels

        data = repeat()

    from trainer.config import parse_config

    gpu = bool(gpus)
    if variant == "codelab":
        if workload == "horses_or_humans":
            model = codelab.horses_create_model(64, 0.01, 0.9, image_size=image_size)
        else:
            model = codelab.cassava_create_model(classes, weights=None, image_size=image_size)
    else:
        if gpu:
            keras.mixed_precision.set_global_policy(
                "mixed_bfloat16" if variant == "ours-bf16" else "mixed_float16"
            )
        argv = ["--workload", workload, "--model-dir", "/unused", "--image-size", str(image_size)]
        if workload == "cassava":
            argv += ["--weights", "none"]
        model = build_model(parse_config(argv, environ={}), jit_compile=gpu)

    return _timed(
        lambda count: model.fit(data, epochs=1, steps_per_epoch=count, verbose=0),
        warmup=3,  # trace / compile
        steps=steps,
        batch=batch,
        gpu=gpu,
        device_name=device_name,
    )


def _timed(
    run: Callable[[int], object],
    *,
    warmup: int,
    steps: int,
    batch: int,
    gpu: bool,
    device_name: str,
) -> dict:
    """``run(n)`` trains ``n`` steps and returns once they are done on the device."""
    run(warmup)
    start, cpu_start = time.perf_counter(), time.process_time()
    run(steps)
    seconds = time.perf_counter() - start
    return {
        "images_per_s": steps * batch / seconds,
        "seconds": seconds,
        "cpu_ms": 1000 * (time.process_time() - cpu_start) / (steps * batch),
        "gpu": gpu,
        "device_name": device_name,
    }


def _measure_reference(image_size: int, batch: int, steps: int, dtype: str) -> dict:
    """The measured ceiling: torchvision's ResNet-50 trained the way NVIDIA's
    DeepLearningExamples benchmark it (synthetic data already on the GPU, channels-last,
    automatic mixed precision, SGD with momentum), on this GPU, at our image size.

    An independent implementation of the same network: it says what this GPU does for
    ResNet-50 at its best, where no published figure for the GPU is at hand.
    """
    import torch
    import torchvision

    device = torch.device("cuda")
    model = torchvision.models.resnet50(num_classes=5).to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875)
    amp_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
    scaler = torch.amp.GradScaler(enabled=dtype == "fp16")
    images = torch.randn(batch, 3, image_size, image_size, device=device).to(
        memory_format=torch.channels_last
    )
    labels = torch.randint(0, 5, (batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def run(count: int) -> None:
        for _ in range(count):
            step()
        torch.cuda.synchronize()

    torch.backends.cudnn.benchmark = True
    return _timed(
        run,
        warmup=10,
        steps=steps,
        batch=batch,
        gpu=True,
        device_name=torch.cuda.get_device_name(0),
    )


def _run_variants(
    args: argparse.Namespace, workload: str, size: int, batch: int, variants: tuple[str, ...]
) -> dict:
    # Alternate the variants and keep each one's best round: on a shared machine the
    # noise only ever slows a run down.
    results: dict[str, dict] = {}
    for _ in range(args.rounds):
        for variant in variants:
            command = [sys.executable, __file__, "--child", variant, "--workload", workload]
            command += ["--steps", str(args.steps), "--image-size", str(size)]
            command += ["--batch", str(batch), "--backend", args.backend]
            out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            best = results.get(variant)
            if best is None or result["images_per_s"] > best["images_per_s"]:
                results[variant] = result
    return results


def _print_feeding(workload: str, images_per_s: float, step_cpu_ms: float, rate: str) -> None:
    first_ms, later_ms = INPUT_CPU_MS[workload]
    print(f"  vCPUs to keep one GPU fed at {images_per_s:.0f} images/s ({rate}):")
    for label, input_ms in (("first epoch", first_ms), ("later epochs", later_ms)):
        needed = vcpus_per_gpu(images_per_s, input_ms + step_cpu_ms)
        print(
            f"    {label:12s} {input_ms:.2f} input + {step_cpu_ms:.2f} step CPU-ms/image "
            f"-> {needed:5.1f} vCPUs"
        )
        for machine, available in MACHINES.items():
            verdict = "enough" if available >= needed else "GPU waits"
            print(f"      {machine:45s} {available:5.1f} vCPU/GPU: {verdict}")


def _print_reference(args: argparse.Namespace, ours: float, size: int) -> None:
    runs = argparse.Namespace(**{**vars(args), "rounds": 1})
    results = _run_variants(
        runs, "cassava", size, REFERENCE_BATCH, ("reference-bf16", "reference-fp16")
    )
    for variant, result in results.items():
        print(
            f"  {variant:15s} {result['images_per_s']:8.1f} images/s (torchvision ResNet-50, "
            f"batch {REFERENCE_BATCH}, {size}px)"
        )
    ceiling = max(result["images_per_s"] for result in results.values())
    print(
        f"  measured ceiling {ceiling:.0f} images/s at {size}px; ours reaches {ours / ceiling:.0%}"
        " of it (target >= 80%)"
    )


def _print_ceiling_table(size: int) -> None:
    print(f"  NVIDIA's published ResNet-50 v1.5 training, scaled by (224/{size})^2:")
    for gpu, published in PUBLISHED_RESNET50_TRAINING.items():
        if published.images_per_s is None:
            print(f"    {gpu:5s} no figure ({published.setup}); {published.source}")
            continue
        print(
            f"    {gpu:5s} {published.images_per_s:6.0f} images/s at 224 -> "
            f"{ceiling_at(published.images_per_s, size):6.0f} at {size}px "
            f"({published.setup}; {published.source})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload",
        choices=[*sorted(SETTINGS), "all"],
        default="all",
        help="default: both on a GPU, horses_or_humans only on a CPU",
    )
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2, help="best of N alternating rounds")
    parser.add_argument("--image-size", type=int, help="default: the codelab's")
    parser.add_argument("--batch", type=int, help="default: the codelab's per-replica batch")
    parser.add_argument(
        "--ceiling", type=float, help="published ResNet-50 images/s at 224 for this GPU"
    )
    parser.add_argument(
        "--backend",
        choices=sorted(GPU_PROBES),
        default="tensorflow",
        help="tensorflow: the trainer's runtime (tf-keras). jax: the same model builders "
        "on Keras 3's JAX backend, for a GPU machine that has JAX but no TensorFlow build "
        "for its CUDA; XLA compiles every variant there, the codelab's too",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="on a GPU, also measure the ceiling: torchvision's ResNet-50 at our image size, "
        f"batch {REFERENCE_BATCH}, bf16 and fp16 autocast, channels-last (needs PyTorch)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        size, batch = SETTINGS[args.workload]
        size, batch = args.image_size or size, args.batch or batch
        if args.child.startswith("reference-"):
            result = _measure_reference(size, batch, args.steps, args.child.split("-", 1)[1])
        else:
            result = _measure(
                args.child, args.workload, size, batch, args.steps, backend=args.backend
            )
        print(json.dumps(result))
        return

    probe = subprocess.run(
        [sys.executable, "-c", GPU_PROBES[args.backend]],
        check=True,
        capture_output=True,
        text=True,
    )
    has_gpu = int(probe.stdout.strip().splitlines()[-1]) > 0
    variants = ("codelab", "ours", "ours-bf16") if has_gpu else ("codelab", "ours")
    if not has_gpu:
        print(
            "No GPU found: the GPU figures (ours with mixed_float16 + XLA against the codelab, "
            "the share of NVIDIA's published ceiling, vCPUs per GPU at the measured rate) "
            "cannot be measured here. Run this script on a GPU machine. Below: the CPU run "
            "that checks the script, and the feeding derivation at the published ceilings."
        )
    workloads = [args.workload] if args.workload != "all" else ["horses_or_humans"]
    if args.workload == "all" and has_gpu:
        workloads = ["cassava", "horses_or_humans"]

    for workload in workloads:
        size, batch = SETTINGS[workload]
        size, batch = args.image_size or size, args.batch or batch
        results = _run_variants(args, workload, size, batch, variants)
        ours, base = results["ours"], results["codelab"]
        device = ours["device_name"]
        setup = "ours: mixed_float16 + XLA" if ours["gpu"] else "no GPU"
        print(
            f"\n{workload}: {size}px, batch {batch}, {args.steps} timed steps on {device} "
            f"({setup}; {args.backend})"
        )
        for variant, result in results.items():
            print(
                f"  {variant:8s} {result['images_per_s']:8.1f} images/s per device "
                f"({result['seconds']:.1f}s, {result['cpu_ms']:.2f} host CPU-ms/image)"
            )
        ratio = ours["images_per_s"] / base["images_per_s"]
        print(f"  ratio    {ratio:.2f}x images/s (target on a GPU: >= 2.5x)")
        if "ours-bf16" in results:
            bf16 = results["ours-bf16"]["images_per_s"] / ours["images_per_s"]
            print(f"  ours-bf16 (mixed_bfloat16) / ours (mixed_float16): {bf16:.2f}x")
        if workload != "cassava":
            if ours["gpu"]:
                _print_feeding(workload, ours["images_per_s"], ours["cpu_ms"], "measured")
            continue
        if not ours["gpu"]:
            continue
        _print_ceiling_table(size)
        match = _published_for(device)
        published = args.ceiling or (match[1].images_per_s if match else None)
        if published is None:
            print(f"  ceiling  no published figure for {device!r}: pass --ceiling")
        else:
            ceiling = ceiling_at(published, size)
            share = ours["images_per_s"] / ceiling
            print(
                f"  ceiling  {published:.0f} images/s at 224 -> {ceiling:.0f} at {size}px; "
                f"ours reaches {share:.0%} of it (target >= 80%)"
            )
        if args.reference:
            _print_reference(args, ours["images_per_s"], size)
        _print_feeding(workload, ours["images_per_s"], ours["cpu_ms"], "measured")

    if not has_gpu:
        size = SETTINGS["cassava"][0]
        print("\ncassava: no GPU measurement; what the published ceilings would need")
        _print_ceiling_table(size)
        for gpu, published in PUBLISHED_RESNET50_TRAINING.items():
            if published.images_per_s is not None:
                rate = ceiling_at(published.images_per_s, size)
                _print_feeding("cassava", rate, 0.0, f"{gpu} published ceiling, step CPU not known")


if __name__ == "__main__":
    main()
