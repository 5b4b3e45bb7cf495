"""Vertex training and tuning jobs as Pulumi dynamic resources.

The provider is thin: properties -> spec -> backend, and back. It holds no client and no
credentials (dill pickles it into the state): every method builds its backend from the
resource's own ``backend`` input, so the same resource runs on Vertex or on this machine.

Lifecycle: ``check`` validates (tolerating unknowns in preview); ``diff`` replaces when
what the job runs changes and updates in place for waiting settings, the provider version
and the body's ``labels`` and ``displayName`` (``METADATA_FIELDS``: no new run);
``create`` adopts a job left by a crashed run (found by its adoption label) or submits,
then waits in bounded polls when asked; ``read`` refreshes from the service; ``delete``
cancels, waits for a terminal state, deletes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import pulumi
import pulumi.dynamic

from vertex_training._checks import is_known, require_args
from vertex_training._dynamic import (
    ADOPTION_LABEL,
    PROVIDER_VERSION,
    BackendKind,
    BackendSettings,
    Provider,
    common_inputs,
    digest,
    labelled,
    platform_options,
)
from vertex_training._secrets import SECRET_PATHS, secret_paths, warn_of_secrets
from vertex_training.cost.estimate import JobEstimate
from vertex_training.findings import Finding, render
from vertex_training.jobs.api import (
    WAITS,
    CustomJobArgs,
    HyperparameterTuningJobArgs,
    JobCapacity,
    positive_seconds,
    resolve,
)
from vertex_training.jobs.backends.base import JobNotFoundError
from vertex_training.jobs.caller_paths import caller_path
from vertex_training.jobs.placeholders import drop_unknown, masked, typed, with_placeholders
from vertex_training.jobs.records import JobKind, JobRecord, JobState
from vertex_training.jobs.refusals import refusal

if TYPE_CHECKING:
    from vertex_training.jobs.backends.vertex import VertexBackend
    from vertex_training.jobs.records import TrialResult
else:
    # The engine found it: Pulumi reads output annotations at run time to build each
    # value, and takes a TypedDict for a class to construct. At run time a trial is the
    # plain dict the provider returned; type checkers see TrialResult.
    TrialResult = dict

_log = logging.getLogger(__name__)

ArgsT = TypeVar("ArgsT", CustomJobArgs, HyperparameterTuningJobArgs)


METADATA_FIELDS = ("labels", "displayName")
"""Body fields that describe a job without changing what runs: an edit is an in-place
update. Vertex's JobService has no update RPC for CustomJob or HyperparameterTuningJob,
so there the running job keeps the values it was created with and only the stack's
state records the new ones; the local backend updates its stored job."""
_WAITING = ("wait", *WAITS)
"""How ``up`` waits: set (and judged) by the Args, read by the provider as they are (no
second default here)."""
_BAD_END = {JobState.FAILED, JobState.CANCELLED, JobState.EXPIRED}


class JobFailedError(RuntimeError):
    """The job ended FAILED / CANCELLED / EXPIRED while ``create`` waited for it."""


JUDGING = ("judged_digest", "unknown_paths", "acknowledged_hardware_checks")
"""What the program says of its judgement: the digest of the inputs it judged, the paths
it could not judge (values not known yet) and the hardware checks acknowledged."""


class JobProvider(Provider):
    """Provider for one job kind; stateless apart from that kind (it is pickled)."""

    body = "spec"
    required = ("spec", "backend", "identity", *_WAITING)
    unknown_in_preview = ("spec",)
    replacing = ("backend_target", "identity")
    """What runs (and the spec, but for ``METADATA_FIELDS``): a change is a new run, submitted
    before the old one is cancelled and deleted (``delete_before_replace`` False: the adoption
    label hashes the spec, so no mix-up)."""
    updating = (
        *_WAITING,
        *JUDGING,
        SECRET_PATHS,
        "provider_version",
        "backend",
        "expected_duration_seconds",
    )
    """Inputs that only shape how we wait or talk to the service."""
    metadata = METADATA_FIELDS
    backends = "vertex_training.jobs.backends.vertex:VertexBackend"
    outputs_from = {
        "job_name": "name",
        "job_id": "job_id",
        "state": "state",
        **{key: key for key in ("console_url", "create_time", "start_time", "end_time")},
        **{key: key for key in ("error_message", "model_dir", "web_access_uris")},
        "trials": "trials",
        "best_trial": "best_trial",
    }
    """A trial is the plain ``TrialResult`` dict of its record."""

    def __init__(self, kind: JobKind) -> None:
        super().__init__()
        self.kind = kind.value

    @property
    def job_kind(self) -> JobKind:
        return JobKind(self.kind)

    def findings(
        self, props: Mapping[str, Any], settings: BackendSettings
    ) -> list[tuple[str, Finding]]:
        """What Vertex would refuse that the program did not judge: the body through the
        real protos (unknown fields, wrong types, enum names: what ``extra_fields`` set);
        every rule on inputs that are not exactly those the program judged (their digest
        differs: a resource transform, a body edited in state, a program that registers
        the type itself); else the rules on the values that were not known when it judged
        (``unknown_paths``), known now; on a local platform, what only Vertex has. Values
        not known yet (preview) stand in as placeholders and are not judged."""
        from vertex_training.jobs.protos import BodyParseError, parse_body
        from vertex_training.jobs.rules.job import JobSite, Known, job_findings
        from vertex_training.jobs.view import read_view

        later = list(props.get("unknown_paths") or [])
        as_judged = props.get("judged_digest") == self.judged_digest(props, later)
        found = [] if as_judged else positive_seconds(props)
        body, unknown = with_placeholders(dict(props["spec"]))
        try:
            message = parse_body(self.job_kind, body)
        except BodyParseError as error:
            # A stand-in may not be of its field's type: judged once the value is known.
            refused = [(self.body, error.finding)] if typed(unknown) else []
            return [*self._at_inputs(found), *refused]
        if not as_judged or later:
            view, unreadable = read_view(self.job_kind, body)
            rules = drop_unknown(unreadable, unknown)
            if view is not None:
                remote = settings.kind is BackendKind.VERTEX
                acknowledged = props.get("acknowledged_hardware_checks") or ()
                region = settings.location if remote else None
                rules = job_findings(
                    view,
                    JobSite(remote=remote, region=region, acknowledged=tuple(acknowledged)),
                    Known(unknown=tuple(unknown), later=tuple(later) if as_judged else None),
                )
            if as_judged:  # judge only what the program could not
                rules = [f for f in rules if f not in drop_unknown(rules, later)]
            found += [f for f in rules if f.severity == "error"]
        if settings.kind is BackendKind.LOCAL:
            # What only Vertex has fails preview here, as it would fail `up` at create.
            from vertex_training.jobs.local_support import local_refusals

            found += local_refusals(message)
        return self._at_inputs(found)

    @staticmethod
    def judged_digest(props: Mapping[str, Any], unknown: Sequence[str]) -> str:
        """The digest of what a job's rules judge of its inputs: the body, how ``up`` waits
        and where the job runs; the values at the API paths ``unknown`` left out."""
        backend = props["backend"]
        waits = {key: props[key] for key in WAITS}
        where = [backend.get("kind"), backend.get("location")]
        return digest(masked(props["spec"], frozenset(unknown)), waits, where)

    def _at_inputs(self, found: list[Finding]) -> list[tuple[str, Finding]]:
        """Each finding with its input: a wait's own, else the body."""
        return [(f.path if f.path in self.required else self.body, f) for f in found]

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        # Judged by ``check``, which the engine runs first.
        backend = self.backend(props)
        # The adoption label parses the body once; the backend parses what it submits.
        adoption = self.adoption_labels(props)
        found = backend.find(self.job_kind, adoption)
        if found is not None and found.state not in _BAD_END:
            _log.info("adopting %s (left by an earlier run), state %s", found.name, found.state)
            record = found
        else:
            body = labelled(props["spec"], str(props["identity"]), adoption)
            record = backend.submit(self.job_kind, body)
        if props["wait"]:
            record = backend.wait(
                record.name,
                props["wait_timeout_seconds"],
                props["poll_interval_seconds"],
                hint="it keeps running and the next `pulumi up` adopts it. Raise "
                "wait_timeout_seconds or set wait: false.",
                report=True,
            )
            if record.state in _BAD_END:
                where = f" -- {record.console_url}" if record.console_url else ""
                raise JobFailedError(
                    f"{record.name} ended {record.state.value}: "
                    f"{record.error_message or 'no error message'}{where}"
                )
        outs = {**self.inputs(props), **self.outputs(record, props)}
        return pulumi.dynamic.CreateResult(id_=record.name, outs=outs)

    def fetch(self, backend: VertexBackend, id_: str) -> JobRecord:
        return backend.get(id_)

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        # Only settling inputs or the body's metadata changed (diff replaces otherwise).
        if self.metadata_changed(olds, news):
            _log.warning(
                "%s: the job keeps its labels and display name (Vertex has no update call "
                "for them); the new ones are recorded in the stack's state and are sent with "
                "the job's next run",
                id_,
            )
        outs = {k: olds.get(k) for k in self.output_names()}
        return pulumi.dynamic.UpdateResult(outs={**self.inputs(news), **outs})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        backend = self.backend(props)
        try:
            record = backend.get(id_)
            if not record.state.is_terminal:
                backend.cancel(id_)
                backend.wait(
                    id_,
                    props["delete_timeout_seconds"],
                    props["poll_interval_seconds"],
                    hint="after cancel; retry the destroy later.",
                )
        except JobNotFoundError:
            return  # gone already
        backend.delete(id_)


