"""Which machines, accelerators, TPU topologies, regions and zones go together.

The facts live in ``hardware_catalog.json`` next to this module: every section names the
Google pages it comes from and the date it was read. This module only applies them, by one
rule: refuse what the catalog knows to be wrong (severity ``"error"``, saying what would be
valid) and warn about what it does not know (severity ``"warning"``, naming the catalog's
as-of date), so that a machine Google launched after that date is never refused here.
``strict=True`` turns the "not known" warnings into errors.

Two targets share the data (``Target``, the price catalog's too): ``"training"`` (Vertex AI
custom training: Vertex's own machine and GPU tables) and ``"workbench"`` (Workbench
instances are Compute Engine VMs, so GPUs on n1 follow Compute Engine's per-count vCPU and
memory limits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence

from vertex_training._spelling import closest, did_you_mean
from vertex_training.cost.catalog import Target
from vertex_training.findings import Finding, Severity
from vertex_training.jobs.rules.catalog import (
    MACHINE_NAME,
    REGION_NAME,
    TOPOLOGY,
    MachineType,
    catalog,
)

# --- helpers ---------------------------------------------------------------------------


def normalize_accelerator(accelerator_type: str | None) -> str | None:
    """``None`` for "no accelerator" in either spelling the API accepts."""
    if accelerator_type in (None, "", "ACCELERATOR_TYPE_UNSPECIFIED"):
        return None
    return accelerator_type


_SERVICE: dict[Target, str] = {"training": "Vertex", "workbench": "Compute Engine"}
"""Who refuses what each target gets wrong."""


def _fmt(values: Iterable[object]) -> str:
    return ", ".join(str(v) for v in values)


def _machine_list(names: Iterable[str]) -> str:
    """``n1-standard-{4,8,16}, a2-highgpu-1g``: machines grouped by their name's prefix."""
    groups: dict[str, list[str]] = {}
    for name in names:
        prefix, _, last = name.rpartition("-")
        groups.setdefault(prefix, []).append(last)
    parts = []
    for prefix, lasts in groups.items():
        lasts.sort(key=lambda s: (len(s), s))
        parts.append(f"{prefix}-{lasts[0] if len(lasts) == 1 else '{' + ','.join(lasts) + '}'}")
    return ", ".join(parts)


def _offers(machine: MachineType) -> str:
    return "; ".join(f"{t} x {_fmt(sorted(c))}" for t, c in sorted(machine.accelerators.items()))


def _partial(complete: bool) -> tuple[Severity, str]:
    """A list the catalog marks partial cannot show a value wrong: a warning, and its date."""
    return ("error", "") if complete else ("warning", f" (as of {catalog().as_of})")


# --- machine spec ----------------------------------------------------------------------


def _unknown_machine(machine_type: str, target: Target, path: str) -> Finding:
    """The finding for a name-shaped machine type the target's table does not list."""
    cat = catalog()
    family, *middle, _ = machine_type.split("-")
    machines = cat.machines[target]
    families = sorted({m.family for m in machines.values()})
    field = f"{path}.machineType"
    if family not in families:
        # Vertex (and Compute Engine) take only the families they list; the catalog's
        # machine types name them all (a family launched later means a catalog update).
        # Workbench instances are Compute Engine VMs: no TPU family is among theirs.
        tpu = cat.machines["training"].get(machine_type)
        if target == "workbench" and tpu is not None and (tpu.topologies or tpu.accelerators):
            message = (
                f"{machine_type!r} is a TPU machine type, which Vertex training offers and "
                f"Compute Engine VMs are not; families: {_fmt(families)}"
            )
            return Finding(field, message, "error", f"unknown-family:{family}")
        guess = closest(machine_type, machines) or closest(family, families)
        hint = f" (did you mean {guess!r}?)" if guess else ""
        message = (
            f"{machine_type!r} matches no {_SERVICE[target]} machine family{hint}; families: "
            f"{_fmt(families)} (hardware catalog of {cat.as_of})"
        )
        return Finding(field, message, "error", f"unknown-family:{family}")
    kin = [n for n, m in machines.items() if m.family == family]
    if sizes := [n for n in kin if n.startswith(f"{machine_type}-")]:
        message = f"{machine_type!r} names a series without its size"
        return Finding(field, message, "error", valid=_machine_list(sizes))
    # A size missing from a family the catalog marks partial cannot be called wrong, so it
    # stays a warning in strict mode too: strict refuses only unheard-of names.
    severity, as_of = _partial(cat.families[family])
    note = ""
    if target == "training" and machine_type in cat.machines["workbench"]:
        note = f" ({machine_type} exists on Compute Engine but Vertex training does not offer it)"
    series = "-".join([family, *middle, ""])
    valid = _machine_list([n for n in kin if n.startswith(series)] or kin)
    message = f"{machine_type!r} is not a {_SERVICE[target]} machine type{note}; valid: {valid}"
    return Finding(field, message + as_of, severity, f"machine-type:{machine_type}")


