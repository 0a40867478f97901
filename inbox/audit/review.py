"""Review quality: per approver and per agent over a period, how long people looked before deciding, what they
decided without the arguments on screen, which approvals were contradicted later, and the longest run of
approvals without a denial. The page, the API and the CSV read the same ``ReviewReport`` (docs/review-quality.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.utils import timezone

from inbox.audit.exports import AuditFilterForm
from inbox.models import BLIND_VIAS, Decision, DecisionVia, InboxItem, ItemSeen, Policy, PolicyMatch

FAST_SECONDS = 3.0

# How each decision was made, as the stacked bars show it; exactly one kind per decision.
KINDS = ("considered", "fast", "blind", "unseen")
KIND_WORDS = {
    "considered": "Looked 3 s or more",
    "fast": "Decided under 3 s",
    "blind": "Without the arguments on screen",
    "unseen": "Never opened here",
}


@dataclass
class Figures:
    """One approver's or one agent's figures."""

    key: str
    label: str
    decisions: int = 0
    approvals: int = 0
    denials: int = 0
    seconds: list[float] = field(default_factory=list, repr=False)
    fast: int = 0
    blind: int = 0
    unseen: int = 0
    contradicted: int = 0
    contradicted_by_follow_up: int = 0
    contradicted_by_shadow: int = 0
    longest_streak: int = 0
    _streak: int = field(default=0, repr=False)

    @property
    def timed(self) -> int:
        return len(self.seconds)

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def median_label(self) -> str:
        return seconds_label(self.median_seconds)

    @property
    def fast_share(self) -> float | None:
        return self.fast / self.timed if self.timed else None

    @property
    def blind_share(self) -> float | None:
        return self.blind / self.decisions if self.decisions else None

    @property
    def contradicted_share(self) -> float | None:
        return self.contradicted / self.approvals if self.approvals else None

    @property
    def kinds(self) -> dict[str, int]:
        return {
            "considered": self.timed - self.fast,
            "fast": self.fast,
            "blind": self.blind,
            "unseen": self.unseen,
        }

    def add(self, row: DecisionRow) -> None:
        self.decisions += 1
        if row.blind:
            self.blind += 1
        elif row.seconds is None:
            self.unseen += 1
        else:
            self.seconds.append(row.seconds)
            self.fast += row.seconds < FAST_SECONDS
        if row.approval:
            self.approvals += 1
            self._streak += 1
            self.longest_streak = max(self.longest_streak, self._streak)
            if row.denied_follow_up or row.shadow_denied:
                self.contradicted += 1
            self.contradicted_by_follow_up += row.denied_follow_up
            self.contradicted_by_shadow += row.shadow_denied
        elif row.denial:
            self.denials += 1
            self._streak = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.label,
            "decisions": self.decisions,
            "approvals": self.approvals,
            "denials": self.denials,
            "timed": self.timed,
            "medianSeconds": self.median_seconds,
            "fast": self.fast,
            "fastShare": self.fast_share,
            "blind": self.blind,
            "blindShare": self.blind_share,
            "unseen": self.unseen,
            "contradicted": self.contradicted,
            "contradictedByFollowUp": self.contradicted_by_follow_up,
            "contradictedByShadow": self.contradicted_by_shadow,
            "contradictedShare": self.contradicted_share,
            "longestStreak": self.longest_streak,
        }


@dataclass
class DecisionRow:
    seconds: float | None  # from first seeing the item to deciding it; None: not seen before deciding
    blind: bool
    approval: bool
    denial: bool
    denied_follow_up: bool
    shadow_denied: bool


@dataclass
class ReviewReport:
    since: datetime | None
    until: datetime | None
    approvers: list[Figures]
    agents: list[Figures]
    total: Figures


def reviewed_decisions(decisions: QuerySet[Decision]) -> QuerySet[Decision, tuple[Any, ...]]:
    """People's standing decisions with what review quality reads of each, oldest first."""
    accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
    first_seen = ItemSeen.objects.filter(item_id=OuterRef("item_id"), user_id=OuterRef("user_id"))
    # The agent asked again after the approval, and a person denied that follow-up (as a backtest's "found wrong").
    denied_follow_up = InboxItem.objects.filter(
        run_id=OuterRef("item__run__resume__resumed_run"), outcome=InboxItem.Outcome.DENIED
    ).exclude(decided_by__in=accounts)
    shadow_denied = PolicyMatch.objects.filter(
        item_id=OuterRef("item_id"), mode=Policy.Mode.SHADOW, action=Policy.Action.DENY
    )
    return (
        decisions.filter(withdrawn_at__isnull=True)
        .exclude(via=DecisionVia.POLICY)
        .exclude(user__in=accounts)
        .annotate(
            first_seen=Subquery(first_seen.values("first_seen_at")[:1]),
            denied_follow_up=Exists(denied_follow_up),
            shadow_denied=Exists(shadow_denied),
        )
        .order_by("created_at", "pk")
        .values_list(
            "created_at",
            "outcome",
            "via",
            "first_seen",
            "denied_follow_up",
            "shadow_denied",
            "user_id",
            "user__username",
            "item__agent_id",
            "item__agent__slug",
            "item__agent__name",
        )
    )


