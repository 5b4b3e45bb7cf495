"""What the local backend does with each field of a job body.

Every field of ``CustomJob`` and ``HyperparameterTuningJob`` (and of every message under
them) is classified; ``tests/jobs/backends/local/test_capabilities.py`` walks the proto
descriptors and fails on a field that is not, so a newer ``aiplatform`` cannot slip a field
past this table. Fields are named ``<Message>.<proto field>``, with the message name
relative to ``google.cloud.aiplatform.v1``.

- HONOURED: run as Vertex runs it (see ``environment`` for the replica environment).
- APPROXIMATED: run, but not exactly as Vertex would (the reason is logged once).
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

from vertex_training.jobs.backends.base import JobRefusedError
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


H = FieldSupport(Support.HONOURED)


def _ignored(why: str) -> FieldSupport:
    return FieldSupport(Support.IGNORED, why)


def _refused(why: str) -> FieldSupport:
    return FieldSupport(Support.REFUSED, why)


def _approximated(why: str) -> FieldSupport:
    return FieldSupport(Support.APPROXIMATED, why)


_OUTPUT = _ignored("output only")
_CLOUD = _ignored("only matters on Google Cloud")

_STUDY = "StudySpec"
_PARAM = f"{_STUDY}.ParameterSpec"
_COND = f"{_PARAM}.ConditionalParameterSpec"

LOCAL_SUPPORT: Mapping[str, FieldSupport] = {
    # CustomJob / HyperparameterTuningJob
    **{
        f"{job}.{name}": H
        for job in ("CustomJob", "HyperparameterTuningJob")
        for name in ("display_name", "labels")
    },
    **{
        f"{job}.{name}": _OUTPUT
        for job in ("CustomJob", "HyperparameterTuningJob")
        for name in (
            "name",
            "state",
            "create_time",
            "start_time",
            "end_time",
            "update_time",
            "error",
            "satisfies_pzs",
            "satisfies_pzi",
        )
    },
    "CustomJob.job_spec": H,
    "CustomJob.encryption_spec": _ignored("customer-managed encryption keys are a cloud feature"),
    "CustomJob.web_access_uris": _OUTPUT,
    "HyperparameterTuningJob.encryption_spec": _ignored(
        "customer-managed encryption keys are a cloud feature"
    ),
    "HyperparameterTuningJob.study_spec": H,
    "HyperparameterTuningJob.max_trial_count": H,
    "HyperparameterTuningJob.parallel_trial_count": H,
    "HyperparameterTuningJob.max_failed_trial_count": H,
    "HyperparameterTuningJob.trial_job_spec": H,
    "HyperparameterTuningJob.trials": _OUTPUT,
    "EncryptionSpec.kms_key_name": _CLOUD,
    # CustomJobSpec
    "CustomJobSpec.worker_pool_specs": H,
    "CustomJobSpec.scheduling": H,
    "CustomJobSpec.base_output_directory": H,
    "GcsDestination.output_uri_prefix": H,
    "CustomJobSpec.persistent_resource_id": _refused("persistent resources are Vertex VMs"),
    "CustomJobSpec.psc_interface_config": _refused("Private Service Connect is a VPC feature"),
    "CustomJobSpec.service_account": _ignored("replicas run as you here"),
    "CustomJobSpec.network": _CLOUD,
    "CustomJobSpec.reserved_ip_ranges": _CLOUD,
    "CustomJobSpec.protected_artifact_location_id": _CLOUD,
    "CustomJobSpec.tensorboard": _approximated(
        "no upload to a Vertex TensorBoard: the event files stay in AIP_TENSORBOARD_LOG_DIR "
        "under the output directory, which `make tensorboard STACK=local` serves"
    ),
    "CustomJobSpec.enable_web_access": _CLOUD,
    "CustomJobSpec.enable_dashboard_access": _CLOUD,
    "CustomJobSpec.experiment": _ignored("Vertex Experiments live in Vertex ML Metadata"),
    "CustomJobSpec.experiment_run": _ignored("Vertex Experiments live in Vertex ML Metadata"),
    "CustomJobSpec.models": _CLOUD,
    # Worker pools
    "WorkerPoolSpec.container_spec": H,
    "WorkerPoolSpec.machine_spec": H,
    "WorkerPoolSpec.replica_count": H,
    "WorkerPoolSpec.python_package_spec": _refused(
        "Python packages run in Vertex's prebuilt executor images; use a containerSpec"
    ),
    "WorkerPoolSpec.nfs_mounts": _refused("NFS shares are mounted on Vertex VMs"),
    "WorkerPoolSpec.lustre_mounts": _refused("Lustre file systems are mounted on Vertex VMs"),
    "WorkerPoolSpec.disk_spec": _ignored("replicas use this machine's disk"),
    "DiskSpec.boot_disk_type": _CLOUD,
    "DiskSpec.boot_disk_size_gb": _CLOUD,
    "ContainerSpec.image_uri": H,
    "ContainerSpec.command": H,
    "ContainerSpec.args": H,
    "ContainerSpec.env": H,
    "EnvVar.name": H,
    "EnvVar.value": H,
    "MachineSpec.machine_type": _ignored("replicas share this machine's CPUs"),
    "MachineSpec.accelerator_type": H,
    "MachineSpec.accelerator_count": H,
    "MachineSpec.tpu_topology": _refused("TPUs exist on Google Cloud only"),
    "MachineSpec.gpu_partition_size": _refused("GPU partitions are made on Vertex VMs"),
    "MachineSpec.reservation_affinity": _refused("reservations are Compute Engine capacity"),
    # Scheduling: how Vertex provisions and retries VMs.
    "Scheduling.timeout": H,
    "Scheduling.restart_job_on_worker_restart": _CLOUD,
    "Scheduling.strategy": _ignored("Spot and Flex-start are ways to get Vertex VMs"),
    "Scheduling.disable_retries": _CLOUD,
    "Scheduling.max_wait_duration": _CLOUD,
    # Studies
    f"{_STUDY}.metrics": H,
    f"{_STUDY}.MetricSpec.metric_id": H,
    f"{_STUDY}.MetricSpec.goal": H,
    f"{_STUDY}.MetricSpec.safety_config": _approximated("safety metrics are not tracked locally"),
    f"{_STUDY}.parameters": H,
    f"{_STUDY}.algorithm": _approximated("Vertex's Bayesian search is Optuna's TPE here"),
    f"{_STUDY}.measurement_selection_type": H,
    f"{_STUDY}.observation_noise": _approximated("a hint to Vertex's search algorithm"),
    f"{_STUDY}.median_automated_stopping_spec": H,
    f"{_STUDY}.MedianAutomatedStoppingSpec.use_elapsed_duration": _approximated(
        "median stopping compares trials by step locally"
    ),
    f"{_STUDY}.decay_curve_stopping_spec": _approximated("median stopping locally"),
    f"{_STUDY}.DecayCurveAutomatedStoppingSpec.use_elapsed_duration": _approximated(
        "median stopping locally"
    ),
    f"{_STUDY}.convex_automated_stopping_spec": _approximated("median stopping locally"),
    **{
        f"{_STUDY}.ConvexAutomatedStoppingSpec.{name}": _approximated("median stopping locally")
        for name in (
            "max_step_count",
            "min_step_count",
            "min_measurement_count",
            "learning_rate_parameter_name",
            "use_elapsed_duration",
            "update_all_stopped_trials",
        )
    },
    f"{_STUDY}.study_stopping_config": _refused("study stopping rules are Vertex Vizier's"),
    f"{_STUDY}.MetricSpec.SafetyMetricConfig.safety_threshold": _approximated(
        "safety metrics are not tracked locally"
    ),
    f"{_STUDY}.MetricSpec.SafetyMetricConfig.desired_min_safe_trials_fraction": _approximated(
        "safety metrics are not tracked locally"
    ),
    **{
        f"{_PARAM}.{name}": H
        for name in (
            "double_value_spec",
            "integer_value_spec",
            "categorical_value_spec",
            "discrete_value_spec",
            "parameter_id",
            "scale_type",
            "conditional_parameter_specs",
        )
    },
    **{
        f"{_PARAM}.{spec}.{name}": H
        for spec, names in (
            ("DoubleValueSpec", ("min_value", "max_value")),
            ("IntegerValueSpec", ("min_value", "max_value")),
            ("CategoricalValueSpec", ("values",)),
            ("DiscreteValueSpec", ("values",)),
        )
        for name in names
    },
    **{
        f"{_PARAM}.{spec}.default_value": _approximated(
            "the first local trial is sampled, not taken from the defaults"
        )
        for spec in (
            "DoubleValueSpec",
            "IntegerValueSpec",
            "CategoricalValueSpec",
            "DiscreteValueSpec",
        )
    },
    **{
        f"{_COND}.{name}": H
        for name in (
            "parent_discrete_values",
            "parent_int_values",
            "parent_categorical_values",
            "parameter_spec",
        )
    },
    **{
        f"{_COND}.{cond}.values": H
        for cond in ("DiscreteValueCondition", "IntValueCondition", "CategoricalValueCondition")
    },
    # Inside the refused messages: never reached (the message is refused as a whole), but
    # classified so that the table covers every field.
    **{
        f"{message}.{name}": _refused(why)
        for message, names, why in (
            (
                "PythonPackageSpec",
                ("executor_image_uri", "package_uris", "python_module", "args", "env"),
                "Python packages run in Vertex's prebuilt executor images; use a containerSpec",
            ),
            ("NfsMount", ("server", "path", "mount_point"), "NFS shares are mounted on Vertex VMs"),
            (
                "LustreMount",
                ("instance_ip", "volume_handle", "filesystem", "mount_point"),
                "Lustre file systems are mounted on Vertex VMs",
            ),
            (
                "ReservationAffinity",
                ("reservation_affinity_type", "key", "values"),
                "reservations are Compute Engine capacity",
            ),
            (
                "PscInterfaceConfig",
                ("network_attachment", "dns_peering_configs"),
                "Private Service Connect is a VPC feature",
            ),
            (
                "DnsPeeringConfig",
                ("domain", "target_project", "target_network"),
                "Private Service Connect is a VPC feature",
            ),
            (
                f"{_STUDY}.StudyStoppingConfig",
                (
                    "should_stop_asap",
                    "minimum_runtime_constraint",
                    "maximum_runtime_constraint",
                    "min_num_trials",
                    "max_num_trials",
                    "max_num_trials_no_progress",
                    "max_duration_no_progress",
                ),
                "study stopping rules are Vertex Vizier's",
            ),
            (
                "StudyTimeConstraint",
                ("max_duration", "end_time"),
                "study stopping rules are Vertex Vizier's",
            ),
        )
        for name in names
    },
    # HyperparameterTuningJob.trials: output only, written by the service (here: the
    # supervisor), never read from a body.
    **{
        f"Trial.{name}": _OUTPUT
        for name in (
            "name",
            "id",
            "state",
            "parameters",
            "final_measurement",
            "measurements",
            "start_time",
            "end_time",
            "client_id",
            "infeasible_reason",
            "custom_job",
            "web_access_uris",
        )
    },
    "Trial.Parameter.parameter_id": _OUTPUT,
    "Trial.Parameter.value": _OUTPUT,
    "Measurement.elapsed_duration": _OUTPUT,
    "Measurement.step_count": _OUTPUT,
    "Measurement.metrics": _OUTPUT,
    "Measurement.Metric.metric_id": _OUTPUT,
    "Measurement.Metric.value": _OUTPUT,
}
"""How the local backend treats each field (see the module docstring)."""


def _message_name(full_name: str) -> str:
    return full_name.removeprefix("google.cloud.aiplatform.v1.")


@dataclass
class _Walk:
    refused: list[str]
    ignored: list[str]
    approximated: list[str]


def _walk(descriptor: Any, data: Any, path: str, walk: _Walk) -> None:
    if not isinstance(data, Mapping):
        return
    by_name = {f.json_name: f for f in descriptor.fields}
    by_name.update({f.name: f for f in descriptor.fields})
    for key, value in data.items():
        field = by_name.get(key)
        if field is None:
            continue  # the protos refuse unknown fields before this runs
        field_path = f"{path}.{field.json_name}" if path else field.json_name
        name = f"{_message_name(descriptor.full_name)}.{field.name}"
        support = LOCAL_SUPPORT.get(name)
        if support is None:
            walk.refused.append(f"{field_path}: the local backend does not know this field yet")
            continue
        if support.support is Support.REFUSED:
            walk.refused.append(f"{field_path}: {support.why}; it runs on Vertex only")
            continue
        if support.support is Support.IGNORED:
            walk.ignored.append(field_path)
            continue
        if support.support is Support.APPROXIMATED:
            walk.approximated.append(f"{field_path} ({support.why})")
        message = field.message_type
        if message is None or message.GetOptions().map_entry:
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            item_path = f"{field_path}[{i}]" if isinstance(value, list) else field_path
            _walk(message, item, item_path, walk)


def _walk_body(kind: JobKind, body: Mapping[str, Any]) -> _Walk:
    from vertex_training.jobs.protos import message_class

    walk = _Walk([], [], [])
    _walk(message_class(kind).pb().DESCRIPTOR, body, "", walk)
    for path, item in _tpu_accelerators(kind, body):
        walk.refused.append(
            f"{path}: {item} is a TPU; TPUs exist on Google Cloud only; it runs on Vertex only"
        )
    return walk


def local_refusals(kind: JobKind, body: Mapping[str, Any]) -> list[str]:
    """What in a readable body only Vertex has, each naming its API path (empty: this
    machine can run it). The provider's ``check`` reports these at preview."""
    return _walk_body(kind, body).refused


def check_local_support(kind: JobKind, body: Mapping[str, Any]) -> None:
    """Refuse a body that needs what only Vertex has; log what is ignored or approximated."""
    walk = _walk_body(kind, body)
    if walk.refused:
        raise JobRefusedError("the local backend cannot run this job: " + "; ".join(walk.refused))
    if walk.ignored:
        _log.info(
            "the local backend ignores what only matters on Google Cloud: %s",
            ", ".join(walk.ignored),
        )
    if walk.approximated:
        _log.info("the local backend approximates: %s", "; ".join(walk.approximated))


def _tpu_accelerators(kind: JobKind, body: Mapping[str, Any]) -> list[tuple[str, str]]:
    from vertex_training.jobs.view import view_of

    view = view_of(kind, body)
    return [
        (f"{pool.path}.machineSpec.acceleratorType", accelerator)
        for pool in view.trial_job.worker_pools
        if pool is not None
        and (accelerator := pool.machine.accelerator_type or "").startswith("TPU")
    ]


__all__ = ["LOCAL_SUPPORT", "FieldSupport", "Support", "check_local_support", "local_refusals"]
