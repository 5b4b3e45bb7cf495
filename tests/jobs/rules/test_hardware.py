"""The hardware catalog and its rules: known-wrong is an error, unknown is a warning."""

from __future__ import annotations

import copy
import json
import re
from functools import partial

import pytest

from tests import modules_loaded_by
from vertex_training.findings import Finding, render
from vertex_training.jobs.rules.catalog import CATALOG_PATH, CatalogError, catalog, parse_catalog
from vertex_training.jobs.rules.hardware import check_machine_spec, check_region, check_zone

SPEC = "jobSpec.workerPoolSpecs[1].machineSpec"

# The table of seeds/004 ("Jumlah GPU yang valid untuk setiap jenis mesin"), typed in again
# with its empty cells as '-' so that this test does not read the data it checks.
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
PROBE_COUNTS = (1, 2, 3, 4, 8, 16)


def _seed_cells() -> list[tuple[str, str, frozenset[int]]]:
    header, *rows = [line.split() for line in SEED_TABLE.strip().splitlines()]
    cells = []
    for machine, *counts in rows:
        for column, cell in zip(header[1:], counts, strict=True):
            allowed = frozenset() if cell == "-" else frozenset(int(c) for c in cell.split(","))
            cells.append((machine, COLUMNS[column], allowed))
    return cells


SEED_CELLS = _seed_cells()


_spec = partial(check_machine_spec, SPEC)


def _errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def _only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


# --- the seed table, row by row --------------------------------------------------------


@pytest.mark.parametrize(("machine", "gpu", "allowed"), SEED_CELLS)
def test_every_seed_cell_accepts_its_counts_and_refuses_others(
    machine: str, gpu: str, allowed: frozenset[int]
) -> None:
    for count in PROBE_COUNTS:
        findings = _spec(machine, gpu, count)
        if gpu == "NVIDIA_TESLA_K80":
            # Valid in the seed, retired since: refused at any count, saying so (issue 22).
            (error,) = findings
            assert error.severity == "error"
            assert "end of support" in error.message
        elif count in allowed:
            assert findings == [], (machine, gpu, count)
        else:
            assert _errors(findings), (machine, gpu, count)


@pytest.mark.parametrize("machine", sorted({m for m, _, _ in SEED_CELLS}))
def test_every_seed_machine_runs_without_accelerator_unless_gpus_are_built_in(
    machine: str,
) -> None:
    findings = _spec(machine)
    if machine.startswith("a2-"):
        error = _only(findings)
        assert error.severity == "error"
        assert error.path == f"{SPEC}.acceleratorType"
        assert "NVIDIA_TESLA_A100" in error.message
    else:
        assert findings == []


