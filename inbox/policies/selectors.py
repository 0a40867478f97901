"""Read paths of auto-decision policies: the list in order, one policy's matches, and the stats page
(per policy: matches, agreement of shadow decisions with people's, and the time they would have saved)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone

from inbox.models import InboxItem, Resume, edited_args_in
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


def policy_matches(policy: Policy) -> QuerySet[PolicyMatch]:
    """Every match of the policy, newest first, with what its page shows of the item."""
    return policy.matches.select_related("item", "item__agent", "item__decided_by", "decision").order_by(
        "-created_at", "-pk"
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
    """Matches with their policy and decision, in the order they were recorded: an item's page and its API read
    them so."""
    return PolicyMatch.objects.select_related("policy", "decision").order_by("pk")


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


def policy_backtests(policy: Policy) -> QuerySet[PolicyBacktest]:
    """Every backtest of the policy, newest first (its page lists the latest; the API pages through them)."""
    return policy.backtests.select_related("requested_by").order_by("-created_at", "-pk")


def set_backtests() -> QuerySet[PolicyBacktest]:
    """The backtests of the ordered set of enforced policies, newest first."""
    return PolicyBacktest.objects.filter(ordered_set=True).select_related("requested_by").order_by("-created_at", "-pk")


def set_breakdown(backtest: PolicyBacktest) -> list[dict[str, Any]]:
    """An ordered set's policies in order, each with what it would have done first (``breakdown``; zeros until the
    backtest is done): id, name, version, position, action, whether it was the shadow policy tested as enforced."""
    counts = {row["policy"]: row for row in backtest.breakdown or []}
    rows = []
    for rules in backtest.rules.get("policies", []):
        action = rules["action"]
        if action == Policy.Action.REQUIRE_APPROVALS:
            label = f"require {rules.get('approvals')} approvals"
        elif action == Policy.Action.ROUTE:
            label = f"route to {rules.get('routeTeam')}"
        else:
            label = action
        found = counts.get(rules["id"], {})
        rows.append(
            {
                "policy": rules["id"],
                "name": rules["name"],
                "version": rules.get("version"),
                "position": rules.get("position"),
                "action": action,
                "action_label": label,
                "candidate": bool(rules.get("candidate")),
                "matched": found.get("matched", 0),
                "compared": found.get("compared", 0),
                "agreed": found.get("agreed", 0),
                "foundWrong": found.get("foundWrong", 0),
            }
        )
    return rows


def set_backtests_with(policy: Policy, limit: int = 5) -> list[PolicyBacktest]:
    """The latest backtests of the ordered set that tested this policy among the enforced ones (as a candidate or
    enforced): its page lists them beside its own."""
    tested = [
        backtest
        for backtest in set_backtests()[:200]
        if any(rules.get("id") == policy.pk for rules in backtest.rules.get("policies", []))
    ]
    return tested[:limit]


def backtest_lost(backtest: PolicyBacktest) -> bool:
    quiet = timedelta(seconds=settings.INBOX_BACKTEST_STALL_SECONDS * BACKTEST_LOST_AFTER_STALLS)
    return not backtest.is_finished and timezone.now() - backtest.progress_at > quiet


def backtest_findings(backtest: PolicyBacktest, kind: str) -> QuerySet[BacktestFinding]:
    """One kind of a backtest's listed items with what the list shows of them, newest item first."""
    return (
        backtest.findings.filter(kind=kind)
        .select_related("item", "item__agent", "item__decided_by", "policy")
        .order_by("-item_id")
    )


# What a disagreement row shows of its item without opening it: the subject's values that differ between the
# items listed (read over the first ``FINDINGS_COMPARED`` of them), at most ``MAX_SHOWN_ARGUMENTS``, each cut to
# ``MAX_SHOWN_VALUE`` characters.
FINDINGS_COMPARED = 5000
MAX_SHOWN_ARGUMENTS = 6
MAX_SHOWN_VALUE = 80