def _check_accelerator_fit(
    machine: MachineType, accelerator: str | None, count: int, target: Target, path: str
) -> Finding | None:
    field = f"{path}.acceleratorType"
    if accelerator is None:
        if not machine.accelerator_required:
            return None
        message = f"{machine.name} comes with its accelerators and needs them set: "
        check = f"accelerator-required:{machine.name}"
        return Finding(field, message + _offers(machine), "error", check)
    info = catalog().accelerators[accelerator]
    if info.retired:
        # Retired is known wrong on both targets: Vertex and Compute Engine refuse it.
        instead = f"; use {info.replacement}" if info.replacement else ""
        message = f"{accelerator} {info.retired}{instead}"
        return Finding(field, message, "error", f"retired:{accelerator}")
    counts = machine.accelerators.get(accelerator)
    if counts is None:
        if machine.accelerators:
            why = f"{machine.name} does not take {accelerator}; it takes {_offers(machine)}"
        else:
            why = f"{machine.name} takes no accelerators"
        return _not_attached(path, accelerator, machine.name, target, why)
    if count in counts:
        return None
    # Count 0 with a type set: Vertex and Compute Engine refuse it, whatever the catalog's date.
    severity, as_of = _partial(count == 0 or machine.counts_complete)
    unset = ", or unset acceleratorType for no accelerator" if count == 0 else ""
    valid = f"{_fmt(sorted(counts))}{unset}{as_of}"
    message = f"{count} x {accelerator} on {machine.name} is not valid; valid counts: {valid}"
    check = f"accelerator-count:{accelerator}x{count}@{machine.name}" if count else ""
    return Finding(f"{path}.acceleratorCount", message, severity, check)


def _check_topology(machine: MachineType | None, topology: str | None, path: str) -> Finding | None:
    field = f"{path}.tpuTopology"
    if not topology:
        if machine is None or len(machine.topologies) < 2:
            return None
        message = (
            f"tpuTopology is unset; {machine.name} hosts the slices "
            f"{_fmt(machine.topologies)}: name the one to use"
        )
        return Finding(field, message, "warning", f"topology-unset:{machine.name}")
    if not TOPOLOGY.match(topology):
        message = (
            f"tpuTopology {topology!r} is not a topology: chip counts per dimension "
            "joined by 'x', e.g. '2x2' or '2x2x1'"
        )
        return Finding(field, message, "error", "topology-name")
    if machine is None or topology in machine.topologies:
        return None
    check = f"topology:{machine.name}@{topology}"
    if not machine.topologies:
        return Finding(field, f"{machine.name} takes no tpuTopology: unset it", "error", check)
    severity, as_of = _partial(machine.topologies_complete)
    hosts = f"{machine.name} does not host a {topology} slice; it hosts: "
    return Finding(field, f"{hosts}{_fmt(machine.topologies)}{as_of}", severity, check)


