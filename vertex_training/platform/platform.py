"""``TrainingPlatform``: the whole training environment as one component. On ``dev`` and
``prod`` it creates what jobs need in Google Cloud (each part can be brought instead); on
``local`` nothing: jobs run on this machine against a local directory. Children are
registered only after every argument has been checked: a wrong one leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pulumi

from vertex_training._checks import Checked, InvalidArgumentsError, is_known
from vertex_training._project import project_root
from vertex_training.cost.estimate import WorkbenchEstimate
from vertex_training.findings import Finding
from vertex_training.jobs.api import SERVING_IMAGE
from vertex_training.jobs.pools import Accelerator
from vertex_training.platform._gc import frozen_once_loaded
from vertex_training.platform.names import (
    PlatformNames,
    derived_bucket_name,
    name_qualifier,
    platform_labels,
    platform_names,
    slug,
)
from vertex_training.platform.rules import (
    REPOSITORY_ID,
    EnvironmentKind,
    PlatformValues,
    WorkbenchValues,
    image_name_problems,
    image_reference_problems,
    judge_platform,
    tensorboard_problems,
)

if TYPE_CHECKING:
    from vertex_training.platform.registry import TrainerRepository

__all__ = [
    "LOCAL_PROJECT",
    "ImageBuild",
    "TensorBoard",
    "TrainingPlatform",
    "TrainingPlatformArgs",
    "Workbench",
]

LOCAL_PROJECT = "local"
"""The project id a local platform reports (job names keep the Vertex shape)."""


@dataclass(frozen=True, kw_only=True)
class ImageBuild(Checked):
    """A container image built from a Dockerfile and pushed to the platform's repository;
    jobs run it by digest (``platform.image(name)``). Needs a Docker engine at ``up``."""

    context: Path
    """The build context directory."""
    dockerfile: Path | None = None
    """None: ``<context>/Dockerfile``."""
    image_name: str | None = None
    """Name in the repository; None: the key of ``TrainingPlatformArgs.images``."""
    sources: Sequence[str] | None = None
    """Paths under ``context`` whose content decides the image tag (a new tag, a new
    build); None: the whole context."""


@dataclass(frozen=True, kw_only=True)
class Workbench(Checked):
    """A Vertex AI Workbench instance for interactive work."""

    machine_type: str = "n1-standard-4"
    accelerator: Accelerator | None = None
    zone: str | None = None
    """None: ``<region>-a``."""
    disk_size_gb: int = 150
    container_image: str | None = None
    """A custom container (``repository[:tag]``); None: the default Workbench image."""
    idle_timeout_minutes: int = 60
    """An idle instance shuts down after this long (10 to 1440)."""
    public_ip: bool | None = None
    """None: a public IP except on ``prod`` (reached through the Workbench proxy only)."""
    service_account: pulumi.Input[str] | None = None
    """An existing service account's email; None: one is created with least roles."""


@dataclass(frozen=True, kw_only=True)
class TensorBoard(Checked):
    """A Vertex AI TensorBoard the platform's jobs stream their logs to: jobs get
    ``tensorboard`` set to it by default, and the training account a custom role with
    only what the uploader writes (``vertex_training.platform.tensorboard``)."""

    display_name: str | None = None
    """None: ``<stack> training``."""
    existing: str | None = None
    """Bring your own instance (``projects/P/locations/R/tensorboards/ID``, in the
    platform's region): none is created; the training account still gets the role."""
    experiments: bool = False
    """Also grant what Vertex Experiments runs write (``experiment``/``experiment_run``)."""


