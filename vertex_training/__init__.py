"""Vertex AI training environments and jobs as Pulumi resources.

Use it from any Pulumi program::

    import vertex_training as vt

    platform = vt.TrainingPlatform("ml", vt.TrainingPlatformArgs(
        environment="dev", project="my-project", region="us-central1",
        images={"trainer": vt.ImageBuild(context=".", dockerfile="docker/trainer.Dockerfile")},
    ))
    job = vt.CustomJob("train", vt.CustomJobArgs(
        platform=platform,
        chief=vt.WorkerPool(machine_type="n1-standard-8",
                            accelerator=vt.Accelerator("NVIDIA_TESLA_V100", 1),
                            image=platform.image("trainer"), args=["--epochs", "5"]),
    ))

Every Args class is a frozen dataclass whose fields follow the Vertex API in snake_case;
wrong types and values Vertex would refuse raise ``InvalidArgumentsError`` (a
``pulumi.RunError``) at construction, before anything is registered. Importing this
package loads neither TensorFlow, Optuna, ``google.cloud.aiplatform_v1`` nor
``pulumi_gcp``: those load where they are used (the provider, the local backend, a cloud
platform).
"""

from __future__ import annotations

import atexit
import gc
import importlib
from typing import TYPE_CHECKING, Any

# A program's process ends right after evaluation, yet the interpreter's shutdown scans
# every object left for reference cycles, several times: with pulumi_gcp's generated
# classes loaded (some 80,000 objects) that took 0.3 s of the dev stack's `pulumi up`.
# Frozen objects are skipped and left for the OS to reclaim; other atexit hooks and
# weakref finalizers still run.
atexit.register(gc.freeze)

if TYPE_CHECKING:
    from vertex_training._checks import InvalidArgumentsError
    from vertex_training.capacity.api import Autoscaling, PersistentResourceArgs, ResourcePool
    from vertex_training.capacity.resource import PersistentResource
    from vertex_training.cost.program import log_stack_cost
    from vertex_training.jobs.api import (
        CustomJobArgs,
        DnsPeeringConfig,
        HyperparameterTuningJobArgs,
        JobPlatform,
        PscInterfaceConfig,
        TrialJob,
    )
    from vertex_training.jobs.pools import (
        Accelerator,
        NfsMount,
        ReservationAffinity,
        Scheduling,
        WorkerPool,
    )
    from vertex_training.jobs.records import TrialResult
    from vertex_training.jobs.resources import CustomJob, HyperparameterTuningJob, declare_job
    from vertex_training.jobs.studies import (
        CategoricalParameter,
        ConvexStopping,
        DecayCurveStopping,
        DiscreteParameter,
        DoubleParameter,
        IntegerParameter,
        MedianStopping,
        Metric,
        Parameter,
        ParameterBase,
        Study,
    )
    from vertex_training.platform.platform import (
        ImageBuild,
        TensorBoard,
        TrainingPlatform,
        TrainingPlatformArgs,
        Workbench,
    )
    from vertex_training.serving.api import DeploymentArgs, EndpointArgs, ModelArgs
    from vertex_training.serving.resources import Endpoint, Model
    from vertex_training.stack.definition import StackDefinition, load_stack

_HOMES = {
    "InvalidArgumentsError": "vertex_training._checks",
    **dict.fromkeys(
        ("Autoscaling", "PersistentResourceArgs", "ResourcePool"), "vertex_training.capacity.api"
    ),
    "PersistentResource": "vertex_training.capacity.resource",
    **dict.fromkeys(
        ("Accelerator", "NfsMount", "ReservationAffinity", "Scheduling", "WorkerPool"),
        "vertex_training.jobs.pools",
    ),
    **dict.fromkeys(
        (
            "CategoricalParameter",
            "ConvexStopping",
            "DecayCurveStopping",
            "DiscreteParameter",
            "DoubleParameter",
            "IntegerParameter",
            "MedianStopping",
            "Metric",
            "Parameter",
            "ParameterBase",
            "Study",
        ),
        "vertex_training.jobs.studies",
    ),
    **dict.fromkeys(
        ("CustomJob", "HyperparameterTuningJob", "declare_job"), "vertex_training.jobs.resources"
    ),
    "TrialResult": "vertex_training.jobs.records",
    **dict.fromkeys(
        (
            "ImageBuild",
            "TensorBoard",
            "TrainingPlatform",
            "TrainingPlatformArgs",
            "Workbench",
        ),
        "vertex_training.platform.platform",
    ),
    **dict.fromkeys(("DeploymentArgs", "EndpointArgs", "ModelArgs"), "vertex_training.serving.api"),
    **dict.fromkeys(("Endpoint", "Model"), "vertex_training.serving.resources"),
    # The program sums the stack's cost where it reads the stack.
    "log_stack_cost": "vertex_training.cost.program",
    # The stack YAML adapter (pydantic, yaml) loads only for programs that read stacks.
    **dict.fromkeys(("StackDefinition", "load_stack"), "vertex_training.stack.definition"),
}
"""Public name -> the module defining it, where that is not ``_ARGS`` (the jobs' typed
Args). Names load on first use, so that importing a submodule (the hardware rules, the
trainer-free cost tables) does not pull in Pulumi."""
_ARGS = "vertex_training.jobs.api"

__all__ = [
    "Accelerator",
    "Autoscaling",
    "CategoricalParameter",
    "ConvexStopping",
    "CustomJob",
    "CustomJobArgs",
    "DecayCurveStopping",
    "DeploymentArgs",
    "DiscreteParameter",
    "DnsPeeringConfig",
    "DoubleParameter",
    "Endpoint",
    "EndpointArgs",
    "HyperparameterTuningJob",
    "HyperparameterTuningJobArgs",
    "ImageBuild",
    "IntegerParameter",
    "InvalidArgumentsError",
    "JobPlatform",
    "MedianStopping",
    "Metric",
    "Model",
    "ModelArgs",
    "NfsMount",
    "Parameter",
    "ParameterBase",
    "PersistentResource",
    "PersistentResourceArgs",
    "PscInterfaceConfig",
    "ReservationAffinity",
    "ResourcePool",
    "Scheduling",
    "StackDefinition",
    "Study",
    "TensorBoard",
    "TrainingPlatform",
    "TrainingPlatformArgs",
    "TrialJob",
    "TrialResult",
    "Workbench",
    "WorkerPool",
    "declare_job",
    "load_stack",
    "log_stack_cost",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'vertex_training' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES.get(name, _ARGS)), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
