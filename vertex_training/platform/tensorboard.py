"""A Vertex AI TensorBoard instance for the platform's jobs, and what the training account
needs to write to it.

How the integration works: a CustomJob (or every trial of a tuning job) whose
``jobSpec.tensorboard`` names this instance and whose ``jobSpec.baseOutputDirectory`` is set
gets ``AIP_TENSORBOARD_LOG_DIR`` (``<base>/logs/``, per trial ``<base>/<trial>/logs/``);
Vertex runs an uploader beside the replicas **as the job's service account**, which reads
the event files from that bucket path and writes them into the instance (one TensorBoard
experiment per job, one run per log directory). The instance, the bucket and the job must
be in the same region.

Roles, and why (the least that works):

- training account: a project-level custom role holding only
  ``TENSORBOARD_WRITER_PERMISSIONS`` (get the instance; create, read, update and write its
  experiments, runs and time series: what the uploader calls). Vertex's documentation
  grants ``roles/aiplatform.user`` for this, which would also let a training replica
  submit jobs, deploy endpoints and read every dataset of the project. TensorBoards have
  no resource-level IAM, so the project is the narrowest scope there is.
- with ``experiments=True`` the role also holds ``EXPERIMENT_PERMISSIONS`` (the metadata
  store's contexts, executions and artifacts): what ``jobSpec.experimentRun`` and
  ``aiplatform.log_metrics`` from inside a replica write. Off by default: a job that only
  streams TensorBoard logs needs none of it.
- bucket access is not granted here: the training account already holds
  ``roles/storage.objectAdmin`` on the training bucket (``identity.py``), which covers
  writing the event files and the uploader reading them back.

Vertex Experiments: pulumi-gcp (10.2.0) has no resource for an experiment (a metadata store
context), so it is created once with the Vertex SDK, backed by this instance
(``docs/tracking.md``); jobs then name it in ``jobSpec.experiment``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp.projects as gcp_projects
import pulumi_gcp.vertex as gcp_vertex

from vertex_training.platform._component import PlatformComponent

__all__ = [
    "EXPERIMENT_PERMISSIONS",
    "TENSORBOARD_WRITER_PERMISSIONS",
    "ExperimentTracking",
    "ExperimentTrackingArgs",
]

_READ_WRITE = ("create", "get", "list", "update")

TENSORBOARD_WRITER_PERMISSIONS: tuple[str, ...] = (
    "aiplatform.tensorboards.get",
    *(
        f"aiplatform.{collection}.{verb}"
        for collection, verbs in (
            ("tensorboardExperiments", (*_READ_WRITE, "write")),
            ("tensorboardRuns", (*_READ_WRITE, "write")),
            ("tensorboardTimeSeries", _READ_WRITE),
        )
        for verb in verbs
    ),
)
"""What the TensorBoard uploader of a training job calls (REST reference: experiments /
runs / timeSeries ``create``, ``batchCreate`` (needs ``create``), ``write``)."""

EXPERIMENT_PERMISSIONS: tuple[str, ...] = (
    "aiplatform.metadataStores.get",
    *(
        f"aiplatform.{collection}.{verb}"
        for collection in ("contexts", "executions", "artifacts")
        for verb in _READ_WRITE
    ),
)
"""What logging parameters and metrics to a Vertex Experiment run writes."""


@dataclass(frozen=True, kw_only=True)
class ExperimentTrackingArgs:
    project: pulumi.Input[str]
    region: str
    """The jobs' region: Vertex refuses a job whose TensorBoard lives elsewhere."""
    display_name: str
    training_member: pulumi.Input[str]
    """``serviceAccount:<email>`` of the account the jobs run as (the uploader's identity)."""
    role_id: str
    """Custom role id, unique in the project (letters, digits, '_' and '.'; 3-64
    characters), e.g. ``vertexTensorboardWriter_dev``. A deleted custom role keeps its id
    for 7 days (Pulumi undeletes it when it is declared again)."""
    kms_key_name: pulumi.Input[str] | None = None
    """CMEK for the instance and everything under it; the key must be in ``region`` and
    Vertex's service agent needs ``roles/cloudkms.cryptoKeyEncrypterDecrypter`` on it."""
    experiments: bool = False
    """Also grant what logging to Vertex Experiments needs (``EXPERIMENT_PERMISSIONS``)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    existing_tensorboard: str | None = None
    """Bring your own: ``projects/P/locations/REGION/tensorboards/ID`` of an instance made
    elsewhere. Nothing is created for it (``kms_key_name`` and ``labels`` are then
    unused); the writer role is still granted."""


class ExperimentTracking(PlatformComponent[ExperimentTrackingArgs]):
    """A Vertex AI TensorBoard instance, and a least-privilege writer role for the jobs."""

    tensorboard: gcp_vertex.AiTensorboard | None
    """None when ``existing_tensorboard`` was given."""
    role: gcp_projects.IAMCustomRole
    grant: gcp_projects.IAMMember
    tensorboard_name: pulumi.Output[str]
    """``projects/P/locations/REGION/tensorboards/ID``: the value of ``jobSpec.tensorboard``."""
    console_url: pulumi.Output[str]
    """The console's TensorBoard instances page (Vertex AI > Experiments) of the project:
    it lists every instance with a link to open its TensorBoard (a per-instance address is
    not a documented URL, so this does not guess one)."""

    def _build(self, name: str, args: ExperimentTrackingArgs) -> dict[str, Any]:
        self.tensorboard = None
        if args.existing_tensorboard is not None:
            self.tensorboard_name = pulumi.Output.from_input(args.existing_tensorboard)
        else:
            encryption = (
                gcp_vertex.AiTensorboardEncryptionSpecArgs(kms_key_name=args.kms_key_name)
                if args.kms_key_name is not None
                else None
            )
            self.tensorboard = gcp_vertex.AiTensorboard(
                f"{name}-tensorboard",
                project=args.project,
                region=args.region,
                display_name=args.display_name,
                description="TensorBoard logs of the platform's training jobs",
                encryption_spec=encryption,
                labels=dict(args.labels),
                opts=self._child(),
            )
            # The provider reports the id alone (its resource id is the full path).
            self.tensorboard_name = pulumi.Output.all(args.project, self.tensorboard.name).apply(
                lambda values: (
                    values[1]
                    if values[1].startswith("projects/")
                    else f"projects/{values[0]}/locations/{args.region}/tensorboards/{values[1]}"
                )
            )
        permissions = TENSORBOARD_WRITER_PERMISSIONS + (
            EXPERIMENT_PERMISSIONS if args.experiments else ()
        )
        self.role = gcp_projects.IAMCustomRole(
            f"{name}-writer-role",
            project=args.project,
            role_id=args.role_id,
            title="Vertex AI TensorBoard writer (training jobs)",
            description="Upload a training job's TensorBoard logs; nothing else in Vertex AI",
            permissions=list(permissions),
            opts=self._child(),
        )
        self.grant = gcp_projects.IAMMember(
            f"{name}-training-writer",
            project=args.project,
            role=self.role.name,
            member=args.training_member,
            opts=self._child(),
        )
        # Waits for the instance: the page shows nothing before it exists.
        self.console_url = pulumi.Output.all(args.project, self.tensorboard_name).apply(
            lambda values: (
                "https://console.cloud.google.com/vertex-ai/experiments/"
                f"tensorboard-instances?project={values[0]}"
            )
        )
        return {"tensorboard_name": self.tensorboard_name, "console_url": self.console_url}