def _not_attached(
    path: str, accelerator: str, machine: str, target: Target, why: str | None = None
) -> Finding | None:
    """An accelerator on a machine it does not attach to: ``why``, and what it goes with.
    ``why`` None: a machine type the catalog does not list, known wrong only off the
    families the catalog lists for the accelerator (the accelerators section marks that
    list complete), even when its size is unknown."""
    taking = [m for m in catalog().machines[target].values() if accelerator in m.accelerators]
    families = sorted({m.family for m in taking})
    if why is None:
        family = machine.partition("-")[0]
        if family in families or not (catalog().attach_families_complete and families):
            return None
        why = f"{accelerator} attaches only to {_fmt(families)} machine types, not to {machine}"
    if taking:
        goes = f"{accelerator} goes with: {_machine_list(m.name for m in taking)}"
    else:
        goes = f"no {target} machine type in the catalog takes {accelerator}"
    check = f"attach:{accelerator}@{machine}"
    return Finding(f"{path}.acceleratorType", f"{why}; {goes}", "error", check)


def _check_provisioning(
    machine: MachineType, strategy: str | None, target: Target, path: str
) -> Finding | None:
    """Machines Google sells only as Spot or Flex-start (a3-highgpu-1g/2g/4g)."""
    wanted = (strategy or "STANDARD").upper()
    if not machine.provisioning or wanted in machine.provisioning:
        return None
    allowed = " or ".join(machine.provisioning)
    if target == "workbench":
        message = f"{machine.name} is offered only as {allowed} VMs, which a Workbench instance "
        message += "is not; pick another machine type"
        check = f"provisioning:{machine.name}@WORKBENCH"
        return Finding(f"{path}.machineType", message, "error", check)
    machines = catalog().machines[target].values()
    unrestricted = [m.name for m in machines if m.family == machine.family and not m.provisioning]
    message = (
        f"{machine.name} is offered only with scheduling.strategy {allowed}, not "
        f"{wanted}; set strategy: SPOT or FLEX_START, or use a machine sold on demand "
        f"({_machine_list(unrestricted)})"
    )
    field = f"{path.split('.workerPoolSpecs', 1)[0]}.scheduling.strategy"
    return Finding(field, message, "error", f"provisioning:{machine.name}@{wanted}")


def check_machine_spec(
    path: str,
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    tpu_topology: str | None = None,
    *,
    target: Target = "training",
    scheduling_strategy: str | None = None,
    provisioning: bool = True,
) -> list[Finding]:
    """Findings for one ``machineSpec`` at ``path`` (empty: the catalog accepts it), whose
    machine type is set and accelerator count not negative (what a pool must be anywhere).

    ``scheduling_strategy``: the job's ``scheduling.strategy`` (None: STANDARD), for
    machines sold only as Spot or Flex-start; ``provisioning`` False: leave that to the
    job (``check_job``), where a training pool meets its strategy.
    """
    cat = catalog()
    findings: list[Finding | None] = []
    accelerator = normalize_accelerator(accelerator_type)
    if accelerator is None and accelerator_count > 0:
        message = f"acceleratorCount is {accelerator_count} but acceleratorType is unset; set "
        message += "acceleratorType or use acceleratorCount 0"
        findings.append(
            Finding(f"{path}.acceleratorCount", message, "error", "accelerator-count-without-type")
        )
    known_accelerator = accelerator is None or accelerator in cat.accelerators
    if not known_accelerator:
        # The catalog names every value of the API's AcceleratorType enum (a test holds it
        # to the real protos): any other name is refused by Vertex, whatever the date.
        message = f"{accelerator!r} is not an AcceleratorType"
        message += f"{did_you_mean(str(accelerator), cat.accelerators)}; valid: "
        message += _fmt(cat.accelerators)
        check = f"accelerator-name:{accelerator}"
        findings.append(Finding(f"{path}.acceleratorType", message, "error", check))
    machine = cat.machines[target].get(machine_type)
    if not MACHINE_NAME.match(machine_type):
        message = f"machineType {machine_type!r} is not a machine type name (lowercase words "
        message += "joined by '-', e.g. 'n1-standard-8')"
        findings.append(Finding(f"{path}.machineType", message, "error", "machine-type-name"))
    elif machine is None:
        findings.append(_unknown_machine(machine_type, target, path))
        if known_accelerator and accelerator is not None:
            findings.append(_not_attached(path, accelerator, machine_type, target))
    else:
        if known_accelerator:
            findings.append(
                _check_accelerator_fit(machine, accelerator, accelerator_count, target, path)
            )
        if provisioning:
            findings.append(_check_provisioning(machine, scheduling_strategy, target, path))
    findings.append(_check_topology(machine, tpu_topology, path))
    return [f for f in findings if f is not None]


