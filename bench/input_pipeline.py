"""Input pipeline bench: the codelabs' pipelines against ours, on the same generated data.

    .venv/bin/python bench/input_pipeline.py [--cassava-examples 2000] [--horses-examples 1027]
        [--data-dir DIR]  # keep the generated data there and reuse it in later runs

Writes a real TFDS dataset per workload into a temporary data dir (cassava-like: JPEGs of
500x400, 5 classes; horses-like: PNGs of 300x300, 2 classes, as the real sets), then runs
each pipeline in a fresh subprocess for the dev stack's epochs (cassava 5, horses_or_humans
the codelab's 10), iterating it as ``fit`` would. Each "ours" run is a new job: its disk
cache starts empty. Reported per run: images/s and CPU time per image (steadier than wall
time on a shared machine) for the first epoch (pipeline build included: that is where our
disk cache decodes) and for the later ones, images/s over all epochs, and peak memory =
peak RSS minus the RSS after imports (the page cache the disk cache's reads go through is
not counted: the kernel gives it back under pressure).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
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
TFDS_AUTOCACHE_BYTES = 250 * 2**20  # tfds.load caches a smaller dataset (shuffle_files off)

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
    NOISE = 6.0
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
            noisy = smooth + rng.normal(0.0, self.NOISE, size=smooth.shape)
            image = np.clip(noisy, 0, 255).astype(np.uint8)
            yield index, {"image": image, "label": index % self.NUM_CLASSES}


class BenchCassava(_Generated):
    NUM_CLASSES = 5
    SHAPE = (400, 500)
    FORMAT = "jpeg"
    # ~135 KB per JPEG, as the real set (1.26 GiB for 9,430 images): decode cost and the
    # split's size on disk both follow.
    NOISE = 18.0


class BenchHorses(_Generated):
    NUM_CLASSES = 2
    SHAPE = (300, 300)
    FORMAT = "png"


WORKLOADS = {
    # name: (builder, epochs (stacks/Pulumi.dev.yaml), image size, peak memory target)
    "cassava": (BenchCassava, 5, 300, 0.1),
    "horses_or_humans": (BenchHorses, 10, 150, 0.15),
}
SPEED_TARGET = 4.0  # cassava, images/s over all epochs against the codelab


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    """This process's high-water RSS. Not ``getrusage``'s ru_maxrss: Linux carries that
    over ``execve`` from the forking parent, so a child would report at least the
    parent's RSS (this bench's parent holds TFDS and the generated data: ~320 MiB)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def _measure(variant: str, workload: str, data_dir: str) -> dict[str, float]:
    """Runs in a fresh process: build the pipeline, iterate it for the workload's epochs."""
    import bench.codelab_baseline as codelab
    from trainer.data import ImagePipeline, load_tfds_split
    from trainer.disk_cache import DiskCache

    builder, epochs, size, _ = WORKLOADS[workload]
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
        # A new job: an empty cache dir on the same disk as the data.
        cache_dir = tempfile.mkdtemp(prefix="cache-", dir=data_dir)
        cache = DiskCache(cache_dir)
        dataset = ImagePipeline(image_size=size, global_batch_size=BATCH, disk_cache=cache).build(
            split, training=True
        )
    build_seconds = time.perf_counter() - start
    build_peak = _peak_rss_bytes()
    per_epoch = []
    for _ in range(epochs):
        images = 0
        for batch_images, _labels in dataset:
            images += int(batch_images.shape[0])
        now, cpu_now = time.perf_counter(), time.process_time()
        per_epoch.append((images, now - start, cpu_now - cpu_start))
        start, cpu_start = now, cpu_now
    peak = _peak_rss_bytes()
    if variant != "codelab":
        shutil.rmtree(cache_dir)

    def figures(epochs: list[tuple[int, float, float]]) -> tuple[float, float]:
        images = sum(e[0] for e in epochs)
        return images / sum(e[1] for e in epochs), 1000 * sum(e[2] for e in epochs) / images

    first_ips, first_cpu = figures(per_epoch[:1])
    later_ips, later_cpu = figures(per_epoch[1:])
    total_ips, total_cpu = figures(per_epoch)
    return {
        "images": sum(e[0] for e in per_epoch),
        "seconds": sum(e[1] for e in per_epoch),
        "images_per_s": total_ips,
        "cpu_ms_per_image": total_cpu,
        "first_images_per_s": first_ips,
        "first_cpu_ms_per_image": first_cpu,
        "later_images_per_s": later_ips,
        "later_cpu_ms_per_image": later_cpu,
        "peak_mib": (peak - baseline_rss) / 2**20,
        "build_seconds": build_seconds,
        "build_peak_mib": (build_peak - baseline_rss) / 2**20,
    }


