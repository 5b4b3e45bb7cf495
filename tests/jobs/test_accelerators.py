"""The GPU rules: the seed's compatibility table row by row, the newer families, regions."""

from __future__ import annotations

import pytest

from vertex_training.jobs.accelerators import (
    ACCELERATOR_COUNTS,
    GPU_REGIONS,
    AcceleratorError,
    accelerator_counts_allowed,
    check_machine,
    check_region,
)

# The table of seeds/004 ("Jumlah GPU yang valid untuk setiap jenis mesin"), typed in again
# with its empty cells as '-' so that this test does not read the code it checks.
SEED_TABLE = """
machine          A100     K80      P4     P100   T4     V100
n1-standard-4    -        1,2,4,8  1,2,4  1,2,4  1,2,4  1,2,4,8
n1-standard-8    -        1,2,4,8  1,2,4  1,2,4  1,2,4  1,2,4,8
n1-standard-16   -        2,4,8    1,2,4  1,2,4  1,2,4  2,4,8
n1-standard-32   -        4,8      2,4    2,4    2,4    4,8
n1-standard-64   -        -        4      -      4      8
n1-standard-96   -        -        4      -      4      8
n1-highmem-2     -        1,2,4,8  1,2,4  1,2,4  1,2,4  1,2,4,8
n1-highmem-4     -        1,2,4,8  1,2,4  1,2,4  1,2,4  1,2,4,8
n1-highmem-8     -        1,2,4,8  1,2,4  1,2,4  1,2,4  1,2,4,8
n1-highmem-16    -        2,4,8    1,2,4  1,2,4  1,2,4  2,4,8
n1-highmem-32    -        4,8      2,4    2,4    2,4    4,8
n1-highmem-64    -        -        4      -      4      8
n1-highmem-96    -        -        4      -      4      8
n1-highcpu-16    -        2,4,8    1,2,4  1,2,4  1,2,4  2,4,8
n1-highcpu-32    -        4,8      2,4    2,4    2,4    4,8
n1-highcpu-64    -        8        4      4      4      8
n1-highcpu-96    -        -        4      -      4      8
a2-highgpu-1g    1        -        -      -      -      -
a2-highgpu-2g    2        -        -      -      -      -
a2-highgpu-4g    4        -        -      -      -      -
a2-highgpu-8g    8        -        -      -      -      -
a2-megagpu-16g   16       -        -      -      -      -
"""
COLUMNS = {
    "A100": "NVIDIA_TESLA_A100",
    "K80": "NVIDIA_TESLA_K80",
    "P4": "NVIDIA_TESLA_P4",
    "P100": "NVIDIA_TESLA_P100",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}


def _seed_rows() -> list[tuple[str, str, frozenset[int]]]:
    header, *rows = [line.split() for line in SEED_TABLE.strip().splitlines()]
    cells = []
    for machine, *counts in rows:
        for column, cell in zip(header[1:], counts, strict=True):
            allowed = frozenset() if cell == "-" else frozenset(int(c) for c in cell.split(","))
            cells.append((machine, COLUMNS[column], allowed))
    return cells


SEED_CELLS = _seed_rows()


@pytest.mark.parametrize(("machine", "gpu", "allowed"), SEED_CELLS)
def test_seed_table_cell(machine: str, gpu: str, allowed: frozenset[int]) -> None:
    assert accelerator_counts_allowed(machine, gpu) == allowed
    for count in range(1, 17):
        if count in allowed:
            check_machine(machine, gpu, count)
        else:
            with pytest.raises(AcceleratorError):
                check_machine(machine, gpu, count)


def test_every_seed_row_is_in_the_table() -> None:
    machines = {machine for machine, _, _ in SEED_CELLS}
    assert len(machines) == 22
    assert machines <= set(ACCELERATOR_COUNTS)


def test_wrong_count_names_the_valid_counts() -> None:
    with pytest.raises(AcceleratorError, match=r"accelerator_count 3 .* valid counts: 1, 2, 4, 8"):
        check_machine("n1-standard-8", "NVIDIA_TESLA_V100", 3)