@dataclass(frozen=True, kw_only=True)
class TrainingPlatformArgs(Checked):
    """Everything a training environment is made of; each part can be brought instead."""

    environment: Literal["local", "dev", "prod"] = "local"
    """``local``: nothing in Google Cloud, jobs on this machine. ``dev``: disposable.
    ``prod``: protected (versioned bucket kept through destroy, no public notebook IP,
    hardware the catalog does not know is refused)."""
    project: pulumi.Input[str] | None = None
    """The Google Cloud project id (cloud environments); may come from another resource
    (a ``gcp.organizations.Project`` of the same program)."""
    region: str = "us-central1"
    """A plain value, not an Input: jobs' hardware is checked against it at construction."""
    images: Mapping[str, ImageBuild | pulumi.Input[str]] = field(default_factory=dict)
    """Name -> an image to build, or an existing image by digest (``...@sha256:...``),
    possibly the output of another resource."""
    workbench: Workbench | None = None
    """None: no notebook."""
    bucket_name: str | None = None
    """The bucket to create; None: ``<project>-<stack>[-<qualifier>]-vertex`` (see
    ``name_qualifier``), cut to 63 characters with a hash of the whole."""
    existing_bucket: pulumi.Input[str] | None = None
    """Bring your own bucket (its name): none is created; the training account gets
    object access on it unless it is brought too."""
    training_service_account: pulumi.Input[str] | None = None
    """Bring your own training service account (its email): none is created and nothing
    is granted to it (give it object access on the bucket yourself)."""
    network: pulumi.Input[str] | None = None
    """A VPC network (``projects/P/global/networks/N``) for the Workbench instance and, by
    default, the jobs (peered with Vertex)."""
    subnet: pulumi.Input[str] | None = None
    """The Workbench instance's subnetwork."""
    enable_apis: bool = True
    """False where the project's APIs are managed elsewhere."""
    repository_name: str | None = None
    """The Artifact Registry repository for image builds; None:
    ``trainers[-<qualifier>]`` (see ``name_qualifier``)."""
    name_qualifier: str | None = None
    """What the names of the platform's bucket, service accounts, Workbench instance,
    custom role and repository carry so that two platforms of one stack do not collide;
    None: the component's name (nothing for a component named ``platform``). ``""``
    keeps the names platforms had before (``<project>-<stack>-vertex``,
    ``vtx-train-<stack>`` ...): set it on an existing stack's one platform rather than
    have them replaced."""
    image_keep_count: int = 10
    staging_retention_days: int = 7
    soft_delete_retention_days: int = 7
    """prod: days a deleted or overwritten object stays recoverable."""
    tensorboard: TensorBoard | None = None
    """A Vertex AI TensorBoard for the jobs (cloud environments; locally, ``make
    tensorboard`` serves the logs)."""
    kms_key_name: pulumi.Input[str] | None = None
    """CMEK (``projects/P/locations/R/keyRings/K/cryptoKeys/C``, in the platform's region)
    for the bucket, the TensorBoard and, by default, every job."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Added to the platform's own labels on every resource and job."""
    strict_hardware_checks: bool | None = None
    """Refuse hardware the catalog does not know; None: on in ``prod`` only."""
    acknowledged_hardware_checks: Sequence[str] = ()
    """Hardware check ids (from an error's "(check ...)") that only warn on this platform
    and its jobs: the override for a catalog row that is out of date."""
    local_root: Path | str = Path(".local-vertex")
    """local: the directory holding the local bucket, logs and job state (relative to
    the project: the nearest directory holding ``Pulumi.yaml``)."""


