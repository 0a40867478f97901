"""Read paths of auto-decision policies: the list in order, one policy's matches, and the stats page
(per policy: matches, agreement of shadow decisions with people's, and the time they would have saved)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone

from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest, PolicyMatch


def policy_list() -> QuerySet[Policy]:
    return (
        Policy.objects.select_related("agent", "team", "route_team")
        .annotate(match_count=Count("matches"))
        .order_by("position", "pk")
    )


def recent_matches(policy: Policy, limit: int = 50) -> list[PolicyMatch]:
    return list(
        policy.matches.select_related("item", "item__agent", "item__decided_by", "decision").order_by(
            "-created_at", "-pk"
        )[:limit]
    )


def human_verdict(item: InboxItem) -> str | None:
    """``approved`` / ``denied`` for an item a person decided (a cancel is not approving), else None."""
    if item.status == InboxItem.Status.CANCELLED:
        return "denied"
    if item.status != InboxItem.Status.RESOLVED:
        return None
    return "denied" if item.outcome == InboxItem.Outcome.DENIED else "approved"


# What people decided against what an approve or deny policy would have: an edit is not the plain approval a
# policy sends, a cancel is not approving; answers to questions and forms compare with neither.
AGREEING_OUTCOMES: dict[str, frozenset[str]] = {
    Policy.Action.APPROVE.value: frozenset({InboxItem.Outcome.APPROVED.value}),
    Policy.Action.DENY.value: frozenset({InboxItem.Outcome.DENIED.value, InboxItem.Outcome.CANCELLED.value}),
}
COMPARED_OUTCOMES = frozenset(
    {
        InboxItem.Outcome.APPROVED.value,
        InboxItem.Outcome.APPROVED_WITH_EDITS.value,
        InboxItem.Outcome.DENIED.value,
        InboxItem.Outcome.CANCELLED.value,
    }
)


def agrees(action: str, outcome: str) -> bool | None:
    """Whether people's decision (an ``InboxItem.Outcome``) is what a policy with ``action`` would have done; None
    when there is nothing to compare (an action that decides nothing, an answer to a form or question)."""
    agreeing = AGREEING_OUTCOMES.get(action)
    if agreeing is None or outcome not in COMPARED_OUTCOMES:
        return None
    return outcome in agreeing


def shadow_agrees(match: PolicyMatch, item: InboxItem) -> bool | None:
    """Whether people decided as the shadow policy would have (``agrees``); None when there is nothing to compare
    (the item is still open, expired, decided by a policy, or the action was not approve/deny)."""
    if item.decided_by_id is not None and hasattr(item.decided_by, "inbox_policy"):
        return None
    if item.status not in InboxItem.DECIDED:
        return None
    return agrees(match.action, item.outcome)


@dataclass
class PolicyStats:
    policy: Policy
    matches: int = 0
    decided: int = 0  # enforced matches that decided an item
    compared: int = 0  # shadow approve/deny matches on items people decided
    agreed: int = 0
    time_saved: timedelta = field(default_factory=timedelta)
    outcomes: dict[str, int] = field(default_factory=dict)  # matches per PolicyMatch.Outcome

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


def policy_stats(policies: list[Policy] | None = None) -> list[PolicyStats]:
    """One row per policy. Time saved: for each shadow match people agreed with, how long the item waited
    for them (created → decided); for enforced decisions, nothing is measured (nobody waited)."""
    policies = list(policies if policies is not None else Policy.objects.order_by("position", "pk"))
    rows = {policy.pk: PolicyStats(policy) for policy in policies}
    matches = (
        PolicyMatch.objects.filter(policy__in=list(rows))
        .select_related("item", "item__decided_by__inbox_policy")
        .order_by()
    )
    for match in matches.iterator(chunk_size=2000):
        row = rows[match.policy_id]
        row.matches += 1
        row.outcomes[match.outcome] = row.outcomes.get(match.outcome, 0) + 1
        if match.outcome == PolicyMatch.Outcome.DECIDED:
            row.decided += 1
        if match.mode != Policy.Mode.SHADOW:
            continue
        agrees = shadow_agrees(match, match.item)
        if agrees is None:
            continue
        row.compared += 1
        if agrees:
            row.agreed += 1
            if match.item.decided_at:
                row.time_saved += max(timedelta(0), match.item.decided_at - match.item.created_at)
    return [rows[policy.pk] for policy in policies]


def matches_in_order() -> QuerySet[PolicyMatch]:
    """Matches with their policy, in the order they were recorded: an item's page and its API read them so."""
    return PolicyMatch.objects.select_related("policy").order_by("pk")


def item_policy_notes(item: InboxItem) -> list[PolicyMatch]:
    """What policies did or would have done with this item, for its page."""
    return list(matches_in_order().filter(item=item))


# --- backtests (``inbox.policies.backtest``) ---------------------------------------------------------------

# A backtest without progress for this many stall periods (``INBOX_BACKTEST_STALL_SECONDS``) was not picked up
# again by the recovery sweep, which runs on the workers: none is running, and its page says so.
BACKTEST_LOST_AFTER_STALLS = 3


def latest_backtest(policy: Policy, *, version: int | None = None) -> PolicyBacktest | None:
    """The latest finished backtest of the policy's saved ``version`` (its current one unless given)."""
    return (
        policy.backtests.filter(draft=False, state=PolicyBacktest.State.DONE, policy_version=version or policy.version)
        .order_by("-created_at", "-pk")
        .first()
    )


def recent_backtests(policy: Policy, limit: int = 5) -> list[PolicyBacktest]:
    return list(policy.backtests.select_related("requested_by").order_by("-created_at", "-pk")[:limit])


def backtest_lost(backtest: PolicyBacktest) -> bool:
    quiet = timedelta(seconds=settings.INBOX_BACKTEST_STALL_SECONDS * BACKTEST_LOST_AFTER_STALLS)
    return not backtest.is_finished and timezone.now() - backtest.progress_at > quiet


def backtest_findings(backtest: PolicyBacktest, kind: str) -> QuerySet[BacktestFinding]:
    """One kind of a backtest's listed items with what the list shows of them, newest item first."""
    return (
        backtest.findings.filter(kind=kind)
        .select_related("item", "item__agent", "item__decided_by")
        .order_by("-item_id")
    )


def backtest_evidence(backtest: PolicyBacktest | None) -> dict[str, Any] | None:
    """A finished backtest as the audit log records it when its version is promoted."""
    if backtest is None:
        return None
    return {
        "id": backtest.pk,
        "url": backtest.get_absolute_url(),
        "version": backtest.policy_version,
        "days": backtest.days,
        "since": backtest.since.isoformat(),
        "until": backtest.until.isoformat(),
        "decided": backtest.decided,
        "matched": backtest.matched,
        "compared": backtest.compared,
        "agreed": backtest.agreed,
        "disagreed": backtest.disagreed,
        "foundWrong": backtest.found_wrong,
        "outcomes": backtest.outcomes,
    }