def test_a100_only_on_a2() -> None:
    with pytest.raises(AcceleratorError, match="does not take NVIDIA_TESLA_A100"):
        check_machine("n1-standard-8", "NVIDIA_TESLA_A100", 1)
    with pytest.raises(AcceleratorError, match="does not take NVIDIA_TESLA_V100"):
        check_machine("a2-highgpu-1g", "NVIDIA_TESLA_V100", 1)


@pytest.mark.parametrize(
    ("machine", "gpu", "count"),
    [
        ("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1),
        ("a2-ultragpu-8g", "NVIDIA_A100_80GB", 8),
        ("g2-standard-4", "NVIDIA_L4", 1),
        ("g2-standard-24", "NVIDIA_L4", 2),
        ("g2-standard-48", "NVIDIA_L4", 4),
        ("g2-standard-96", "NVIDIA_L4", 8),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
        ("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8),
    ],
)
def test_current_families(machine: str, gpu: str, count: int) -> None:
    check_machine(machine, gpu, count)
    with pytest.raises(AcceleratorError):
        check_machine(machine, gpu, count * 2)


@pytest.mark.parametrize("machine", ["a2-highgpu-1g", "g2-standard-8", "a3-highgpu-8g"])
def test_gpu_families_need_their_gpu(machine: str) -> None:
    with pytest.raises(AcceleratorError, match="comes with GPUs"):
        check_machine(machine, None, 0)


@pytest.mark.parametrize(
    "machine", ["n1-standard-4", "n1-highcpu-8", "e2-standard-4", "c2-standard-8"]
)
def test_cpu_only_machines(machine: str) -> None:
    check_machine(machine, None, 0)


def test_cpu_machine_takes_no_gpu() -> None:
    with pytest.raises(AcceleratorError, match="takes no GPUs; NVIDIA_TESLA_T4 attaches to"):
        check_machine("e2-standard-4", "NVIDIA_TESLA_T4", 1)


def test_count_without_type_and_unknown_type() -> None:
    with pytest.raises(AcceleratorError, match="accelerator_type is unset"):
        check_machine("n1-standard-4", None, 1)
    with pytest.raises(AcceleratorError, match=r"unknown; valid: .*NVIDIA_TESLA_V100"):
        check_machine("n1-standard-4", "NVIDIA_TESLA_V1000", 1)
    with pytest.raises(AcceleratorError, match="not a Compute Engine machine type"):
        check_machine("N1 Standard 4", None, 0)


def test_seed_gpu_regions() -> None:
    assert {
        "us-west1",
        "us-west2",
        "us-central1",
        "us-east1",
        "us-east4",
        "northamerica-northeast1",
        "southamerica-east1",
        "europe-west1",
        "europe-west2",
        "europe-west4",
        "asia-south1",
        "asia-southeast1",
        "asia-east1",
        "asia-northeast1",
        "asia-northeast3",
        "australia-southeast1",
    } == GPU_REGIONS


def test_gpu_types_by_region() -> None:
    check_region("us-central1", {"NVIDIA_TESLA_V100"})
    with pytest.raises(
        AcceleratorError, match="NVIDIA_TESLA_V100 not offered in region 'us-west2'"
    ):
        check_region("us-west2", {"NVIDIA_TESLA_V100"})
    with pytest.raises(AcceleratorError, match="offers no GPUs"):
        check_region("europe-north1", {"NVIDIA_TESLA_T4"})
    check_region("europe-north1", set())  # CPU-only jobs run anywhere


def test_all_gpu_types_of_a_job_share_a_zone() -> None:
    # The seed's own example: each is offered in us-central1, no zone offers all three.
    with pytest.raises(AcceleratorError, match="no single zone"):
        check_region("us-central1", {"NVIDIA_TESLA_T4", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100"})
    check_region("us-central1", {"NVIDIA_TESLA_T4", "NVIDIA_TESLA_P100"})