class _JobResource(pulumi.dynamic.Resource, Generic[ArgsT]):
    _args_type: ClassVar[type[CustomJobArgs] | type[HyperparameterTuningJobArgs]]

    job_name: pulumi.Output[str]
    """Full resource name ``projects/P/locations/L/<kind>/ID`` (local: ``local/...``)."""
    job_id: pulumi.Output[str]
    state: pulumi.Output[str]
    """``JobState`` name without ``JOB_STATE_`` (``SUCCEEDED``, ``RUNNING``...) when the
    job was created or last refreshed."""
    console_url: pulumi.Output[str | None]
    """Where to watch the job: the Cloud console page, or the local job directory."""
    create_time: pulumi.Output[str | None]
    start_time: pulumi.Output[str | None]
    end_time: pulumi.Output[str | None]
    error_message: pulumi.Output[str | None]
    """Why the job failed, when it did."""
    model_dir: pulumi.Output[str | None]
    """``AIP_MODEL_DIR``: ``<base_output_directory>/model`` (per trial for studies)."""
    web_access_uris: pulumi.Output[dict[str, str]]
    """Interactive shell URIs by replica, with ``enable_web_access``."""
    spec: pulumi.Output[dict[str, Any]]
    """The job's Vertex REST body, exactly as it was sent."""
    cost_estimate: JobEstimate | None
    """What one run costs, priced at construction; None on a local platform (or when the
    body cannot be priced, with a warning saying why)."""

    def __init__(
        self, resource_name: str, args: ArgsT, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        """Validate ``args`` (raising ``InvalidArgumentsError`` before anything is
        registered, naming each wrong argument) and register the job."""
        require_args(type(self).__name__, resource_name, args, self._args_type)
        cls = type(self).__name__
        job = resolve(args, resource_name)
        errors = [f for f in job.findings if f.severity == "error"]
        if errors:
            raise refusal(type(args).__name__, errors, f"{cls} {resource_name!r} would be refused")
        platform, body = job.platform, job.body
        backend = BackendSettings.of(platform)
        opts = platform_options(args, opts)
        props: dict[str, Any] = {
            "spec": body,
            **common_inputs(resource_name, backend, platform.project, PROVIDER_VERSION),
            **{key: getattr(args, key) for key in (*_WAITING, "expected_duration_seconds")},
            "unknown_paths": list(job.unknown),
            "acknowledged_hardware_checks": list(job.acknowledged),
            SECRET_PATHS: secret_paths(body),
            **dict.fromkeys(JobProvider.output_names()),
        }
        # ``check`` judges these inputs again unless they are exactly the ones judged here,
        # and in any case the values not known here, once they are.
        props["judged_digest"] = JobProvider.judged_digest(props, job.unknown)
        fields = args if isinstance(args, CustomJobArgs) else args.trial
        capacity = fields.persistent_resource_id
        if is_known(capacity) and isinstance(capacity, JobCapacity):
            opts = pulumi.ResourceOptions.merge(opts, capacity.resource_options())
        super().__init__(JobProvider(self._args_type.KIND), resource_name, props, opts)
        run = body.get("jobSpec") or body.get("trialJobSpec") or {}
        self.writes_model = "baseOutputDirectory" in run
        """Whether Vertex gives the job an ``AIP_MODEL_DIR`` (a Model can come from it)."""
        owner = type(args).__name__
        for warning in job.findings:
            pulumi.log.warn(render(warning, "python", owner), resource=self)
        warn_of_secrets(
            self,
            props[SECRET_PATHS],
            lambda f: render(f.at(caller_path(args, f.path)), "python", owner),
        )
        self.cost_estimate = None
        if platform.environment == "local" or job.view is None:
            return
        # What one run costs, as a diagnostic where decisions are made (`pulumi preview`);
        # values not known yet do not change a price.
        from vertex_training.cost.estimate import EstimateError
        from vertex_training.cost.report import job_estimate_message
        from vertex_training.jobs.estimate import estimate_view

        try:
            self.cost_estimate = estimate_view(
                job.view,
                platform.region,
                name=resource_name,
                expected_duration_seconds=args.expected_duration_seconds,
            )
        except EstimateError as error:
            pulumi.log.warn(f"no cost estimate: {error}", resource=self)
        else:
            pulumi.log.info(job_estimate_message(self.cost_estimate), resource=self)


class CustomJob(_JobResource[CustomJobArgs], module="vertex", name="CustomJob"):
    """A Vertex AI CustomJob (``pulumi-python:dynamic/vertex:CustomJob``).

    ``pulumi up`` submits it (or adopts the run a crashed ``up`` left) and, with
    ``wait``, waits for it to end; a change to what it runs replaces it with a new run,
    a change to its labels or display name alone is an in-place update (no new run;
    Vertex cannot relabel a job: it is recorded in the state only);
    ``pulumi destroy`` cancels and deletes it. On a local platform it runs on this
    machine, one process per replica."""

    _args_type = CustomJobArgs


class HyperparameterTuningJob(
    _JobResource[HyperparameterTuningJobArgs], module="vertex", name="HyperparameterTuningJob"
):
    """A Vertex AI HyperparameterTuningJob
    (``pulumi-python:dynamic/vertex:HyperparameterTuningJob``): trials chosen by the
    study, their metrics, and the best one."""

    _args_type = HyperparameterTuningJobArgs

    trials: pulumi.Output[list[TrialResult]]
    """Every trial (:class:`TrialResult`): ``trial_id``, ``state``, ``parameters`` (by
    parameter id), ``final_metrics`` (by metric id), ``infeasible_reason``,
    ``early_stopped``, times."""
    best_trial: pulumi.Output[TrialResult | None]
    """The trial with the best value of the study's first metric, by its goal."""


__all__ = [
    "ADOPTION_LABEL",
    "METADATA_FIELDS",
    "PROVIDER_VERSION",
    "CustomJob",
    "HyperparameterTuningJob",
    "JobFailedError",
    "JobProvider",
    "declare_job",
]


def declare_job(
    resource_name: str,
    args: CustomJobArgs | HyperparameterTuningJobArgs,
    opts: pulumi.ResourceOptions | None = None,
) -> CustomJob | HyperparameterTuningJob:
    """A ``CustomJob`` or ``HyperparameterTuningJob``, whichever ``args`` declare."""
    if isinstance(args, HyperparameterTuningJobArgs):
        return HyperparameterTuningJob(resource_name, args, opts)
    return CustomJob(resource_name, args, opts)