Machine = tuple[str, str | None, str | None, int, str | None]
"""A training pool's ``machineSpec``: its API path, machine type, accelerator type and
count, TPU topology."""


def check_job(
    machines: Sequence[Machine],
    *,
    strategy: str | None,
    provisioning: bool = True,
    specs: Collection[str] = (),
    region: str | None = None,
    strict: bool = False,
) -> list[Finding]:
    """The hardware of one training job, its pools' ``machines``: the machine specs at the
    paths ``specs`` in full (what a pool must be anywhere, for pools not judged where they
    were built); with ``provisioning``, each machine against the job's scheduling
    ``strategy``; with a ``region`` (None: the local backend), the accelerators of all the
    pools there."""
    found: list[Finding] = []
    for path, machine_type, accelerator, count, topology in machines:
        if path in specs and machine_type:
            found += check_machine_spec(
                path,
                machine_type,
                accelerator,
                count,
                topology,
                scheduling_strategy=strategy,
                provisioning=provisioning,
            )
        elif provisioning and (machine := catalog().machines["training"].get(machine_type or "")):
            sold = _check_provisioning(machine, strategy, "training", path)
            found += [] if sold is None else [sold]
    if region is not None:
        wanted = [(path, accel) for path, _, accel, count, _ in machines if accel and count]
        found += check_region(region, wanted, strict=strict)
    return found


def acknowledge(findings: Iterable[Finding], acknowledged: Iterable[str]) -> list[Finding]:
    """``findings`` with every error whose check is ``acknowledged`` made a warning.

    The override for one check: a stack, platform, job or pool that knows better than the
    catalog (a GPU Google added to a region after the catalog's as-of date) names the check
    id from the error.
    """
    ids = frozenset(acknowledged)
    return [
        dataclasses.replace(f, severity="warning", acknowledged=True)
        if f.severity == "error" and f.check in ids
        else f
        for f in findings
    ]


# --- regions and zones -----------------------------------------------------------------


def _unknown_region(region: str, strict: bool) -> Finding:
    cat = catalog()
    if not REGION_NAME.match(region):
        message = f"region {region!r} is not a region name (e.g. 'us-central1')"
        return Finding("region", message, "error", "region-name")
    known = sorted(cat.regions)
    guess = closest(region, known, cutoff=0.8)
    if guess is not None:
        # A near miss of a region Vertex has is a typo, not a region newer than the catalog.
        message = f"{region!r} is not a Vertex AI region (did you mean {guess!r}?)"
        return Finding("region", message, "error", valid=_fmt(known))
    message = f"region {region!r} is not in the hardware catalog (as of {cat.as_of}); "
    message += f"Vertex will decide at submit. Known regions: {_fmt(known)}"
    return Finding("region", message, "error" if strict else "warning", f"unknown-region:{region}")


