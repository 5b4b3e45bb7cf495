"""Estimates as text: one line per job for ``pulumi preview``, a stack total, the table of
``make estimate``. Endpoints are hourly: their rate is shown per hour beside the total."""

from __future__ import annotations

from collections.abc import Sequence

from vertex_training.cost.budget import BudgetStatus, BudgetVerdict, budget_verdict, usd
from vertex_training.cost.catalog import Pricing
from vertex_training.cost.estimate import (
    CapacityEstimate,
    CostLine,
    EndpointEstimate,
    JobEstimate,
    PoolCost,
    StackEstimate,
    WorkbenchEstimate,
)

TABLE_HEADER = ("job", "machines", "accelerators", "hours", "USD")


def usd_range(low: float, high: float) -> str:
    """``$4.10`` when both ends agree (to the cent), else ``$0.00 - $26.96``."""
    return usd(high) if f"{low:.2f}" == f"{high:.2f}" else f"{usd(low)} - {usd(high)}"


def _counted(items: list[tuple[str, int]]) -> str:
    """``2 x n1-standard-8, 1 x n1-highmem-2``: the same item in several pools added up."""
    counts: dict[str, int] = {}
    for item, count in items:
        counts[item] = counts.get(item, 0) + count
    return ", ".join(f"{count} x {item}" for item, count in counts.items() if count)


def _hardware(pools: tuple[PoolCost, ...]) -> tuple[str, str]:
    """The pools' machines and accelerators, counted ("" and "-" without)."""
    machines = _counted([(p.machine_type, p.replicas) for p in pools])
    accelerators = _counted([(p.accelerator_type, p.gpus) for p in pools if p.accelerator_type])
    return machines, accelerators or "-"


def machines_text(line: CostLine) -> str:
    text = _hardware(line.pools)[0] or "(no pools)"
    return f"{text} per trial" if isinstance(line, JobEstimate) and line.trials > 1 else text


def hours_text(line: CostLine) -> str:
    if isinstance(line, WorkbenchEstimate):
        return f"{line.hours:g} up"
    text = f"{line.hours:.2f}"
    if line.trials > 1:
        text = f"{line.trials} x {text} (wall {line.wall_hours:.2f})"
    return f"<= {text}" if line.upper_bound else text


def cost_text(low: float, high: float, unknown: bool) -> str:
    """``$4.10``, ``$0.00 - $26.96``, ``$3.00 + unknown`` or ``unknown``: an unknown price
    is never shown as $0."""
    if not unknown:
        return usd_range(low, high)
    if high <= 0:
        return "unknown"
    return f"{usd_range(low, high)} + unknown"


def hourly_text(usd_per_hour: float, unknown: bool) -> str:
    """``$0.11 per hour``, ``$0.11 per hour + unknown`` or ``unknown per hour``."""
    if unknown and usd_per_hour <= 0:
        return "unknown per hour"
    return f"{usd(usd_per_hour)} per hour" + (" + unknown" if unknown else "")


def serving_text(total: StackEstimate) -> str:
    """The endpoints' hourly rate at their minimum replicas ("" without endpoints)."""
    if not total.endpoints:
        return ""
    count = len(total.endpoints)
    text = hourly_text(total.serving.usd_per_hour, bool(total.serving.unknown))
    return (
        f"serving: {text} while deployed ({count} endpoint{'s' if count > 1 else ''} at "
        "minimum replicas; not in the total or the budget)"
    )


def capacity_text(total: StackEstimate) -> str:
    """The persistent resources' hourly rate at their minimum replicas ("" without)."""
    if not total.capacity:
        return ""
    usd_per_hour = sum(c.usd_per_hour for c in total.capacity)
    unknown = [u for c in total.capacity for u in c.unknown]
    count = len(total.capacity)
    text = hourly_text(usd_per_hour, bool(unknown))
    text = (
        f"capacity: {text} while it exists ({count} persistent resource"
        f"{'s' if count > 1 else ''} at minimum replicas; not in the total or the budget)"
    )
    if unknown:
        text += "; " + ", ".join(dict.fromkeys(map(str, unknown))) + ", not counted"
    return text


def capacity_estimate_message(estimate: CapacityEstimate) -> str:
    """One line for ``pulumi.log.info`` on a persistent resource in ``pulumi preview``."""
    machines, accelerators = _hardware(estimate.pools)
    more = f" + {accelerators}" if accelerators != "-" else ""
    text = (
        f"estimated cost of persistent resource {estimate.name}: "
        f"{hourly_text(estimate.usd_per_hour, bool(estimate.unknown))} while it exists "
        f"({machines}{more} at minimum replicas, on-demand, {estimate.region}), whether or "
        "not a job runs on it; the jobs on it add nothing per run"
    )
    return text + "".join(f"; {u}, not counted" for u in estimate.unknown)


def usd_text(line: CostLine) -> str:
    if isinstance(line, JobEstimate) and line.persistent_resource:
        return f"{usd(0)} (on {line.persistent_resource})"
    return cost_text(line.usd_low, line.usd_high, bool(line.unknown))