class TrainingPlatform(pulumi.ComponentResource):
    """A Vertex AI training environment (``vertex-training:index:TrainingPlatform``)."""

    environment: str
    """``local``, ``dev`` or ``prod``."""
    project: pulumi.Input[str]
    """The Google Cloud project id; ``local`` on a local platform."""
    region: str
    """The region of the bucket, the registry and, by default, the jobs."""
    bucket_url: pulumi.Output[str]
    """``gs://<bucket>``; on a local platform an absolute directory."""
    training_service_account: pulumi.Output[str] | None
    """Email of the account jobs run as; None on a local platform."""
    workbench_service_account: pulumi.Output[str] | None = None
    """Email of the account the Workbench instance runs as; None without one."""
    repository_url: pulumi.Output[str] | None = None
    """``<region>-docker.pkg.dev/<project>/<repository>``; None without image builds."""
    workbench_url: pulumi.Output[str] | None = None
    """The JupyterLab address; None without a Workbench instance."""
    network: pulumi.Input[str] | None
    tensorboard: pulumi.Output[str] | None = None
    """The Vertex AI TensorBoard's resource name; None without one."""
    tensorboard_url: pulumi.Output[str] | None = None
    """Where to look at the jobs' curves (the console's TensorBoard page)."""
    kms_key_name: pulumi.Input[str] | None
    labels: Mapping[str, str]
    """Labels every resource and job of the platform carries."""
    local_root: Path | None
    """local: the directory holding the local bucket, logs and job state."""
    strict_hardware_checks: bool
    acknowledged_hardware_checks: tuple[str, ...]
    cost_estimate: WorkbenchEstimate | None = None
    """The Workbench instance per hour while it is up; None without one."""

    def __init__(
        self,
        resource_name: str,
        args: TrainingPlatformArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if not isinstance(args, TrainingPlatformArgs):
            raise InvalidArgumentsError(
                f"TrainingPlatform({resource_name!r}): args must be a TrainingPlatformArgs, "
                f"got {type(args).__name__}"
            )
        stack = slug(pulumi.get_stack())
        errors, warnings = platform_problems(args, resource_name)
        if errors:
            raise InvalidArgumentsError(
                f"TrainingPlatform {resource_name!r} would be refused:\n  "
                + "\n  ".join(map(str, errors)),
                findings=errors,
            )
        super().__init__("vertex-training:index:TrainingPlatform", resource_name, None, opts)
        for warning in warnings:
            pulumi.log.warn(str(warning), resource=self)
        self.environment = args.environment
        self.region = args.region
        self.network = args.network
        self.kms_key_name = args.kms_key_name
        self.labels = platform_labels(args.environment, stack, args.labels)
        self.strict_hardware_checks = _strict(args)
        self.acknowledged_hardware_checks = tuple(args.acknowledged_hardware_checks)
        self._images: dict[str, pulumi.Output[str]] = {}
        self._dependencies: list[pulumi.Resource] = []
        self._services: list[pulumi.Resource] = []
        if args.environment == "local":
            self._local(args)
        else:
            qualifier = name_qualifier(resource_name, args.name_qualifier)
            with frozen_once_loaded():
                self._cloud(resource_name, args, stack, qualifier)
        self.register_outputs(
            {
                "bucket_url": self.bucket_url,
                "training_service_account": self.training_service_account,
                "tensorboard": self.tensorboard,
                "images": dict(self._images),
            }
        )

    def image(self, name: str) -> pulumi.Output[str]:
        """The image ``name`` by digest (``<repository>/<image>@sha256:<digest>``); on a
        local platform ``<image>:local``, run from this checkout."""
        if name not in self._images:
            raise InvalidArgumentsError(
                f"TrainingPlatform.image({name!r}): no such image; valid: "
                + (", ".join(repr(n) for n in self._images) or "none (images={} is empty)")
            )
        return self._images[name]

    def default_image(self) -> pulumi.Output[str] | None:
        """The platform's image when it has exactly one besides the serving image (a pool
        without ``image`` runs it)."""
        images = [image for name, image in self._images.items() if name != SERVING_IMAGE]
        return images[0] if len(images) == 1 else None

    def _after(self, *more: pulumi.Resource) -> pulumi.ResourceOptions:
        """A child's options: nothing may race the API enablement, so every child waits
        for it (and for ``more``)."""
        return pulumi.ResourceOptions(parent=self, depends_on=[*self._services, *more])

    def resource_options(self) -> pulumi.ResourceOptions:
        """Options for what uses the environment (jobs): wait for the APIs, the bucket
        grants and the images. Jobs take them on their own; merge them into yours with
        ``ResourceOptions.merge(platform.resource_options(), mine)``."""
        return pulumi.ResourceOptions(depends_on=list(self._dependencies))

    def _local(self, args: TrainingPlatformArgs) -> None:
        given = Path(args.local_root)
        root = given if given.is_absolute() else project_root() / given
        self.project = args.project or LOCAL_PROJECT
        self.local_root = root
        self.bucket_url = pulumi.Output.from_input(str(root / "bucket"))
        self.training_service_account = None
        for name, image in args.images.items():
            local = f"{image.image_name or name}:local" if isinstance(image, ImageBuild) else image
            self._images[name] = pulumi.Output.from_input(local)

    def _cloud(self, name: str, args: TrainingPlatformArgs, stack: str, qualifier: str) -> None:
        # Imported here: a local platform never loads pulumi_gcp or docker-build.
        from vertex_training.platform.project_services import ProjectServices, ProjectServicesArgs

        assert args.project is not None  # platform_problems made sure
        names = platform_names(stack, qualifier)
        self.project = project = args.project
        self.local_root = None
        if args.enable_apis:
            services = ProjectServices(
                f"{name}-services",
                ProjectServicesArgs(project=project),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self._services = [services]
            self._dependencies.append(services)
        bucket_name = self._storage(name, args, stack, qualifier)
        repository = self._registry(name, args, names)
        identity = self._identity(name, args, names, bucket_name, repository)
        after = self._after(*([identity] if identity is not None else []))
        if args.tensorboard is not None:
            self._tracking(name, args, args.tensorboard, stack, names, after=after)
        if args.workbench is not None:
            self._workbench(name, args, args.workbench, names, after)
        for image_name, image in args.images.items():
            if isinstance(image, ImageBuild):
                assert repository is not None
                self._images[image_name] = self._build(name, image_name, image, repository)
            else:
                self._images[image_name] = pulumi.Output.from_input(image)

    def _storage(
        self, name: str, args: TrainingPlatformArgs, stack: str, qualifier: str
    ) -> pulumi.Input[str]:
        """The bucket the platform's jobs write to (``bucket_url``): the one given, else
        its own; its name."""
        project = args.project
        assert project is not None
        is_prod = args.environment == "prod"
        if args.existing_bucket is not None:
            bucket_name: pulumi.Input[str] = args.existing_bucket
            self.bucket_url = pulumi.Output.concat("gs://", args.existing_bucket)
        else:
            from vertex_training.platform.storage import TrainingBucket, TrainingBucketArgs

            bucket = TrainingBucket(
                f"{name}-storage",
                TrainingBucketArgs(
                    project=project,
                    region=args.region,
                    bucket_name=args.bucket_name
                    or pulumi.Output.from_input(project).apply(
                        lambda project_id: derived_bucket_name(project_id, stack, qualifier)
                    ),
                    labels=self.labels,
                    staging_retention_days=args.staging_retention_days,
                    # dev is disposable; prod keeps every trained model through a destroy.
                    force_destroy=not is_prod,
                    versioning=is_prod,
                    soft_delete_retention_days=args.soft_delete_retention_days if is_prod else 0,
                    kms_key_name=args.kms_key_name,
                    protect=is_prod,
                ),
                opts=self._after(),
            )
            bucket_name = bucket.name
            self.bucket_url = bucket.url
            self._dependencies.append(bucket)
        return bucket_name

    def _registry(
        self, name: str, args: TrainingPlatformArgs, names: PlatformNames
    ) -> TrainerRepository | None:
        """The registry the platform's images are built into, where it builds any."""
        project = self.project
        repository = None
        if any(isinstance(image, ImageBuild) for image in args.images.values()):
            import pulumi_gcp.organizations as gcp_organizations

            from vertex_training.platform.registry import TrainerRepository, TrainerRepositoryArgs

            repository = TrainerRepository(
                f"{name}-registry",
                TrainerRepositoryArgs(
                    project=project,
                    region=args.region,
                    repository_id=args.repository_name or names.repository_id,
                    keep_count=args.image_keep_count,
                    labels=self.labels,
                ),
                opts=self._after(),
            )
            self.repository_url = repository.url
            # One access token pushes every image (the trainer's, the serving one).
            self._registry_token = gcp_organizations.get_client_config_output().access_token
        return repository

    def _identity(
        self,
        name: str,
        args: TrainingPlatformArgs,
        names: PlatformNames,
        bucket_name: pulumi.Input[str],
        repository: TrainerRepository | None,
    ) -> pulumi.Resource | None:
        """The service accounts the platform makes (the training one unless brought, the
        Workbench one unless given), or the training account brought."""
        from vertex_training.platform.identity import PlatformIdentity, PlatformIdentityArgs

        project = self.project
        workbench = args.workbench
        creates_workbench_account = workbench is not None and workbench.service_account is None
        brings_training = args.training_service_account is not None
        identity = None
        if not brings_training or creates_workbench_account:
            identity = PlatformIdentity(
                f"{name}-identity",
                PlatformIdentityArgs(
                    project=project,
                    bucket_name=bucket_name,
                    repository_location=args.region,
                    repository_id=(
                        repository.repository.repository_id if repository is not None else None
                    ),
                    training_account_id=None if brings_training else names.training_account_id,
                    training_email=args.training_service_account,
                    workbench_account_id=(
                        names.workbench_account_id if creates_workbench_account else None
                    ),
                ),
                opts=self._after(),
            )
            self.training_service_account = identity.training_email
            self.workbench_service_account = identity.workbench_email
            self._dependencies.append(identity)
        else:
            self.training_service_account = pulumi.Output.from_input(
                args.training_service_account  # type: ignore[arg-type]
            )
        return identity

    def _tracking(
        self,
        name: str,
        args: TrainingPlatformArgs,
        tensorboard: TensorBoard,
        stack: str,
        names: PlatformNames,
        *,
        after: pulumi.ResourceOptions,
    ) -> None:
        """The TensorBoard and experiments the platform's jobs log to."""
        project = self.project
        assert self.training_service_account is not None  # made or brought: _identity
        from vertex_training.platform.tensorboard import (
            ExperimentTracking,
            ExperimentTrackingArgs,
        )

        tracking = ExperimentTracking(
            f"{name}-tracking",
            ExperimentTrackingArgs(
                project=project,
                region=args.region,
                display_name=tensorboard.display_name or f"{stack} training",
                training_member=pulumi.Output.concat(
                    "serviceAccount:", self.training_service_account
                ),
                role_id=names.tensorboard_role_id,
                kms_key_name=args.kms_key_name,
                experiments=tensorboard.experiments,
                labels=self.labels,
                existing_tensorboard=tensorboard.existing,
            ),
            opts=after,
        )
        self.tensorboard = tracking.tensorboard_name
        self.tensorboard_url = tracking.console_url
        self._dependencies.append(tracking)

    def _workbench(
        self,
        name: str,
        args: TrainingPlatformArgs,
        workbench: Workbench,
        names: PlatformNames,
        after: pulumi.ResourceOptions,
    ) -> None:
        """The Workbench instance, and its cost estimate."""
        project = self.project
        from vertex_training.cost.estimate import EstimateError, estimate_workbench
        from vertex_training.platform.workbench import TrainingWorkbench, TrainingWorkbenchArgs

        email = workbench.service_account or self.workbench_service_account
        assert email is not None
        machine = _machine(workbench)
        instance = TrainingWorkbench(
            f"{name}-workbench",
            TrainingWorkbenchArgs(
                project=project,
                zone=workbench.zone or f"{args.region}-a",
                instance_name=names.workbench_instance,
                service_account_email=email,
                **machine,
                # prod notebooks are reached through the Workbench proxy only.
                public_ip=(
                    args.environment != "prod"
                    if workbench.public_ip is None
                    else workbench.public_ip
                ),
                network=args.network,
                subnet=args.subnet,
                labels=self.labels,
            ),
            opts=after,
        )
        self.workbench_url = instance.url
        try:
            self.cost_estimate = estimate_workbench(
                machine_type=workbench.machine_type,
                gpu_type=machine["gpu_type"],
                gpu_count=machine["gpu_count"],
                region=args.region,
            )
        except EstimateError as error:
            pulumi.log.warn(f"no cost estimate for the Workbench instance: {error}", resource=self)

    def _build(
        self, name: str, image_name: str, image: ImageBuild, repository: TrainerRepository
    ) -> pulumi.Output[str]:
        from vertex_training.platform.trainer_image import (
            TrainerImage,
            TrainerImageArgs,
            content_tag,
        )

        context = Path(image.context).resolve()
        built = TrainerImage(
            f"{name}-image-{image_name}",
            TrainerImageArgs(
                repository_url=repository.url,
                registry_host=repository.host,
                registry_token=self._registry_token,
                context_dir=context,
                dockerfile=Path(image.dockerfile).resolve()
                if image.dockerfile is not None
                else context / "Dockerfile",
                tag=content_tag(context, tuple(image.sources) if image.sources else ("",)),
                image_name=image.image_name or image_name,
            ),
            opts=self._after(repository),
        )
        self._dependencies.append(built)
        return built.reference


def platform_problems(
    args: TrainingPlatformArgs, resource_name: str
) -> tuple[list[Finding], list[Finding]]:
    """(errors, warnings) on ``args`` at ``TrainingPlatformArgs.<field>``: the rules every
    route shares (``judge_platform``), then those on what only a program gives."""
    environment = EnvironmentKind(args.environment)
    project = args.project if isinstance(args.project, str) else None
    workbench = args.workbench
    judged = judge_platform(
        PlatformValues(
            environment=environment,
            project=project,
            check_project=args.project is None or project is not None,
            region=args.region,
            bucket_name=args.bucket_name,
            derived_bucket_name=(
                derived_bucket_name(
                    project, pulumi.get_stack(), name_qualifier(resource_name, args.name_qualifier)
                )
                if project is not None and args.existing_bucket is None
                else None
            ),
            repository_name=args.repository_name,
            kms_key_name=args.kms_key_name if isinstance(args.kms_key_name, str) else None,
            image_keep_count=args.image_keep_count,
            staging_retention_days=args.staging_retention_days,
            soft_delete_retention_days=args.soft_delete_retention_days,
            workbench=_workbench_values(workbench) if workbench is not None else None,
            strict=_strict(args),
            acknowledged=tuple(args.acknowledged_hardware_checks),
        )
    )
    if args.tensorboard is not None:
        judged += tensorboard_problems(args.tensorboard.existing, args.region)
    for name, image in args.images.items():
        judged += _image_problems(f"images[{name!r}]", name, image, environment.is_cloud)
    if args.name_qualifier and not REPOSITORY_ID.match(args.name_qualifier):
        valid = (
            "None (the component's name), '' (none) or lowercase letters, digits and '-', "
            "starting with a letter"
        )
        judged.append(Finding("name_qualifier", f"{args.name_qualifier!r} invalid", valid=valid))
    if args.tensorboard is not None and not environment.is_cloud:
        message = (
            "a local platform has no Vertex AI TensorBoard; `make tensorboard STACK=local` "
            "serves the local jobs' logs"
        )
        judged.append(Finding("tensorboard", message, "warning"))
    placed = [f.at(f"TrainingPlatformArgs.{f.path}") for f in judged]
    return (
        [f for f in placed if f.severity == "error"],
        [f for f in placed if f.severity == "warning"],
    )


def _strict(args: TrainingPlatformArgs) -> bool:
    """Whether hardware the catalog does not know is refused: by default in prod only."""
    if args.strict_hardware_checks is None:
        return args.environment == "prod"
    return bool(args.strict_hardware_checks)


def _image_problems(where: str, name: str, image: object, cloud: bool) -> list[Finding]:
    if not isinstance(image, ImageBuild):
        if not isinstance(image, str):
            return []  # from another resource: judged when known, by the job rules
        return image_reference_problems(image, where, by_digest=cloud)
    problems = image_name_problems(image.image_name or name, f"{where}.image_name")
    if not cloud:
        return problems  # a local platform builds nothing: its jobs run on this machine
    context = Path(image.context)
    if not context.is_dir():
        problems.append(
            Finding(f"{where}.context", f"'{context}' is not a directory", valid="a directory")
        )
    dockerfile = Path(image.dockerfile) if image.dockerfile is not None else context / "Dockerfile"
    if not dockerfile.is_file():
        problems.append(
            Finding(f"{where}.dockerfile", f"'{dockerfile}' is not a file", valid="a file")
        )
    return problems


def _machine(workbench: Workbench) -> dict[str, Any]:
    """The Workbench fields of the machine, as ``WorkbenchValues`` and the instance name them."""
    accelerator = workbench.accelerator
    return {
        "machine_type": workbench.machine_type,
        "gpu_type": accelerator.type if accelerator else None,
        "gpu_count": accelerator.count if accelerator else 0,
        "container_image": workbench.container_image,
        "disk_size_gb": workbench.disk_size_gb,
        "idle_timeout_minutes": workbench.idle_timeout_minutes,
    }


def _workbench_values(workbench: Workbench) -> WorkbenchValues:
    machine = _machine(workbench)
    if not (is_known(machine["gpu_type"]) and is_known(machine["gpu_count"])):
        # From another resource: the GPUs are judged when known (by Vertex).
        machine.update(gpu_type=None, gpu_count=0)
    return WorkbenchValues(zone=workbench.zone, **machine)
