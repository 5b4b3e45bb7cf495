"""Input pipelines: encoded images in, uint8 batches out.

What differs from the codelabs and why:
- every split is decoded and resized once per job, into uint8 files on the replica's
  local disk (:mod:`trainer.disk_cache`), when the disk has room: every later epoch reads
  ready images in blocks of a few (cassava: ~0.07 CPU-ms per image instead of ~1.6-2 to
  decode a 500x400 JPEG again). Disk rather than memory even for a split that would fit:
  its reads go through the page cache, which the kernel keeps while memory is free and
  drops under pressure, where an in-memory cache pins every image in the process
  (horses_or_humans: ~70 MB at 150px);
- shuffling after the disk cache is by block: every epoch reads the whole split's blocks
  (``DISK_CACHE_BLOCK_BYTES``, at most 1/``MIN_BLOCKS_PER_BATCH`` of a batch: 7 images
  for cassava at 300px and batch 64) in a new uniformly random order, and a batch is
  made of the next ~``MIN_BLOCKS_PER_BATCH`` blocks. So a batch is a random draw of blocks
  from the whole split (the earlier shard-and-buffer shuffle drew from ~4 shards of ~60
  images at a time), and the images of one block (neighbours in the source's order, which
  TFDS shuffles when it prepares a dataset) always share a batch. No shuffle buffer holds
  decoded images;
- without a disk cache (disabled, or no room), a split that fits ``CACHE_BUDGET_BYTES`` is
  cached decoded in memory (the shuffle buffer references cached tensors, it does not
  copy them), and a larger one is shuffled while still *encoded*: the 1000-element buffer
  holds JPEG bytes (~50-150 KB each) instead of 300x300 float32 tensors (~1 MB each, ~1 GB
  per buffer in the codelab);
- decoding and resizing run in a parallel, non-deterministic map (the HPT codelab maps
  serially), and the result stays uint8: the model rescales on the accelerator;
- batches are prefetched (one ahead from the disk cache, which serves ~10k images/s: a
  deeper buffer would only hold more memory), and the auto-shard policy is DATA as in the
  multi-worker codelab.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from trainer.disk_cache import DiskCache, decoded_size_bytes

__all__ = [
    "CACHE_BUDGET_BYTES",
    "DISK_CACHE_BLOCK_BYTES",
    "MIN_BLOCKS_PER_BATCH",
    "SHUFFLE_BUFFER",
    "EncodedSplit",
    "ImagePipeline",
    "decode_and_resize",
    "decode_image",
    "load_tfds_split",
    "resize_image",
    "synthetic_class_colours",
    "synthetic_split",
]

logger = logging.getLogger(__name__)

SHUFFLE_BUFFER = 1000
"""Same buffer length as the codelabs; it now holds encoded bytes."""
CACHE_BUDGET_BYTES = 256 * 1024**2
"""Without a disk cache, cache the decoded uint8 split in memory when it is at most this large."""
DISK_CACHE_BLOCK_BYTES = 2 * 1024**2
"""The most decoded pixels in one disk cache block (read whole: the larger, the less
per-image overhead; the smaller, the finer the shuffle)."""
MIN_BLOCKS_PER_BATCH = 8
"""A batch from the disk cache mixes at least this many blocks (if the images allow)."""


@dataclass(frozen=True)
class EncodedSplit:
    """A split as (encoded image bytes, integer label) pairs plus its known size."""

    examples: tf.data.Dataset
    num_examples: int | None
    """``None`` when unknown: then nothing is cached and the shuffle buffer is the default."""
    num_classes: int
    identity: str = ""
    """What the examples are (dataset, version, split, source): the disk cache's key.
    Empty = unknown, and then nothing is cached on disk."""


def resize_image(image: tf.Tensor, image_size: int) -> tf.Tensor:
    """Resize one image or a batch to ``image_size`` square; the result is uint8."""
    # Bilinear, aspect-distorting: the same geometry as the codelabs' tf.image.resize.
    resized = tf.image.resize(image, (image_size, image_size))
    # Bilinear interpolation stays within [0, 255]: +0.5 then truncation rounds, one op.
    return tf.cast(resized + 0.5, tf.uint8)


def decode_image(encoded: tf.Tensor, image_size: int) -> tf.Tensor:
    """Decode JPEG or PNG bytes and resize to ``image_size`` square; the result is uint8.

    The serving signature decodes with this too: what a model sees in production is made
    exactly as what it trained on."""

    def decode_jpeg() -> tf.Tensor:
        # INTEGER_FAST: a cheaper IDCT, invisible after a downscale to the training size.
        return tf.io.decode_jpeg(encoded, channels=3, dct_method="INTEGER_FAST")

    def decode_other() -> tf.Tensor:
        return tf.io.decode_image(encoded, channels=3, expand_animations=False)

    image = resize_image(tf.cond(tf.io.is_jpeg(encoded), decode_jpeg, decode_other), image_size)
    image.set_shape((image_size, image_size, 3))
    return image


def decode_and_resize(
    encoded: tf.Tensor, label: tf.Tensor, image_size: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """:func:`decode_image` for an (encoded, label) pair."""
    return decode_image(encoded, image_size), label


@dataclass(frozen=True)
class ImagePipeline:
    """Turns an :class:`EncodedSplit` into batches of ``(uint8 image, label)``."""

    image_size: int
    global_batch_size: int
    cache_budget_bytes: int = CACHE_BUDGET_BYTES
    shuffle_buffer: int = SHUFFLE_BUFFER
    disk_cache: DiskCache | None = None
    """Where splits too large for memory are decoded once; ``None`` = decode every epoch."""
    disk_cache_block_bytes: int = DISK_CACHE_BLOCK_BYTES

    def fits_cache(self, num_examples: int | None) -> bool:
        if num_examples is None:
            return False
        return decoded_size_bytes(num_examples, self.image_size) <= self.cache_budget_bytes

    def _decode(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        return dataset.map(
            lambda encoded, label: decode_and_resize(encoded, label, self.image_size),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=False,
        )

    def _from_disk_cache(self, split: EncodedSplit, *, training: bool) -> tf.data.Dataset | None:
        """The decoded split in blocks from the disk cache (written now if need be), or
        ``None``."""
        if self.disk_cache is None or split.num_examples is None or not split.identity:
            return None
        needed = decoded_size_bytes(split.num_examples, self.image_size)
        key = self.disk_cache.key(split.identity, self.image_size, split.num_examples)
        if not self.disk_cache.has_room(needed, key):
            return None
        # Written in the source's order: TFDS shuffles examples when it prepares a dataset
        # (and the files when it reads them), so each block is already a random sample. An
        # encoded shuffle buffer here would add ~130 MB of JPEGs (cassava) to the peak.
        return self.disk_cache.decoded(
            self._decode(split.examples),
            key=key,
            num_examples=split.num_examples,
            block_size=self.disk_cache_block_size(),
            shuffle=training,
        )

    def disk_cache_block_size(self) -> int:
        """Images per disk cache block."""
        image_bytes = decoded_size_bytes(1, self.image_size)
        return max(
            1,
            min(
                self.global_batch_size // MIN_BLOCKS_PER_BATCH,
                self.disk_cache_block_bytes // image_bytes,
            ),
        )

    def build(
        self, split: EncodedSplit, *, training: bool, repeat: bool = False
    ) -> tf.data.Dataset:
        """The batched pipeline. A split bound for the disk cache is decoded into it here,
        once per job, unless a complete cache for it already exists."""
        buffer = max(1, min(self.shuffle_buffer, split.num_examples or self.shuffle_buffer))
        on_disk = self._from_disk_cache(split, training=training)
        in_memory = on_disk is None and self.fits_cache(split.num_examples)
        if on_disk is not None:
            dataset = on_disk  # blocks, shuffled already
        else:
            dataset = split.examples
            if training and not in_memory:
                dataset = dataset.shuffle(buffer, reshuffle_each_iteration=True)
            dataset = self._decode(dataset)
            if in_memory:
                # Decoded once, then every later epoch reads uint8 from memory.
                dataset = dataset.cache()
                if training:
                    dataset = dataset.shuffle(buffer, reshuffle_each_iteration=True)
        if repeat:
            dataset = dataset.repeat()
        # ``rebatch`` copies the blocks' images into batches, once.
        dataset = (
            dataset.rebatch(self.global_batch_size)
            if on_disk is not None
            else dataset.batch(self.global_batch_size)
        )
        # From the disk cache a batch takes a few milliseconds: one ahead keeps any
        # accelerator fed, where autotuning may hold several 17 MB batches (cassava).
        prefetch = 1 if on_disk is not None else tf.data.AUTOTUNE
        dataset = dataset.prefetch(prefetch)
        options = tf.data.Options()
        options.deterministic = False
        # As the codelab: every worker sees the same element stream and keeps its share
        # (TFDS splits may come in fewer files than there are workers). The shard is
        # applied at the end of the pipeline, after the batch: every worker runs the whole
        # pipeline, disk cache included, so each worker's cache holds the whole split.
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        logger.info(
            "%s pipeline: %s examples, %dpx, global batch %d, decoded cache: %s",
            "training" if training else "evaluation",
            split.num_examples,
            self.image_size,
            self.global_batch_size,
            "memory" if in_memory else "disk" if on_disk is not None else "none",
        )
        return dataset.with_options(options)


def load_tfds_split(
    name: str, split: str, *, data_dir: str | None, shuffle_files: bool
) -> EncodedSplit:
    """A TFDS split with image decoding skipped: the pipeline decodes after shuffling."""
    import tensorflow_datasets as tfds  # slow to import; only the tfds path needs it

    dataset, info = tfds.load(
        name,
        split=split,
        data_dir=data_dir,
        as_supervised=True,
        with_info=True,
        shuffle_files=shuffle_files,
        decoders={"image": tfds.decode.SkipDecoding()},
        read_config=tfds.ReadConfig(
            # We decide about caching ourselves (decoded, when it fits).
            try_autocache=False,
            # TFDS's defaults (16 files at a time in blocks of 16, then an autotuned
            # prefetch) buffer hundreds of encoded images: 20-60 MiB more peak (cassava). The
            # decode map that follows keeps enough examples in flight.
            interleave_cycle_length=4,
            interleave_block_length=1,
            skip_prefetch=True,
        ),
    )
    try:
        num_examples: int | None = int(info.splits[split].num_examples)
    except KeyError:  # split statistics missing (e.g. TFDS mock data): size unknown
        cardinality = int(dataset.cardinality())
        num_examples = cardinality if cardinality >= 0 else None
    return EncodedSplit(
        examples=dataset,
        num_examples=num_examples,
        num_classes=int(info.features["label"].num_classes),
        identity=f"tfds-{name}-{info.version}-{split}-{data_dir or 'default'}",
    )


_SYNTHETIC_CLASS_SEED = 20210601


def synthetic_class_colours(num_classes: int) -> np.ndarray:
    """The mean colour of each synthetic class, shared by all splits."""
    rng = np.random.default_rng(_SYNTHETIC_CLASS_SEED)
    return rng.integers(40, 216, size=(num_classes, 3)).astype(np.float32)


def synthetic_split(
    *, num_examples: int, num_classes: int, image_size: int, seed: int
) -> EncodedSplit:
    """Generated JPEGs of the right shape with a learnable class signal; no network.

    Each class has its own mean colour under heavy noise, so accuracy moves with the
    hyperparameters (useful for tuning demos) while staying far from trivial. The class
    colours are the same in every split (only labels and noise follow ``seed``): a
    validation split with colours of its own would measure nothing.
    """
    palette = synthetic_class_colours(num_classes)
    rng = np.random.default_rng(seed)
    labels = np.arange(num_examples, dtype=np.int64) % num_classes
    rng.shuffle(labels)
    encoded = []
    for label in labels:
        noise = rng.normal(0.0, 48.0, size=(image_size, image_size, 3))
        pixels = np.clip(palette[label] + noise, 0, 255).astype(np.uint8)
        encoded.append(tf.io.encode_jpeg(pixels, quality=90).numpy())
    examples = tf.data.Dataset.from_tensor_slices((encoded, labels))
    identity = f"synthetic-{num_classes}classes-{image_size}px-seed{seed}"
    return EncodedSplit(examples, num_examples, num_classes, identity)