def job_estimate_message(estimate: JobEstimate) -> str:
    """One line for ``pulumi.log.info`` on a job resource in ``pulumi preview``."""
    pricing = "Spot" if estimate.pricing is Pricing.SPOT else "on-demand"
    per_run = f"{usd(estimate.usd_per_hour)}/h ({machines_text(estimate)}"
    accelerators = _hardware(estimate.pools)[1]
    per_run += f" + {accelerators})" if accelerators != "-" else ")"
    if estimate.trials > 1:
        hours = (
            f"{estimate.trials} trials x {estimate.hours:.2f} h, "
            f"{estimate.parallel_trials} at a time (wall {estimate.wall_hours:.2f} h)"
        )
    else:
        hours = f"{estimate.hours:.2f} h"
    if estimate.persistent_resource:
        cost = f"{usd(0)} (runs on persistent resource {estimate.persistent_resource})"
    elif estimate.unknown and estimate.usd_high <= 0:
        cost = f"unknown ({estimate.hours_basis})"
    elif estimate.upper_bound:
        more = " + unknown" if estimate.unknown else ""
        cost = f"at most {usd(estimate.usd_high)}{more} ({estimate.hours_basis}: an upper bound)"
    else:
        more = " + unknown" if estimate.unknown else ""
        cost = f"{usd(estimate.usd)}{more} ({estimate.hours_basis})"
    text = f"estimated cost of {estimate.name}: {cost}; {per_run} x {hours}, {pricing}"
    text += f", {estimate.region}"
    for unknown in estimate.unknown:
        text += f"; {unknown}, not counted"
    if estimate.persistent_resource:
        text += f"; {estimate.persistent_resource_note}"
    for note in estimate.notes:
        text += f"; {note}"
    return text


def stack_total_message(total: StackEstimate, budget: float | None = None) -> str:
    """One line for the program's ``pulumi.log.info``: the range, unknowns, the budget."""
    text = "estimated cost of this stack: " + cost_text(
        total.usd_low, total.usd_high, bool(total.unknown)
    )
    parts = [f"{len(total.jobs)} job(s) once each"]
    if any(isinstance(line, WorkbenchEstimate) for line in total.lines):
        parts.append("Workbench uptime")
    text += f" ({', '.join(parts)})"
    if total.unknown:
        text += "; " + ", ".join(str(u) for u in total.unknown) + ", not counted"
    verdict = budget_verdict(total, budget)
    if verdict is not None:
        text += f"; budget {usd(verdict.budget)} ({verdict.status})"
        if verdict.status is not BudgetStatus.WITHIN:
            text += f": {verdict.message}"
    if total.endpoints:
        text += f"; {serving_text(total)}"
        if total.serving.unknown:
            text += "; " + ", ".join(str(u) for u in total.serving.unknown) + ", not counted"
    if total.capacity:
        text += f"; {capacity_text(total)}"
    return text


def budget_line(verdict: BudgetVerdict, environment: str | None) -> str:
    """The verdict as ``make estimate`` prints it, with what the policy pack does with it."""
    text = f"budget {usd(verdict.budget)}: {verdict.status}"
    action = verdict.action(environment)
    if action == "refuse":
        text += f" (refused in {environment}): {verdict.message}"
    elif action == "warn":
        text += f" (a warning in {environment or 'this stack'}; refused in prod): "
        text += verdict.message
    return text


def estimate_table(total: StackEstimate) -> str:
    """The ``make estimate`` table, ending in ``total: $LOW - $HIGH`` (one number when exact)."""
    rows: list[Sequence[str]] = [TABLE_HEADER]
    for line in total.lines:
        machines, accelerators = _hardware(line.pools)
        rows.append(
            (line.name, machines_text(line), accelerators, hours_text(line), usd_text(line))
        )
    hourly: list[tuple[EndpointEstimate | CapacityEstimate, str, str]] = [
        *((e, "endpoint", "(no deployments)") for e in total.endpoints),
        *((r, "persistent resource", "(no pools)") for r in total.capacity),
    ]
    for item, kind, empty in hourly:
        machines, accelerators = _hardware(item.pools)
        rate = hourly_text(item.usd_per_hour, bool(item.unknown))
        rows.append((f"{item.name} ({kind})", machines or empty, accelerators, "per hour", rate))
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADER))]
    out = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    out.insert(1, "  ".join("-" * width for width in widths))
    for line in total.lines:
        for unknown in line.unknown:
            out.append(f"{line.name}: {unknown} (not counted in the total)")
    for endpoint in total.endpoints:
        for unknown in endpoint.unknown:
            out.append(f"{endpoint.name}: {unknown} (not counted in its hourly rate)")
    if any(line.upper_bound for line in total.jobs):
        out.append("<= : no expected duration, hours are the job's timeout (an upper bound)")
    for job in total.jobs:
        if job.persistent_resource:
            out.append(f"{job.name}: {job.persistent_resource_note}")
    out.append(f"total: {cost_text(total.usd_low, total.usd_high, bool(total.unknown))}")
    if total.endpoints:
        out.append(serving_text(total))
    if total.capacity:
        out.append(capacity_text(total))
    return "\n".join(out)


__all__ = [
    "TABLE_HEADER",
    "budget_line",
    "capacity_estimate_message",
    "capacity_text",
    "cost_text",
    "estimate_table",
    "hourly_text",
    "job_estimate_message",
    "serving_text",
    "stack_total_message",
    "usd",
    "usd_range",
    "usd_text",
]
