"""The plain-Python REST form: its Vertex schema tables, what it refuses, and that the
Pulumi program never imports ``aiplatform_v1`` (its ~0.6 s import is the point)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as v1
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor

from tests.jobs import samples
from vertex_training.jobs.backends import BackendKind, BackendSettings
from vertex_training.jobs.resources import JobProvider
from vertex_training.jobs.rest import (
    ENUMS,
    KNOWN_FIELDS,
    ONEOFS,
    ConversionError,
    SpecJsonError,
    _snake,
    console_url,
    spec_from_json,
    spec_to_json,
)
from vertex_training.jobs.spec import JobKind

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "google.cloud.aiplatform.v1."


def _descriptor(name: str) -> Descriptor:
    pool = v1.CustomJob.pb().DESCRIPTOR.file.pool
    return pool.FindMessageTypeByName(PACKAGE + name)


@pytest.mark.parametrize("message", sorted(KNOWN_FIELDS))
def test_known_fields_are_the_pinned_vertex_fields(message: str) -> None:
    fields = sorted(_descriptor(message).fields, key=lambda f: f.number)
    assert KNOWN_FIELDS[message] == tuple(f.json_name for f in fields)
    # The snake_case aliases ParseDict also accepts are the proto field names.
    assert [_snake(f.json_name) for f in fields] == [f.name for f in fields]


@pytest.mark.parametrize("message", sorted(ONEOFS))
def test_oneofs_are_the_pinned_vertex_oneofs(message: str) -> None:
    real = [
        tuple(f.json_name for f in oneof.fields)
        for oneof in _descriptor(message).oneofs
        if len(oneof.fields) > 1  # single-field oneofs are proto3 `optional`
    ]
    assert sorted(ONEOFS[message]) == sorted(real[0]) and len(real) == 1


@pytest.mark.parametrize("enum", sorted(ENUMS))
def test_enums_are_the_pinned_vertex_enums(enum: str) -> None:
    pool = v1.CustomJob.pb().DESCRIPTOR.file.pool
    real = pool.FindEnumTypeByName(PACKAGE + enum)
    assert ENUMS[enum] == {value.name: value.number for value in real.values}


def _cassava() -> dict[str, Any]:
    return copy.deepcopy(spec_to_json(samples.cassava()))


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda d: d.update(bogus=1), "bogus: CustomJob has no field 'bogus'"),
        (
            lambda d: d["jobSpec"]["workerPoolSpecs"][1]["machineSpec"].update(gpus=2),
            "jobSpec.workerPoolSpecs[1].machineSpec.gpus: MachineSpec has no field 'gpus'",
        ),
        (
            lambda d: d["jobSpec"]["scheduling"].update(timeout=3600),
            "jobSpec.scheduling.timeout: expected a string",
        ),
        (
            lambda d: d["jobSpec"]["workerPoolSpecs"][0].update(replicaCount="1.5"),
            "jobSpec.workerPoolSpecs[0].replicaCount: expected an integer",
        ),
        (
            lambda d: d["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(
                acceleratorType="NVIDIA_TESLA_V1000"
            ),
            "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType: 'NVIDIA_TESLA_V1000' is "
            "not a valid AcceleratorType",
        ),
        (lambda d: d.update(labels=["a"]), "labels: expected a JSON object"),
        (
            lambda d: d["jobSpec"].update(workerPoolSpecs={}),
            "jobSpec.workerPoolSpecs: expected a JSON list",
        ),
        (
            lambda d: d.update(display_name="again"),
            "displayName: given twice (as 'displayName' and 'display_name')",
        ),
    ],
)
def test_refuses_what_parse_dict_refuses_naming_the_field(edit: Any, where: str) -> None:
    data = _cassava()
    edit(data)
    with pytest.raises(SpecJsonError) as error:
        spec_from_json(JobKind.CUSTOM_JOB, data)
    assert str(error.value).startswith(where)
    if "twice" not in where:  # ParseDict lets the later of two spellings win
        with pytest.raises(json_format.ParseError):
            json_format.ParseDict(data, v1.CustomJob.pb(v1.CustomJob()))


def test_refuses_two_members_of_a_oneof() -> None:
    data = spec_to_json(samples.horses_or_humans())
    data["studySpec"]["parameters"][0]["integerValueSpec"] = {"maxValue": "3"}
    with pytest.raises(SpecJsonError, match=r"studySpec\.parameters\[0\]: \['doubleValueSpec'"):
        spec_from_json(JobKind.HYPERPARAMETER_TUNING_JOB, data)


def test_reads_what_parse_dict_reads() -> None:
    """Proto field names, nulls, numbers as floats or strings, enums by number, read-only
    fields: the same spec as from the canonical form."""
    data = _cassava()
    pool = data["jobSpec"]["workerPoolSpecs"][0]
    pool["replica_count"] = 1.0  # numbers come back from the engine as floats
    del pool["replicaCount"]
    pool["machineSpec"]["acceleratorCount"] = "1"
    pool["machineSpec"]["acceleratorType"] = 3  # NVIDIA_TESLA_V100
    pool["diskSpec"]["bootDiskSizeGb"] = 100.0
    data["jobSpec"]["scheduling"]["strategy"] = "ON_DEMAND"  # the old name of STANDARD
    data["jobSpec"]["network"] = None
    data.update(name="projects/p/locations/l/customJobs/1", state="JOB_STATE_RUNNING")
    expected = samples.cassava()
    assert spec_from_json(JobKind.CUSTOM_JOB, data) == expected
    message = v1.CustomJob()
    json_format.ParseDict(data, v1.CustomJob.pb(message))
    canonical = json_format.MessageToDict(v1.CustomJob.pb(message))
    assert spec_from_json(JobKind.CUSTOM_JOB, canonical) == expected


def test_a_python_package_pool_is_not_a_spec() -> None:
    data = _cassava()
    pool = data["jobSpec"]["workerPoolSpecs"][1]
    del pool["containerSpec"]
    pool["pythonPackageSpec"] = {"executorImageUri": "gcr.io/x/y", "pythonModule": "m"}
    with pytest.raises(ConversionError, match="custom containers only"):
        spec_from_json(JobKind.CUSTOM_JOB, data)


def test_check_names_the_unknown_field() -> None:
    backend = BackendSettings(BackendKind.VERTEX, project="p", location="us-central1")
    spec = _cassava()
    spec["jobSpec"]["serviceAcount"] = "typo@p.iam.gserviceaccount.com"
    news = {"spec": spec, "backend": backend.to_props(), "identity": "proj/dev/jobs-cassava"}
    result = JobProvider(JobKind.CUSTOM_JOB).check({}, news)
    assert [(f.property, f.reason) for f in result.failures or []] == [
        (
            "spec",
            "not a Vertex job spec: jobSpec.serviceAcount: CustomJobSpec has no field "
            f"'serviceAcount'; its fields: {list(KNOWN_FIELDS['CustomJobSpec'])}",
        )
    ]


def test_console_url() -> None:
    assert console_url("projects/p/locations/us-central1/customJobs/123") == (
        "https://console.cloud.google.com/vertex-ai/training/custom-jobs/123"
        "?project=p&region=us-central1"
    )
    assert console_url("not/a/name") == ""


def test_the_program_never_imports_aiplatform() -> None:
    """aiplatform_v1 loads every Vertex service (~0.6 s): only the vertex backend may."""
    code = (
        "import sys\n"
        "import vertex_training.jobs.program, vertex_training.jobs.resources\n"
        "import vertex_training.jobs.declarations\n"
        "import vertex_training.jobs.backends, vertex_training.stack.config\n"
        "import vertex_training.platform.build, vertex_training.local.jobs\n"
        "print(sorted(m for m in sys.modules if m.startswith('google.cloud.aiplatform')))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"