def _prepare(data_dir: str, cassava_examples: int, horses_examples: int) -> None:
    BenchCassava.SPLITS = {"train": cassava_examples}
    # The codelab's horses pipeline also builds the test split (256 in the real set).
    BenchHorses.SPLITS = {"train": horses_examples, "test": 64}
    for builder in (BenchCassava, BenchHorses):
        builder(data_dir=data_dir).download_and_prepare()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Enough for the encoded split to pass TFDS's 250 MiB auto-cache limit, as the real
    # cassava does: below it TFDS would cache the codelab's *decoded* images in memory,
    # which the real job never gets.
    parser.add_argument("--cassava-examples", type=int, default=2000)
    parser.add_argument("--horses-examples", type=int, default=1027)  # the real train split
    parser.add_argument("--workloads", default="cassava,horses_or_humans")
    parser.add_argument(
        "--data-dir",
        help="where to generate the data, or find it from an earlier run with the same "
        "example counts (default: a temporary directory, removed at the end)",
    )
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "WORKLOAD", "DATA_DIR"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(*args.child)))
        return

    with (
        contextlib.nullcontext(args.data_dir)
        if args.data_dir
        else tempfile.TemporaryDirectory(prefix="bench-input-")
    ) as data_dir:
        started = time.perf_counter()
        _prepare(data_dir, args.cassava_examples, args.horses_examples)
        print(f"generated TFDS data in {time.perf_counter() - started:.1f}s under {data_dir}")
        for builder in (BenchCassava, BenchHorses):
            size = builder(data_dir=data_dir).info.dataset_size
            cached = size <= TFDS_AUTOCACHE_BYTES
            print(
                f"{builder.name}: {size / 2**20:.0f} MiB encoded; TFDS auto-caches the "  # type: ignore[attr-defined]
                f"codelab's decoded images: {'yes' if cached else 'no'} (real set: "
                f"{'yes' if builder is BenchHorses else 'no'})"
            )
        for workload in args.workloads.split(","):
            epochs, memory_target = WORKLOADS[workload][1], WORKLOADS[workload][3]
            print(f"\n{workload}: {epochs} epochs (the dev stack's), batch {BATCH}")
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
                print(
                    "    variant   first epoch: images/s CPU-ms/img | later epochs: images/s "
                    "CPU-ms/img | all epochs: images/s CPU-ms/img | peak MiB (in build) | build s"
                )
                for variant, r in results.items():
                    print(
                        f"    {variant:8s}  {r['first_images_per_s']:20.1f} "
                        f"{r['first_cpu_ms_per_image']:10.2f} | "
                        f"{r['later_images_per_s']:22.1f} {r['later_cpu_ms_per_image']:10.2f} | "
                        f"{r['images_per_s']:20.1f} {r['cpu_ms_per_image']:10.2f} | "
                        f"{r['peak_mib']:8.1f} ({r['build_peak_mib']:.0f}) | "
                        f"{r['build_seconds']:.1f}"
                    )
                speed = ours["images_per_s"] / base["images_per_s"]
                later = ours["later_images_per_s"] / base["later_images_per_s"]
                cpu = base["cpu_ms_per_image"] / ours["cpu_ms_per_image"]
                memory = ours["peak_mib"] / max(base["peak_mib"], 1e-9)
                speed_target = f" (target >= {SPEED_TARGET:g}x)" if workload == "cassava" else ""
                print(
                    f"    ratio     {speed:.2f}x images/s over {epochs} epochs{speed_target}, "
                    f"{later:.2f}x in later epochs, {cpu:.2f}x less CPU per image, "
                    f"{memory:.3f}x peak memory (target <= {memory_target:g}x)"
                )


if __name__ == "__main__":
    main()