# --- must accept ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("machine", "accelerator", "count", "topology"),
    [
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8, None),
        ("a4-highgpu-8g", "NVIDIA_B200", 8, None),
        ("a4x-highgpu-4g", "NVIDIA_GB200", 4, None),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000", 1, None),
        ("g4-standard-96", "NVIDIA_RTX_PRO_6000", 2, None),
        ("g4-standard-192", "NVIDIA_RTX_PRO_6000", 4, None),
        ("g4-standard-384", "NVIDIA_RTX_PRO_6000", 8, None),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8, None),
        ("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8, None),
        ("a2-ultragpu-8g", "NVIDIA_A100_80GB", 8, None),
        ("g2-standard-24", "NVIDIA_L4", 2, None),
        ("g2-standard-96", "NVIDIA_L4", 8, None),
        ("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "2x2"),
        ("ct5lp-hightpu-1t", "TPU_V5_LITEPOD", 1, "1x1"),
        ("ct5lp-hightpu-8t", "TPU_V5_LITEPOD", 8, "2x4"),
        ("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "16x16"),
        ("ct5p-hightpu-4t", None, 0, "2x2x1"),
        ("ct6e-standard-4t", None, 0, "4x4"),
        ("ct6e-standard-8t", None, 0, "2x4"),
        ("cloud-tpu", "TPU_V3", 8, None),
        ("n1-standard-4", "ACCELERATOR_TYPE_UNSPECIFIED", 0, None),
        ("e2-standard-4", None, 0, None),
        ("n2-highmem-80", None, 0, None),
        ("c2-standard-60", None, 0, None),
        ("m1-ultramem-160", None, 0, None),
    ],
)
def test_accepts_current_machines(
    machine: str, accelerator: str | None, count: int, topology: str | None
) -> None:
    assert _spec(machine, accelerator, count, topology) == []


def test_count_zero_with_a_type_set_is_refused() -> None:
    # Vertex refuses acceleratorCount 0 with an acceleratorType, whatever the catalog says.
    error = _only(_spec("n1-standard-8", "NVIDIA_TESLA_T4", 0))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.acceleratorCount"
    assert "0 x NVIDIA_TESLA_T4 on n1-standard-8 is not valid" in error.message
    assert error.message.endswith("or unset acceleratorType for no accelerator")


@pytest.mark.parametrize(
    ("machine", "accelerator"),
    [
        ("a2-highgpu-1g", "NVIDIA_TESLA_A100"),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB"),
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB"),
        ("a4-highgpu-8g", "NVIDIA_B200"),
        ("a4x-highgpu-4g", "NVIDIA_GB200"),
        ("g2-standard-8", "NVIDIA_L4"),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000"),
    ],
)
def test_gpu_built_in_machine_without_its_accelerator_is_refused(
    machine: str, accelerator: str
) -> None:
    error = _only(_spec(machine))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.acceleratorType"
    assert accelerator in error.message


# --- must refuse ----------------------------------------------------------------------


def test_unknown_size_of_a_known_family_is_refused_with_the_valid_sizes() -> None:
    error = _only(_spec("n1-standard-5"))
    assert error == Finding(
        f"{SPEC}.machineType",
        "'n1-standard-5' is not a Vertex machine type; valid: n1-standard-{4,8,16,32,64,96}",
        "error",
        "machine-type:n1-standard-5",
    )
    assert render(error, "message").endswith("96} (check machine-type:n1-standard-5)")
    assert render(_only(_spec("n1-standard-5", target="workbench")), "message").endswith(
        "valid: n1-standard-{1,2,4,8,16,32,64,96} (check machine-type:n1-standard-5)"
    )


def test_compute_engine_size_vertex_does_not_train_on_is_refused_for_vertex_only() -> None:
    error = _only(_spec("n1-standard-2"))
    assert error.severity == "error"
    assert "exists on Compute Engine but Vertex training does not offer it" in error.message
    assert _spec("n1-standard-2", target="workbench") == []


@pytest.mark.parametrize("target", ["training", "workbench"])
def test_eight_t4_on_n1_standard_8_is_refused(target: str) -> None:
    error = _only(_spec("n1-standard-8", "NVIDIA_TESLA_T4", 8, target=target))
    assert error == Finding(
        f"{SPEC}.acceleratorCount",
        "8 x NVIDIA_TESLA_T4 on n1-standard-8 is not valid; valid counts: 1, 2, 4",
        "error",
        "accelerator-count:NVIDIA_TESLA_T4x8@n1-standard-8",
    )


@pytest.mark.parametrize("target", ["training", "workbench"])
def test_two_a100_on_a2_highgpu_1g_is_refused(target: str) -> None:
    error = _only(_spec("a2-highgpu-1g", "NVIDIA_TESLA_A100", 2, target=target))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.acceleratorCount"
    assert "valid counts: 1 (check accelerator-count:" in render(error, "message")


def test_gpu_on_a_machine_that_takes_none_names_the_machines_it_goes_with() -> None:
    error = _only(_spec("e2-standard-8", "NVIDIA_TESLA_T4", 1))
    assert error.severity == "error"
    assert error.message.startswith("e2-standard-8 takes no accelerators")
    assert "n1-standard-{4,8,16,32,64,96}" in error.message


def test_a100_never_attaches_to_n1() -> None:
    error = _only(_spec("n1-standard-16", "NVIDIA_TESLA_A100", 1))
    assert error.severity == "error"
    assert "does not take NVIDIA_TESLA_A100" in error.message
    assert "a2-highgpu-" in error.message


def test_wrong_gpu_on_a_gpu_built_in_machine_is_refused() -> None:
    error = _only(_spec("a3-ultragpu-8g", "NVIDIA_H100_80GB", 8))
    assert error.severity == "error"
    assert "it takes NVIDIA_H200_141GB x 8" in error.message


def test_count_without_type_is_refused() -> None:
    error = _only(_spec("n1-standard-8", None, 2))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.acceleratorCount"


# --- workbench: Compute Engine's attach limits -----------------------------------------


def test_workbench_follows_compute_engine_vcpu_limits_not_the_vertex_table() -> None:
    # Compute Engine: one T4 allows up to 48 vCPUs; Vertex's table lists 2 and 4 only.
    assert _spec("n1-standard-32", "NVIDIA_TESLA_T4", 1, target="workbench") == []
    assert _errors(_spec("n1-standard-32", "NVIDIA_TESLA_T4", 1))
    # 96 vCPUs need four T4s on Compute Engine.
    error = _only(_spec("n1-standard-96", "NVIDIA_TESLA_T4", 1, target="workbench"))
    assert "valid counts: 4 (check accelerator-count:" in render(error, "message")
    # One V100 allows at most 12 vCPUs.
    assert _errors(_spec("n1-standard-16", "NVIDIA_TESLA_V100", 1, target="workbench"))
    for count in (2, 4, 8):
        assert _spec("n1-standard-16", "NVIDIA_TESLA_V100", count, target="workbench") == []


def test_workbench_refuses_retired_k80_and_tpu_machines() -> None:
    error = _only(_spec("n1-standard-8", "NVIDIA_TESLA_K80", 1, target="workbench"))
    assert error.severity == "error"
    assert "end of support" in error.message
    tpu = _only(_spec("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "2x2", target="workbench"))
    assert tpu.severity == "error"
    # Said as what it is (a TPU host Vertex training offers), not as a typo of a VM family.
    assert tpu.message.startswith(
        "'ct5lp-hightpu-4t' is a TPU machine type, which Vertex training offers and Compute "
        "Engine VMs are not; families: a2, "
    )


# --- unknown versus malformed; strict --------------------------------------------------


@pytest.mark.parametrize("machine", ["gpu-large", "x9-standard-8", "n9-superfast-4"])
def test_a_machine_of_no_family_is_refused(machine: str) -> None:
    # The catalog's machine types name every family Vertex has: no family, no machine.
    error = _only(_spec(machine))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.machineType"
    assert re.search(
        r"hardware catalog of \d{4}-\d{2}-\d{2}\) \(check unknown-family:\w+\)$",
        render(error, "message"),
    )
    assert f"{machine!r} matches no Vertex machine family" in error.message


@pytest.mark.parametrize("machine", ["Has Spaces", "N1-STANDARD-8", "n1", "n1_standard_8", "-n1-x"])
def test_malformed_machine_type_is_an_error(machine: str) -> None:
    error = _only(_spec(machine))
    assert error.severity == "error"
    assert "not a machine type name" in error.message


def test_an_accelerator_that_is_no_accelerator_type_is_refused() -> None:
    # The catalog holds every AcceleratorType the API has (tests/jobs/test_protos.py).
    error = _only(_spec("n1-standard-8", "NVIDIA_TESLA_Z9", 1))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.acceleratorType"
    assert error.message.startswith("'NVIDIA_TESLA_Z9' is not an AcceleratorType")
    spelt = _only(_spec("n1-standard-8", "nvidia-tesla-t4", 1))
    assert spelt.severity == "error"
    assert "(did you mean 'NVIDIA_TESLA_T4'?)" in spelt.message


def test_family_not_known_complete_warns_on_unlisted_sizes() -> None:
    assert _spec("c2d-standard-56") == []
    assert _only(_spec("c2d-standard-3")).severity == "warning"


# --- TPU topologies --------------------------------------------------------------------


def test_tpu_topologies() -> None:
    error = _only(_spec("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "3x3"))
    assert error.severity == "error"
    assert error.path == f"{SPEC}.tpuTopology"
    assert "2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16" in error.message
    assert _only(_spec("ct5lp-hightpu-8t", "TPU_V5_LITEPOD", 8, "2x2")).severity == "error"
    # v5p allows shapes the catalog does not list: a warning.
    assert _only(_spec("ct5p-hightpu-4t", None, 0, "4x4x12")).severity == "warning"
    assert _only(_spec("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, "2by2")).severity == "error"
    assert _only(_spec("n1-standard-8", None, 0, "2x2")).severity == "error"
    assert _only(_spec("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4)).severity == "warning"
    assert _spec("ct5lp-hightpu-1t", "TPU_V5_LITEPOD", 1) == []
    assert _only(_spec("cloud-tpu", "TPU_V2", 8, "2x2")).severity == "error"


# --- regions and zones -----------------------------------------------------------------


def _pools(*accelerators: str) -> list[tuple[str, str]]:
    """What ``check_region`` reads of a CustomJob's pools: each one's machineSpec path and
    its accelerator type."""
    return [(f"jobSpec.workerPoolSpecs[{i}].machineSpec", a) for i, a in enumerate(accelerators)]


@pytest.mark.parametrize(
    "region",
    ["us-central1", "us-east4", "us-east5", "us-west1", "europe-west4", "asia-southeast1"],
)
def test_h100_regions(region: str) -> None:
    assert check_region(region, _pools("NVIDIA_H100_80GB")) == []


def test_seed_example_gpus_not_sharing_a_zone_are_refused() -> None:
    pools = _pools("NVIDIA_TESLA_T4", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100")
    error = _only(check_region("us-central1", pools))
    assert error.severity == "error"
    assert error.path == "region"
    assert "no single zone offers them together" in error.message
    # Any two of them do share a zone.
    for pair in ([pools[0], pools[1]], [pools[0], pools[2]]):
        assert check_region("us-central1", pair) == []


def test_gpu_not_offered_in_region_is_refused_on_the_pool() -> None:
    pools = _pools("NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100")
    error = _only(check_region("us-west2", pools))
    assert error.severity == "error"
    assert error.path == "jobSpec.workerPoolSpecs[1].machineSpec.acceleratorType"
    assert "regions offering NVIDIA_TESLA_V100: asia-east1" in error.message


def test_gpu_with_a_partial_region_list_only_warns_outside_it() -> None:
    pools = [("p", "NVIDIA_B200")]
    warning = _only(check_region("europe-west2", pools))
    assert warning.severity == "warning"
    # Strict mode too: a partial list cannot show that the pair is wrong (issue 22).
    assert _only(check_region("europe-west2", pools, strict=True)).severity == "warning"


def test_region_without_accelerators_and_unknown_or_malformed_regions() -> None:
    assert check_region("europe-west9", []) == []
    assert check_region("us-central1", [("p", None)]) == []
    unknown = _only(check_region("mars-north1", []))
    assert unknown.severity == "warning"
    assert catalog().as_of in unknown.message
    strict = check_region("mars-north1", [], strict=True)
    assert _only(strict).severity == "error"
    assert _only(check_region("US Central", [])).severity == "error"


def test_zones() -> None:
    error = _only(check_zone(path="zone", zone="us-central1-z"))
    assert error.severity == "error"
    assert "us-central1-a, us-central1-b, us-central1-c, us-central1-f" in error.message
    # A region the catalog does not list is check_region's to judge (above), once.
    assert check_zone(path="zone", zone="mars-north1-a") == []
    assert check_zone(path="zone", zone="us-central1-c", accelerator_type="NVIDIA_TESLA_P100") == []
    refused = _only(
        check_zone(path="zone", zone="us-central1-b", accelerator_type="NVIDIA_TESLA_P100")
    )
    assert refused.severity == "error"
    assert "us-central1-c, us-central1-f" in refused.message
    assert (
        _only(
            check_zone(path="zone", zone="us-west2-a", accelerator_type="NVIDIA_TESLA_V100")
        ).severity
        == "error"
    )
    assert check_zone(path="zone", zone="europe-west4-b", accelerator_type="NVIDIA_L4") == []


# --- the data file ---------------------------------------------------------------------


def _data() -> dict:
    return json.loads(CATALOG_PATH.read_text(encoding="utf-8"))


def _sections(data: dict) -> list[tuple[str, dict]]:
    return [
        ("accelerators", data["accelerators"]),
        ("regions", data["regions"]),
        *((f"families.{name}", fam) for name, fam in data["families"].items()),
    ]


def test_every_section_has_an_as_of_date_and_known_sources() -> None:
    data = _data()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["as_of"])
    assert catalog().as_of == data["as_of"]
    for name, section in _sections(data):
        assert section.get("as_of") == data["as_of"], name
        assert section["sources"], name
        assert set(section["sources"]) <= set(data["sources"]), name
    for family in data["families"].values():
        for table in ("vertex_gpu_counts", "workbench_gpu_limits"):
            if table in family:
                assert set(family[table]["sources"]) <= set(data["sources"])


def test_sources_are_google_documentation_pages() -> None:
    for key, source in _data()["sources"].items():
        assert re.fullmatch(r"https://cloud\.google\.com/\S+", source["url"]), key
        assert source["title"], key


def test_catalog_accelerators_exist_in_the_api_enum() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType

    enum_names = set(AcceleratorType.__members__) - {"ACCELERATOR_TYPE_UNSPECIFIED"}
    assert set(catalog().accelerators) <= enum_names
    # Every accelerator-type value of the API is known, so none is reported as "unknown".
    assert enum_names <= set(catalog().accelerators)


def test_machines_and_regions_name_only_catalog_accelerators() -> None:
    cat = catalog()
    for machines in cat.machines.values():
        for machine in machines.values():
            assert set(machine.accelerators) <= set(cat.accelerators), machine.name
    for name, region in cat.regions.items():
        assert region.accelerators <= set(cat.accelerators), name
        assert set(region.zone_accelerators) <= set(region.zones), name
        assert all(z.startswith(f"{name}-") for z in region.zones), name


def test_every_accelerator_is_offered_somewhere_and_attaches_to_something() -> None:
    cat = catalog()
    for name in cat.accelerators:
        assert any(name in r.accelerators for r in cat.regions.values()), name
        assert any(name in m.accelerators for m in cat.machines["training"].values()), name


def test_parse_catalog_refuses_a_file_that_contradicts_itself() -> None:
    data = _data()
    broken = copy.deepcopy(data)
    broken["families"]["a3"]["machines"]["a3-highgpu-8g"]["accelerators"] = {"NVIDIA_X": [8]}
    with pytest.raises(CatalogError, match="unknown accelerators"):
        parse_catalog(broken)
    broken = copy.deepcopy(data)
    broken["regions"]["items"]["us-west2"]["accelerators"].append("NVIDIA_X")
    with pytest.raises(CatalogError, match="region us-west2"):
        parse_catalog(broken)


def test_loading_imports_no_heavy_module() -> None:
    program = (
        "from vertex_training.jobs.rules import hardware\n"
        "hardware.catalog()\n"
        "hardware.check_machine_spec(path='p', machine_type='a3-ultragpu-8g',"
        " accelerator_type='NVIDIA_H200_141GB', accelerator_count=8)\n"
        "hardware.check_region('us-central1', [('p', 'NVIDIA_L4')])\n"
    )
    heavy = ("tensorflow", "google.cloud.aiplatform", "pydantic", "pulumi")
    assert modules_loaded_by(program, heavy) == []
