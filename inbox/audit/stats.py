"""Figures for the stats page, computed over what the user may see, with the chart geometry worked out
here so the templates only draw server-rendered SVG (no chart library, no CDN)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef
from django.db.models.functions import TruncDate
from django.utils import timezone

from inbox.access import visible_agents, visible_items, visible_resumes
from inbox.models import Escalation, InboxItem, Resume

STATUS_COLORS = {
    "resolved": "#2f9e6e",
    "cancelled": "#8a94a6",
    "expired": "#d9822b",
    "open": "#4c6ef5",
}


STATUS_ORDER = ["resolved", "cancelled", "expired", "open"]
# The chart's words: what a person calls each status (the list's tabs say "Decided" and "Expired").
STATUS_WORDS = {"resolved": "Decided", "cancelled": "Cancelled", "expired": "Expired", "open": "Still open"}


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    color: str
    label: str


@dataclass
class DayColumn:
    day: date
    x: float
    total: int
    bars: list[Bar]
    show_label: bool


@dataclass
class AgentRow:
    slug: str
    name: str
    items: int
    decided: int
    approved: int
    expired: int
    median_seconds: float | None
    answered: int = 0  # questions answered: decided, but neither approved nor refused
    approval_rate: float | None = None
    expired_share: float | None = None
    median_width: float = 0.0

    @property
    def yes_or_no(self) -> int:
        """The decisions an approval rate is over: every decision but the answers to questions."""
        return self.decided - self.answered

    @property
    def median_label(self) -> str:
        return humanize_seconds(self.median_seconds)


@dataclass
class Report:
    days: int
    start: datetime
    total: int
    by_status: dict[str, int]
    columns: list[DayColumn]
    chart_max: int
    gridlines: list[dict[str, Any]]
    agents: list[AgentRow]
    expired_share: float
    donut: list[dict[str, Any]]
    resume_states: dict[str, int]
    resume_failures: list[Resume]
    median_seconds: float | None
    approval_rate: float | None
    legend: list[tuple[str, str]] = field(default_factory=list)
    # Time to decision of the decided items an escalation rule reached (inbox.teams.escalations), and of the rest.
    escalated_decided: int = 0
    unescalated_decided: int = 0
    median_escalated_seconds: float | None = None
    median_unescalated_seconds: float | None = None

    @property
    def median_label(self) -> str:
        return humanize_seconds(self.median_seconds)

    @property
    def median_escalated_label(self) -> str:
        return humanize_seconds(self.median_escalated_seconds)

    @property
    def median_unescalated_label(self) -> str:
        return humanize_seconds(self.median_unescalated_seconds)


def humanize_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


CHART_WIDTH, CHART_HEIGHT, CHART_LEFT, CHART_BOTTOM = 760, 220, 36, 24


def _nice_max(value: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if value <= step * 4:
            return step * 4
    return value


def _columns(per_day: dict[date, dict[str, int]], days: list[date]) -> tuple[list[DayColumn], int]:
    peak = max((sum(counts.values()) for counts in per_day.values()), default=0)
    chart_max = _nice_max(max(peak, 1))
    plot_width = CHART_WIDTH - CHART_LEFT - 8
    slot = plot_width / len(days)
    width = max(slot * 0.7, 2)
    plot_height = CHART_HEIGHT - CHART_BOTTOM - 8
    every = max(1, len(days) // 10)
    columns = []
    for index, day in enumerate(days):
        counts = per_day.get(day, {})
        x = CHART_LEFT + index * slot + (slot - width) / 2
        y: float = CHART_HEIGHT - CHART_BOTTOM
        bars = []
        for status in STATUS_ORDER:
            count = counts.get(status, 0)
            if not count:
                continue
            height = plot_height * count / chart_max
            y -= height
            bars.append(
                Bar(x, y, width, height, STATUS_COLORS[status], f"{day:%b %d}: {count} {STATUS_WORDS[status].lower()}")
            )
        columns.append(DayColumn(day, x + width / 2, sum(counts.values()), bars, index % every == 0))
    return columns, chart_max


def _donut(share: float) -> list[dict[str, Any]]:
    circumference = 2 * 3.14159265 * 40
    return [{"dash": circumference * share, "gap": circumference * (1 - share), "circumference": circumference}]


def build_report(*, user, days: int = 30) -> Report:
    tz = timezone.get_current_timezone()
    today = timezone.localdate()
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=tz)
    items = visible_items(user).filter(created_at__gte=start)

    per_day: dict[date, dict[str, int]] = {}
    by_status = dict.fromkeys(STATUS_ORDER, 0)
    counted = items.annotate(day=TruncDate("created_at", tzinfo=tz)).values("day", "status").annotate(n=Count("id"))
    for count in counted:
        per_day.setdefault(count["day"], {})[count["status"]] = count["n"]
        by_status[count["status"]] = by_status.get(count["status"], 0) + count["n"]
    day_list = [first + timedelta(days=offset) for offset in range(days)]
    columns, chart_max = _columns(per_day, day_list)
    plot_height = CHART_HEIGHT - CHART_BOTTOM - 8
    gridlines = [
        {"value": chart_max * step // 4, "y": CHART_HEIGHT - CHART_BOTTOM - plot_height * step / 4} for step in range(5)
    ]

    # Per agent: one pass over the decided items' (status, denied?, created, decided) — small columns only.
    agents = {agent.pk: agent for agent in visible_agents(user)}
    rows: dict[int, AgentRow] = {}
    durations: dict[int, list[float]] = {}
    all_durations: list[float] = []
    by_escalation: dict[bool, list[float]] = {True: [], False: []}
    escalated = Exists(Escalation.objects.filter(item=OuterRef("pk")))
    values = items.annotate(escalated=escalated).values_list(
        "agent_id", "status", "outcome", "created_at", "decided_at", "escalated"
    )
    for agent_id, status, outcome, created, decided, was_escalated in values.iterator(chunk_size=5000):
        agent = agents.get(agent_id)
        if agent is None:
            continue
        row = rows.setdefault(agent_id, AgentRow(agent.slug, agent.name or agent.slug, 0, 0, 0, 0, None))
        row.items += 1
        if status == InboxItem.Status.EXPIRED:
            row.expired += 1
        if status in InboxItem.DECIDED:
            row.decided += 1
            # The stored outcome says what a decision was: an answer to a question is no approval, nor a refusal.
            row.approved += outcome in InboxItem.APPROVALS
            row.answered += outcome == InboxItem.Outcome.ANSWERED
            if decided is not None:
                seconds = max((decided - created).total_seconds(), 0.0)
                durations.setdefault(agent_id, []).append(seconds)
                all_durations.append(seconds)
                by_escalation[bool(was_escalated)].append(seconds)
    longest = 0.0
    for agent_id, row in rows.items():
        row.approval_rate = row.approved / row.yes_or_no if row.yes_or_no else None
        row.expired_share = row.expired / row.items if row.items else None
        row.median_seconds = statistics.median(durations[agent_id]) if durations.get(agent_id) else None
        longest = max(longest, row.median_seconds or 0.0)
    for row in rows.values():
        row.median_width = 100 * (row.median_seconds or 0) / longest if longest else 0
    agent_rows = sorted(rows.values(), key=lambda row: (-row.items, row.slug))

    total = sum(by_status.values())
    yes_or_no_total = sum(row.yes_or_no for row in agent_rows)
    approved_total = sum(row.approved for row in agent_rows)
    expired_share = by_status.get("expired", 0) / total if total else 0.0

    resumes = visible_resumes(user).filter(created_at__gte=start)
    resume_states = dict.fromkeys([state.value for state in Resume.State], 0)
    for state_count in resumes.values("state").annotate(n=Count("id")):
        resume_states[state_count["state"]] = state_count["n"]
    failures = list(
        resumes.filter(state=Resume.State.FAILED).select_related("agent", "thread", "run").order_by("-updated_at")[:10]
    )
    return Report(
        days=days,
        start=start,
        total=total,
        by_status=by_status,
        columns=columns,
        chart_max=chart_max,
        gridlines=gridlines,
        agents=agent_rows,
        expired_share=expired_share,
        donut=_donut(expired_share),
        resume_states=resume_states,
        resume_failures=failures,
        median_seconds=statistics.median(all_durations) if all_durations else None,
        approval_rate=approved_total / yes_or_no_total if yes_or_no_total else None,
        legend=[(STATUS_WORDS[status], STATUS_COLORS[status]) for status in STATUS_ORDER],
        escalated_decided=len(by_escalation[True]),
        unescalated_decided=len(by_escalation[False]),
        median_escalated_seconds=statistics.median(by_escalation[True]) if by_escalation[True] else None,
        median_unescalated_seconds=statistics.median(by_escalation[False]) if by_escalation[False] else None,
    )
