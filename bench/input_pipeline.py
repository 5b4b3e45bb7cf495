"""Input pipeline bench: the codelabs' pipelines against ours, on the same generated data.

    .venv/bin/python bench/input_pipeline.py [--cassava-examples 1200] [--horses-examples 1027]

Writes a real TFDS dataset per workload into a temporary data dir (cassava-like: JPEGs of
500x400, 5 classes; horses-like: PNGs of 300x300, 2 classes, as the real sets), then runs
each pipeline in a fresh subprocess for the workload's codelab epoch count, iterating it as
``fit`` would. Reported per run: images/s over the whole run (start-up and shuffle-buffer
fill included), CPU time per image (steadier than wall time on a shared machine) and peak
memory = peak RSS minus the RSS after imports.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402

BATCH = 64  # per replica, both codelabs; one replica here

# tf.data's many threads make glibc keep one malloc arena each; freed buffers stay mapped
# and inflate the peak. The trainer image sets MALLOC_ARENA_MAX=2; both pipelines are
# measured under both settings so that the comparison stays like for like.
ALLOCATORS = {"glibc default": {}, "MALLOC_ARENA_MAX=2 (trainer image)": {"MALLOC_ARENA_MAX": "2"}}


class _Generated(tfds.core.GeneratorBasedBuilder):
    """Photo-like images (smooth colour fields + mild noise), so JPEG sizes are realistic."""

    VERSION = tfds.core.Version("1.0.0")
    NUM_CLASSES = 2
    SHAPE = (300, 300)
    FORMAT = "png"
    SPLITS: dict[str, int] = {}

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "image": tfds.features.Image(
                        shape=(None, None, 3), encoding_format=self.FORMAT
                    ),
                    "label": tfds.features.ClassLabel(num_classes=self.NUM_CLASSES),
                }
            ),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):  # type: ignore[no-untyped-def]
        return {name: self._generate_examples(name, n) for name, n in self.SPLITS.items()}

    def _generate_examples(self, split: str, count: int):  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(abs(hash(split)) % 2**32)
        height, width = self.SHAPE
        for index in range(count):
            coarse = rng.integers(0, 256, size=(6, 8, 3)).astype(np.float32)
            rows = np.linspace(0, 5, height)
            cols = np.linspace(0, 7, width)
            # Bilinear upsampling of a 6x8 colour grid, written out in numpy (fast).
            r0, c0 = np.floor(rows).astype(int), np.floor(cols).astype(int)
            r1, c1 = np.minimum(r0 + 1, 5), np.minimum(c0 + 1, 7)
            fr, fc = (rows - r0)[:, None, None], (cols - c0)[None, :, None]
            top = coarse[r0][:, c0] * (1 - fc) + coarse[r0][:, c1] * fc
            bottom = coarse[r1][:, c0] * (1 - fc) + coarse[r1][:, c1] * fc
            smooth = top * (1 - fr) + bottom * fr
            noisy = smooth + rng.normal(0.0, 6.0, size=smooth.shape)
            image = np.clip(noisy, 0, 255).astype(np.uint8)
            yield index, {"image": image, "label": index % self.NUM_CLASSES}


class BenchCassava(_Generated):
    NUM_CLASSES = 5
    SHAPE = (400, 500)
    FORMAT = "jpeg"


class BenchHorses(_Generated):
    NUM_CLASSES = 2
    SHAPE = (300, 300)
    FORMAT = "png"


WORKLOADS = {
    # name: (builder, codelab epochs, image size)
    "cassava": (BenchCassava, 2, 300),
    "horses_or_humans": (BenchHorses, 10, 150),
}


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _measure(variant: str, workload: str, data_dir: str) -> dict[str, float]:
    """Runs in a fresh process: build the pipeline, iterate it for the codelab's epochs."""
    import bench.codelab_baseline as codelab
    from trainer.data import ImagePipeline, load_tfds_split

    builder, epochs, size = WORKLOADS[workload]
    name = builder.name  # type: ignore[attr-defined]
    baseline_rss = _rss_bytes()
    start = time.perf_counter()
    cpu_start = time.process_time()
    if variant == "codelab" and workload == "cassava":
        dataset, _ = codelab.cassava_create_dataset(BATCH, name=name, data_dir=data_dir)
    elif variant == "codelab":
        dataset, _ = codelab.horses_create_dataset(BATCH, name=name, data_dir=data_dir)
    else:
        split = load_tfds_split(name, "train", data_dir=data_dir, shuffle_files=True)
        dataset = ImagePipeline(image_size=size, global_batch_size=BATCH).build(
            split, training=True
        )
    images = 0
    for _ in range(epochs):
        for batch_images, _labels in dataset:
            images += int(batch_images.shape[0])
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {
        "images": images,
        "seconds": seconds,
        "images_per_s": images / seconds,
        "cpu_ms_per_image": 1000 * cpu_seconds / images,
        "peak_mib": (peak - baseline_rss) / 2**20,
    }


def _prepare(data_dir: str, cassava_examples: int, horses_examples: int) -> None:
    BenchCassava.SPLITS = {"train": cassava_examples}
    # The codelab's horses pipeline also builds the test split (256 in the real set).
    BenchHorses.SPLITS = {"train": horses_examples, "test": 64}
    for builder in (BenchCassava, BenchHorses):
        builder(data_dir=data_dir).download_and_prepare()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cassava-examples", type=int, default=1200)
    parser.add_argument("--horses-examples", type=int, default=1027)  # the real train split
    parser.add_argument("--workloads", default="cassava,horses_or_humans")
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "WORKLOAD", "DATA_DIR"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(*args.child)))
        return

    with tempfile.TemporaryDirectory(prefix="bench-input-") as data_dir:
        started = time.perf_counter()
        _prepare(data_dir, args.cassava_examples, args.horses_examples)
        print(f"generated TFDS data in {time.perf_counter() - started:.1f}s under {data_dir}")
        for workload in args.workloads.split(","):
            epochs = WORKLOADS[workload][1]
            print(f"\n{workload}: {epochs} epochs (the codelab's), batch {BATCH}")
            for allocator, extra_env in ALLOCATORS.items():
                results = {}
                for variant in ("codelab", "ours"):
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", variant, workload, data_dir],
                        check=True,
                        capture_output=True,
                        text=True,
                        cwd=REPO,
                        env={**os.environ, **extra_env},
                    )
                    results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
                base, ours = results["codelab"], results["ours"]
                print(f"  allocator: {allocator} ({base['images']} images per run)")
                for variant, result in results.items():
                    print(
                        f"    {variant:8s} {result['images_per_s']:8.1f} images/s "
                        f"({result['seconds']:5.1f}s, "
                        f"{result['cpu_ms_per_image']:.2f} CPU-ms/image)"
                        f"   peak memory {result['peak_mib']:7.1f} MiB"
                    )
                speed = ours["images_per_s"] / base["images_per_s"]
                memory = ours["peak_mib"] / max(base["peak_mib"], 1e-9)
                print(
                    f"    ratio    {speed:.2f}x images/s (target >= 4x), "
                    f"{memory:.3f}x peak memory (target <= 0.1x)"
                )


if __name__ == "__main__":
    main()