def _not_offered(path: str, accelerator: str, region: str, zone: str | None = None) -> Finding:
    """An accelerator the catalog does not list in ``region`` (or its ``zone``): an error
    when its region list is complete, the region is known not to offer it or the region's
    zone split is (the zone's own list is authoritative), else a warning (strict or not: a
    partial list cannot show that a pair is wrong)."""
    cat = catalog()
    info = cat.accelerators[accelerator]
    known = cat.regions[region]
    check = f"accelerator-{'zone' if zone else 'region'}:{accelerator}@{zone or region}"
    offered = sorted(known.zone_accelerators.get(zone or "", known.accelerators))
    in_region = zone is not None and accelerator in known.accelerators
    if in_region:
        zones = sorted(z for z, accs in known.zone_accelerators.items() if accelerator in accs)
        elsewhere = f"{region} zones offering {accelerator}: {_fmt(zones)}"
    else:
        regions = sorted(n for n, r in cat.regions.items() if accelerator in r.accelerators)
        elsewhere = f"regions offering {accelerator}: {_fmt(regions) or 'none known'}"
    message = (
        f"{accelerator} is not offered in {f'zone {zone}' if zone else f'region {region}'} "
        f"(it offers {_fmt(offered) if offered else 'no accelerators'}); {elsewhere}"
    )
    if in_region or info.regions_complete or region in info.absent_regions:
        return Finding(path, message, "error", check)
    note = f". The catalog's region list for {accelerator} may be partial (as of {cat.as_of})"
    return Finding(path, f"{message}{note}; Vertex will decide at submit", "warning", check)


def check_region(
    region: str, accelerators: Sequence[tuple[str, str | None]], *, strict: bool = False
) -> list[Finding]:
    """Findings for one job's region (at the field ``region``, the caller's argument or
    config key) against the accelerators of all its pools.

    ``accelerators`` pairs each pool's machineSpec path with its accelerator type. Each type
    must be offered in the region, and one zone of the region must offer all of them: a
    job's VMs run in one zone.
    """
    cat = catalog()
    known = cat.regions.get(region)
    if known is None:
        return [_unknown_region(region, strict)]
    findings = []
    wanted: set[str] = set()
    for pool_path, accelerator in accelerators:
        if accelerator in known.accelerators:
            wanted.add(accelerator)
        elif accelerator is not None and accelerator in cat.accelerators:
            # (check_machine_spec reports a name the catalog does not know)
            findings.append(_not_offered(f"{pool_path}.acceleratorType", accelerator, region))
    # Accelerator sets one zone offers together; one set when no zone split is known.
    zone_sets = known.zone_accelerators.values() or [known.accelerators]
    if len(wanted) > 1 and not any(wanted <= zone for zone in zone_sets):
        message = (
            f"{_fmt(sorted(wanted))} are each offered in {region} but no single zone offers "
            "them together, and a job's VMs share one zone: use fewer accelerator types or "
            "another region"
        )
        check = f"one-zone:{'+'.join(sorted(wanted))}@{region}"
        findings.append(Finding("region", message, "error", check))
    return findings


def check_zone(*, path: str, zone: str, accelerator_type: str | None = None) -> list[Finding]:
    """Findings for a zone (e.g. a Workbench instance's) whose name its caller checked: it
    exists and offers the accelerator. A zone of a region the catalog does not list is left
    to ``check_region``, which judges that region."""
    name = zone.rsplit("-", 1)[0]
    region = catalog().regions.get(name)
    if region is None:
        return []
    if zone not in region.zones:
        message = f"zone {zone!r} does not exist; {name} zones: {_fmt(region.zones)}"
        return [Finding(path, message, "error", f"zone:{zone}")]
    accelerator = accelerator_type or ""
    offered = region.zone_accelerators.get(zone, region.accelerators)
    if accelerator not in catalog().accelerators or accelerator in offered:
        return []  # no accelerator, one check_machine_spec refuses, or one the zone offers
    return [_not_offered(path, accelerator, name, zone)]


__all__ = [
    "acknowledge",
    "check_job",
    "check_machine_spec",
    "check_region",
    "check_zone",
    "normalize_accelerator",
]
