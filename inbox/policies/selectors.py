"""Read paths of auto-decision policies: the list in order, one policy's matches, and the stats page
(per policy: matches, agreement of shadow decisions with people's, and the time they would have saved)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count, QuerySet

from inbox.models import InboxItem, is_denial
from inbox.policies.models import Policy, PolicyMatch


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
    return "denied" if is_denial(item.response_payload) else "approved"


def shadow_agrees(match: PolicyMatch, item: InboxItem) -> bool | None:
    """Whether people decided as the shadow policy would have; None when there is nothing to compare (the
    item is still open, expired, decided by a policy, or the action was not approve/deny)."""
    if match.action not in (Policy.Action.APPROVE, Policy.Action.DENY):
        return None
    if item.decided_by_id is not None and hasattr(item.decided_by, "inbox_policy"):
        return None
    verdict = human_verdict(item)
    if verdict is None:
        return None
    return verdict == ("approved" if match.action == Policy.Action.APPROVE else "denied")


@dataclass
class PolicyStats:
    policy: Policy
    matches: int = 0
    decided: int = 0  # enforced matches that decided an item
    compared: int = 0  # shadow approve/deny matches on items people decided
    agreed: int = 0
    time_saved: timedelta = field(default_factory=timedelta)

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


def item_policy_notes(item: InboxItem) -> list[PolicyMatch]:
    """What policies did or would have done with this item, for its page."""
    return list(item.policy_matches.select_related("policy").order_by("pk"))