def shown_value(value: Any) -> str:
    """An argument's value as a row shows it: a string as it is, anything else as compact JSON, cut short."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= MAX_SHOWN_VALUE else text[: MAX_SHOWN_VALUE - 1] + "…"


def finding_subject(backtest: PolicyBacktest, tool_call: Any, metadata: Any) -> dict[str, Any]:
    """What the policy read of an item: its tool call's arguments, or its metadata (``subject: metadata``; in an
    ordered set's backtest, the arguments when the item proposes a tool call)."""
    args = (tool_call or {}).get("args") if isinstance(tool_call, dict) else None
    if backtest.ordered_set:
        subject = args if tool_call is not None else metadata
    else:
        subject = metadata if backtest.rules.get("subject") == Policy.Subject.METADATA else args
    return subject if isinstance(subject, dict) else {}


def differing_keys(backtest: PolicyBacktest, kind: str) -> list[str]:
    """The subject's keys whose values differ between the items of one kind a backtest lists (a key some items
    lack differs too), in the order first seen; every key when none differs (one item, or all alike)."""
    rows = backtest.findings.filter(kind=kind).order_by("-item_id").values_list("item__tool_call", "item__metadata")
    subjects = [finding_subject(backtest, tool_call, metadata) for tool_call, metadata in rows[:FINDINGS_COMPARED]]
    keys = list(dict.fromkeys(key for subject in subjects for key in subject))
    missing = object()
    values = {
        key: {json.dumps(subject[key], sort_keys=True) if key in subject else missing for subject in subjects}
        for key in keys
    }
    varying = [key for key in keys if len(values[key]) > 1]
    return (varying or keys)[:MAX_SHOWN_ARGUMENTS]


@dataclass
class FindingRow:
    """A listed item with what the lead judges it by: its differing arguments, the person's comment, the edits
    they made, and (approved, then found wrong) the follow-up a person denied."""

    item: InboxItem
    arguments: list[tuple[str, str]]
    comment: str
    edits: list[tuple[str, str, str]]
    follow_ups: list[InboxItem]
    policy: Policy | None = None


def _edits(item: InboxItem) -> list[tuple[str, str, str]]:
    edited = edited_args_in(item.response_payload)
    if not isinstance(edited, dict):
        return []
    args = (item.tool_call or {}).get("args") or {}
    return [
        (key, shown_value(args[key]) if key in args else "", shown_value(value))
        for key, value in edited.items()
        if args.get(key, None) != value or key not in args
    ][:MAX_SHOWN_ARGUMENTS]


def denied_follow_ups(items: list[InboxItem]) -> dict[int, list[InboxItem]]:
    """Per approved item: the interrupts a person denied on the run the agent answered its resume with."""
    resumed = dict(
        Resume.objects.filter(run_id__in={item.run_id for item in items}, resumed_run__isnull=False).values_list(
            "run_id", "resumed_run_id"
        )
    )
    accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
    denied: dict[int, list[InboxItem]] = {}
    follow_ups = (
        InboxItem.objects.filter(run_id__in=set(resumed.values()), outcome=InboxItem.Outcome.DENIED)
        .exclude(decided_by__in=accounts)
        .select_related("agent", "decided_by")
        .order_by("pk")
    )
    for follow_up in follow_ups:
        denied.setdefault(follow_up.run_id, []).append(follow_up)
    return {item.pk: denied.get(resumed.get(item.run_id, -1), []) for item in items}


def explain_findings(backtest: PolicyBacktest, kind: str, findings: Any) -> list[FindingRow]:
    """A page of one kind of a backtest's listed items (``backtest_findings``), each with what explains it."""
    findings = list(findings)
    keys = differing_keys(backtest, kind) if findings else []
    items = [finding.item for finding in findings]
    follow_ups = denied_follow_ups(items) if kind == BacktestFinding.Kind.FOUND_WRONG else {}
    rows = []
    for finding in findings:
        item = finding.item
        subject = finding_subject(backtest, item.tool_call, item.metadata)
        rows.append(
            FindingRow(
                item=item,
                arguments=[(key, shown_value(subject[key])) for key in keys if key in subject],
                comment=item.decision_comment,
                edits=_edits(item),
                follow_ups=follow_ups.get(item.pk, []),
                policy=finding.policy,
            )
        )
    return rows


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
