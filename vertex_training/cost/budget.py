"""The one budget verdict: ``make estimate``, the program's preview line and the policy pack
all call ``budget_verdict`` and act on it the same way.

- ``within``: the estimate's high end is known and fits;
- ``over``: the known part alone is over the budget (unknown prices can only add to it);
- ``unknown``: some price is unknown and the known part fits, so nobody can say.

``over`` and ``unknown`` are refused in prod (the ``budget-prod`` policy is mandatory) and
warned about everywhere else; an unknown price never counts as $0 and never reads "within".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from vertex_training.cost.estimate import StackEstimate

Action = Literal["refuse", "warn"]

REFUSING_ENVIRONMENTS = frozenset({"prod"})
"""Where ``over`` and ``unknown`` are refused: the environments of the mandatory
``budget-prod`` policy."""


class BudgetStatus(enum.StrEnum):
    WITHIN = "within"
    OVER = "over"
    UNKNOWN = "unknown"


def usd(amount: float) -> str:
    return f"${amount:,.2f}"


@dataclass(frozen=True)
class BudgetVerdict:
    """A stack estimate judged against its budget."""

    status: BudgetStatus
    budget: float
    message: str
    """One sentence, the same in the table, the preview line and the policy violation."""

    def action(self, environment: str | None) -> Action | None:
        """``refuse`` in prod, ``warn`` elsewhere; None when the estimate fits."""
        if self.status is BudgetStatus.WITHIN:
            return None
        return "refuse" if environment in REFUSING_ENVIRONMENTS else "warn"


def budget_verdict(total: StackEstimate, budget: float | None) -> BudgetVerdict | None:
    """``total`` against ``budget`` (USD); None when the stack sets no budget.

    The high end counts: a job bounded by its timeout may cost that much, and a budget is
    a cap.
    """
    if budget is None:
        return None
    known = total.usd_high
    if known > budget:
        if total.unknown:
            cost = f"at least {usd(known)} (plus unknown prices)"
        else:
            cost = usd(known) if total.exact else f"at most {usd(known)}"
        return BudgetVerdict(
            BudgetStatus.OVER,
            budget,
            f"estimated cost {cost} is over the budget of {usd(budget)} (jobs bounded by "
            "their timeouts count at the timeout; declare an expected duration to narrow it)",
        )
    if total.unknown:
        named = ", ".join(str(u) for u in total.unknown)
        return BudgetVerdict(
            BudgetStatus.UNKNOWN,
            budget,
            f"the estimate cannot be checked against the budget of {usd(budget)}: {named} "
            f"(known part {usd(known)}); price them in prices.json or refresh it",
        )
    return BudgetVerdict(
        BudgetStatus.WITHIN, budget, f"estimated cost fits the budget of {usd(budget)}"
    )


__all__ = [
    "REFUSING_ENVIRONMENTS",
    "Action",
    "BudgetStatus",
    "BudgetVerdict",
    "budget_verdict",
    "usd",
]
