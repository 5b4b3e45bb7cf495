"""What the local backend does with each field of a job body, by the real protos' fields.

``LOCAL_SUPPORT`` classifies every field of ``CustomJob`` and ``HyperparameterTuningJob``
the local backend can meet, by its proto name (``<Message>.<field>``) in
``google.cloud.aiplatform.v1``; a field inside a refused or ignored one is never met:

- HONOURED: run as Vertex runs it (see ``environment`` for the replica environment).
- APPROXIMATED: run, but not exactly as Vertex would (the reason is logged once). An unset
  ``studySpec.algorithm`` is Vertex's Bayesian search, Optuna's TPE here.
- IGNORED: only matters on Google Cloud (networking, identity, encryption, VM
  provisioning) or is output only; one info line lists the ones a body sets.
- REFUSED: the job needs what this machine cannot give it; refused before any process
  starts, naming the field and saying it runs on Vertex only.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.cloud.aiplatform_v1 import AcceleratorType
from google.protobuf.message import Message

from vertex_training.jobs.backends.base import JobRefusedError
from vertex_training.jobs.protos import BodyParseError, JobMessage, parse_body
from vertex_training.jobs.records import JobKind

_log = logging.getLogger(__name__)


class Support(enum.Enum):
    HONOURED = "honoured"
    APPROXIMATED = "approximated"
    IGNORED = "ignored"
    REFUSED = "refused"


@dataclass(frozen=True)
class FieldSupport:
    support: Support
    why: str = ""


def _names(text: str) -> list[str]:
    """``Message.field`` entries split by ``;``, ``Message.{a b c}`` for several fields."""
    out = []
    for entry in text.split(";"):
        message, _, fields = entry.strip().partition(".{")
        out += [f"{message}.{f}" for f in fields.rstrip("}").split()] if fields else [message]
    return out


_OUTPUT = "name state create_time start_time end_time update_time error satisfies_pzs satisfies_pzi"
_PARAM = "StudySpec.ParameterSpec"
_CONDITION = f"{_PARAM}.ConditionalParameterSpec"
_HONOURED = (
    "CustomJob.{display_name labels job_spec};"
    "HyperparameterTuningJob.{display_name labels study_spec trial_job_spec max_trial_count"
    " parallel_trial_count max_failed_trial_count};"
    "CustomJobSpec.{worker_pool_specs scheduling base_output_directory};"
    "GcsDestination.output_uri_prefix;"
    "WorkerPoolSpec.{container_spec machine_spec replica_count};"
    "ContainerSpec.{image_uri command args env};"
    "EnvVar.{name value};"
    "MachineSpec.{accelerator_type accelerator_count};"
    "Scheduling.timeout;"
    "StudySpec.{metrics parameters algorithm measurement_selection_type"
    " median_automated_stopping_spec};"
    "StudySpec.MetricSpec.{metric_id goal};"
    f"{_PARAM}.{{parameter_id scale_type conditional_parameter_specs double_value_spec"
    " integer_value_spec categorical_value_spec discrete_value_spec};"
    f"{_PARAM}.DoubleValueSpec.{{min_value max_value}};"
    f"{_PARAM}.IntegerValueSpec.{{min_value max_value}};"
    f"{_PARAM}.CategoricalValueSpec.values;"
    f"{_PARAM}.DiscreteValueSpec.values;"
    f"{_CONDITION}.{{parameter_spec parent_discrete_values parent_int_values"
    " parent_categorical_values};"
    f"{_CONDITION}.DiscreteValueCondition.values;"
    f"{_CONDITION}.IntValueCondition.values;"
    f"{_CONDITION}.CategoricalValueCondition.values"
)
_WHY: dict[Support, dict[str, str]] = {
    Support.IGNORED: {
        "output only": (
            f"CustomJob.{{{_OUTPUT} web_access_uris}};HyperparameterTuningJob.{{{_OUTPUT} trials}}"
        ),
        "customer-managed encryption keys are a cloud feature": (
            "CustomJob.encryption_spec; HyperparameterTuningJob.encryption_spec"
        ),
        "only matters on Google Cloud": (
            "CustomJobSpec.{network reserved_ip_ranges protected_artifact_location_id"
            " enable_web_access enable_dashboard_access models};"
            "Scheduling.{restart_job_on_worker_restart disable_retries max_wait_duration}"
        ),
        "replicas run as you here": "CustomJobSpec.service_account",
        "Vertex Experiments live in Vertex ML Metadata": (
            "CustomJobSpec.{experiment experiment_run}"
        ),
        "replicas use this machine's disk": "WorkerPoolSpec.disk_spec",
        "replicas share this machine's CPUs": "MachineSpec.machine_type",
        "Spot and Flex-start are ways to get Vertex VMs": "Scheduling.strategy",
    },
    Support.APPROXIMATED: {
        "no upload to a Vertex TensorBoard: the event files stay in AIP_TENSORBOARD_LOG_DIR "
        "under the output directory, which `make tensorboard STACK=local` serves": (
            "CustomJobSpec.tensorboard"
        ),
        "safety metrics are not tracked locally": (
            "StudySpec.MetricSpec.safety_config; StudySpec.MetricSpec.SafetyMetricConfig."
            "{safety_threshold desired_min_safe_trials_fraction}"
        ),
        "a hint to Vertex's search algorithm": "StudySpec.observation_noise",
        "median stopping compares trials by step locally": (
            "StudySpec.MedianAutomatedStoppingSpec.use_elapsed_duration"
        ),
        "median stopping locally": (
            "StudySpec.{decay_curve_stopping_spec convex_automated_stopping_spec};"
            "StudySpec.DecayCurveAutomatedStoppingSpec.use_elapsed_duration;"
            "StudySpec.ConvexAutomatedStoppingSpec.{max_step_count min_step_count"
            " min_measurement_count learning_rate_parameter_name use_elapsed_duration"
            " update_all_stopped_trials}"
        ),
        "the first local trial is sampled, not taken from the defaults": (
            f"{_PARAM}.DoubleValueSpec.default_value; {_PARAM}.IntegerValueSpec.default_value;"
            f"{_PARAM}.CategoricalValueSpec.default_value; {_PARAM}.DiscreteValueSpec.default_value"
        ),
    },
    Support.REFUSED: {
        "persistent resources are Vertex VMs": "CustomJobSpec.persistent_resource_id",
        "Private Service Connect is a VPC feature": "CustomJobSpec.psc_interface_config",
        "Python packages run in Vertex's prebuilt executor images; use a containerSpec": (
            "WorkerPoolSpec.python_package_spec"
        ),
        "NFS shares are mounted on Vertex VMs": "WorkerPoolSpec.nfs_mounts",
        "Lustre file systems are mounted on Vertex VMs": "WorkerPoolSpec.lustre_mounts",
        "TPUs exist on Google Cloud only": "MachineSpec.tpu_topology",
        "GPU partitions are made on Vertex VMs": "MachineSpec.gpu_partition_size",
        "reservations are Compute Engine capacity": "MachineSpec.reservation_affinity",
        "study stopping rules are Vertex Vizier's": "StudySpec.study_stopping_config",
    },
}
LOCAL_SUPPORT: Mapping[str, FieldSupport] = {
    **{name: FieldSupport(Support.HONOURED) for name in _names(_HONOURED)},
    **{
        name: FieldSupport(support, why)
        for support, reasons in _WHY.items()
        for why, names in reasons.items()
        for name in _names(names)
    },
}
"""How the local backend treats each field (see the module docstring)."""


def _walk(message: Message, path: str, found: dict[Support, list[str]]) -> None:
    """Classify every field ``message`` sets, down through the fields the backend runs."""
    for descriptor, value in message.ListFields():
        field_path = f"{path}.{descriptor.json_name}" if path else descriptor.json_name
        owner = descriptor.containing_type.full_name.removeprefix("google.cloud.aiplatform.v1.")
        support = LOCAL_SUPPORT.get(f"{owner}.{descriptor.name}")
        if support is None:
            found[Support.REFUSED].append(
                f"{field_path}: the local backend does not know this field yet"
            )
            continue
        if support.support is Support.REFUSED:
            found[Support.REFUSED].append(f"{field_path}: {support.why}; it runs on Vertex only")
            continue
        if support.support is Support.IGNORED:
            found[Support.IGNORED].append(field_path)
            continue
        if support.support is Support.APPROXIMATED:
            found[Support.APPROXIMATED].append(f"{field_path} ({support.why})")
        if descriptor.full_name == "google.cloud.aiplatform.v1.MachineSpec.accelerator_type":
            name = AcceleratorType(value).name
            if name.startswith("TPU"):
                found[Support.REFUSED].append(
                    f"{field_path}: {name} is a TPU; TPUs exist on Google Cloud only; "
                    "it runs on Vertex only"
                )
        nested = descriptor.message_type
        if (
            nested is None
            or nested.GetOptions().map_entry
            or not nested.full_name.startswith("google.cloud.aiplatform.")
        ):
            continue  # a scalar, a map (labels), or a well-known type (Duration)
        repeated = descriptor.label == descriptor.LABEL_REPEATED
        for i, item in enumerate(value if repeated else [value]):
            _walk(item, f"{field_path}[{i}]" if repeated else field_path, found)


def _found(message: JobMessage) -> dict[Support, list[str]]:
    """What ``message`` sets that is refused, ignored or approximated here, by support."""
    found: dict[Support, list[str]] = {support: [] for support in Support}
    _walk(type(message).pb(message), "", found)
    return found


def local_refusals(kind: JobKind, body: Mapping[str, Any]) -> list[str]:
    """What in a readable body only Vertex has, each naming its API path (empty: this
    machine can run it, or the body is no valid message, which the protos report). The
    provider's ``check`` reports these at preview."""
    try:
        return _found(parse_body(kind, body))[Support.REFUSED]
    except BodyParseError:
        return []


def check_local_support(message: JobMessage) -> None:
    """Refuse a job that needs what only Vertex has; log what is ignored or approximated."""
    found = _found(message)
    if refused := found[Support.REFUSED]:
        raise JobRefusedError("the local backend cannot run this job: " + "; ".join(refused))
    if ignored := found[Support.IGNORED]:
        _log.info(
            "the local backend ignores what only matters on Google Cloud: %s", ", ".join(ignored)
        )
    if approximated := found[Support.APPROXIMATED]:
        _log.info("the local backend approximates: %s", "; ".join(approximated))


__all__ = ["LOCAL_SUPPORT", "FieldSupport", "Support", "check_local_support", "local_refusals"]