def build_review(decisions: QuerySet[Decision], *, since: datetime | None, until: datetime | None) -> ReviewReport:
    approvers: dict[int, Figures] = {}
    agents: dict[int, Figures] = {}
    total = Figures("all", "Everyone")
    rows = reviewed_decisions(decisions)
    for (
        created,
        outcome,
        via,
        seen,
        follow_up,
        shadow,
        user_id,
        username,
        agent_id,
        slug,
        name,
    ) in rows.iterator(chunk_size=5000):
        denial = outcome == InboxItem.Outcome.DENIED
        row = DecisionRow(
            seconds=(created - seen).total_seconds() if seen is not None and seen <= created else None,
            blind=via in BLIND_VIAS,
            approval=outcome in InboxItem.APPROVALS,  # an answer to a question is neither
            denial=denial,
            denied_follow_up=bool(follow_up),
            shadow_denied=bool(shadow),
        )
        approvers.setdefault(user_id, Figures(username, username)).add(row)
        agents.setdefault(agent_id, Figures(slug, name or slug)).add(row)
        total.add(row)
    return ReviewReport(
        since=since,
        until=until,
        approvers=sorted(approvers.values(), key=lambda f: (-f.decisions, f.key)),
        agents=sorted(agents.values(), key=lambda f: (-f.decisions, f.key)),
        total=total,
    )


DEFAULT_DAYS = 30


def review_for(form: AuditFilterForm) -> ReviewReport:
    """The report for a valid audit filter form: its agent, team, actor and date range (no dates: the last
    ``DEFAULT_DAYS`` days). The verb filter does not apply to decisions."""
    since, until = form.bounds()
    decisions = form.decisions()
    if since is None and until is None:
        since = datetime.combine(timezone.localdate() - timedelta(days=DEFAULT_DAYS - 1), time.min)
        since = timezone.make_aware(since)
        decisions = decisions.filter(created_at__gte=since)
    return build_review(decisions, since=since, until=until)


CSV_COLUMNS = [
    "scope",
    "key",
    "name",
    "decisions",
    "approvals",
    "denials",
    "timed",
    "medianSeconds",
    "fast",
    "fastShare",
    "blind",
    "blindShare",
    "unseen",
    "contradicted",
    "contradictedByFollowUp",
    "contradictedByShadow",
    "contradictedShare",
    "longestStreak",
]


def csv_rows(report: ReviewReport) -> list[dict[str, Any]]:
    """One row per approver, per agent, and the total, as the CSV export writes them."""
    rows = [{"scope": "approver", **figures.as_dict()} for figures in report.approvers]
    rows += [{"scope": "agent", **figures.as_dict()} for figures in report.agents]
    rows.append({"scope": "all", **report.total.as_dict()})
    return rows


KIND_CLASSES = {"considered": "rq-considered", "fast": "rq-fast", "blind": "rq-blind", "unseen": "rq-unseen"}


@dataclass
class ChartRow:
    """One bar of the page's charts: the figures, and the geometry (0–100) its SVG draws."""

    figures: Figures
    segments: list[dict[str, Any]]  # the stacked "how decided" bar: kind, class, x, width, count, words
    median_width: float
    fast_width: float
    contradicted_width: float
    streak_width: float


def chart_rows(rows: list[Figures]) -> list[ChartRow]:
    longest_median = max((f.median_seconds or 0.0 for f in rows), default=0.0)
    longest_streak = max((f.longest_streak for f in rows), default=0)
    charted = []
    for figures in rows:
        x = 0.0
        segments = []
        for kind, count in figures.kinds.items():
            width = 100 * count / figures.decisions if figures.decisions else 0.0
            if count:
                segments.append(
                    {
                        "kind": kind,
                        "class": KIND_CLASSES[kind],
                        "x": x,
                        "width": width,
                        "count": count,
                        "words": KIND_WORDS[kind],
                    }
                )
            x += width
        charted.append(
            ChartRow(
                figures=figures,
                segments=segments,
                median_width=100 * (figures.median_seconds or 0.0) / longest_median if longest_median else 0.0,
                fast_width=100 * (figures.fast_share or 0.0),
                contradicted_width=100 * (figures.contradicted_share or 0.0),
                streak_width=100 * figures.longest_streak / longest_streak if longest_streak else 0.0,
            )
        )
    return charted


def seconds_label(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
