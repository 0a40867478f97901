"""Business hours: a team's working days and hours in its time zone (``BusinessHours``), for escalation and
reminders. Outside them nothing fires; an escalation's clock counts only the minutes inside them, so it stops at
closing and resumes at opening. A team without business hours works around the clock. docs/teams.md."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q, QuerySet

from agents.models import Agent
from inbox import access
from inbox.audit.record import Actor, audit
from inbox.core.errors import ApplicationError
from inbox.models import BusinessHours

# How far back the clock looks for enough working minutes (a year and a bit, past MAX_ESCALATION_MINUTES).
LOOK_BACK_DAYS = 400


def zone_of(hours: BusinessHours) -> ZoneInfo:
    try:
        return ZoneInfo(hours.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _interval(hours: BusinessHours, day: date) -> tuple[datetime, datetime]:
    zone = zone_of(hours)
    return datetime.combine(day, hours.opens, tzinfo=zone), datetime.combine(day, hours.closes, tzinfo=zone)


def is_open(hours: BusinessHours | None, at: datetime) -> bool:
    """Whether the team works at ``at`` (always, without business hours)."""
    if hours is None:
        return True
    local = at.astimezone(zone_of(hours))
    if local.isoweekday() not in hours.weekdays:
        return False
    opens, closes = _interval(hours, local.date())
    return opens <= at < closes


def clock_start(hours: BusinessHours | None, *, now: datetime, minutes: int) -> datetime | None:
    """The latest instant from which ``minutes`` working minutes have passed by ``now``: a clock that started at
    or before it has run out. Without business hours, ``now - minutes``. None when the team never works."""
    if hours is None:
        return now - timedelta(minutes=minutes)
    if not hours.weekdays:
        return None
    left = timedelta(minutes=minutes)
    day = now.astimezone(zone_of(hours)).date()
    for _ in range(LOOK_BACK_DAYS):
        if day.isoweekday() in hours.weekdays:
            opens, closes = _interval(hours, day)
            end = min(closes, now)
            if end > opens:
                if left <= end - opens:
                    return end - left
                left -= end - opens
        day -= timedelta(days=1)
    return None


def next_opening(hours: BusinessHours, *, after: datetime) -> datetime | None:
    """When the team next opens after ``after`` (for the pages: "resumes at")."""
    day = after.astimezone(zone_of(hours)).date()
    for _ in range(8):
        if day.isoweekday() in hours.weekdays:
            opens, _closes = _interval(hours, day)
            if opens > after:
                return opens
        day += timedelta(days=1)
    return None


def hours_of_team(team_id: int | None) -> BusinessHours | None:
    if team_id is None:
        return None
    return BusinessHours.objects.filter(team_id=team_id).first()


def hours_of_agent(agent_id: int) -> BusinessHours | None:
    """An agent's items keep the hours of its first team (by name) that has them."""
    return BusinessHours.objects.filter(team__agents__pk=agent_id).select_related("team").order_by("team__name").first()


def closed_scopes(*, now: datetime) -> tuple[list[int], list[int]]:
    """The teams closed at ``now`` and the agents whose items keep a closed team's hours: (team ids, agent ids)."""
    every = list(BusinessHours.objects.select_related("team").order_by("team__name"))
    closed = [hours.team_id for hours in every if not is_open(hours, now)]
    if not closed:
        return [], []
    first_team: dict[int, int] = {}
    rows = Agent.teams.through.objects.filter(group_id__in=[hours.team_id for hours in every]).values_list(
        "agent_id", "group_id", "group__name"
    )
    for agent_id, team_id, _name in sorted(rows, key=lambda row: (row[0], row[2], row[1])):
        first_team.setdefault(agent_id, team_id)
    return closed, [agent for agent, team in first_team.items() if team in closed]


def closed_items_q(*, now: datetime) -> Q:
    """The items whose team is closed at ``now``: a routed item its routed team's hours, else its agent's."""
    teams, agents = closed_scopes(now=now)
    if not teams:
        return Q(pk__in=[])
    return Q(routed_team_id__in=teams) | Q(routed_team__isnull=True, agent_id__in=agents)


def check_hours(*, days: str, opens: object, closes: object, time_zone: str) -> None:
    """A 400 naming the field when the hours cannot be kept."""
    if not days or any(day not in "1234567" for day in days) or len(set(days)) != len(days):
        raise ApplicationError.invalid("days", "ISO weekdays as digits 1 (Monday) to 7 (Sunday), each once")
    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ApplicationError.invalid("timeZone", f"no time zone {time_zone!r}") from None
    if opens is None or closes is None or not closes > opens:  # type: ignore[operator]
        raise ApplicationError.invalid("closes", "must be after opens, the same day")


# --- setting them: staff, or a lead of the team ---------------------------------------------------------


def may_set_hours(user: Any, team: Group) -> bool:
    return access.sees_everything(user) or access.led_team_ids(user).filter(team_id=team.pk).exists()


def teams_whose_hours(user: Any) -> QuerySet[Group]:
    """The teams whose business hours ``user`` may set: every team for staff, the teams they lead for a lead."""
    if access.sees_everything(user):
        return Group.objects.order_by("name")
    return Group.objects.filter(pk__in=access.led_team_ids(user)).order_by("name")


@transaction.atomic
def hours_set(
    *, user: Any, team: Group, days: str, opens: time | None, closes: time | None, time_zone: str
) -> BusinessHours:
    """Set (or replace) the team's business hours; audited as ``team.hours_set``. 403 unless staff or its lead."""
    if not may_set_hours(user, team):
        raise ApplicationError.invalid("team", f"you do not lead {team.name}", code="not_allowed", status=403)
    days = "".join(sorted(days))
    check_hours(days=days, opens=opens, closes=closes, time_zone=time_zone)
    assert opens is not None and closes is not None  # check_hours refuses a missing time
    hours, _ = BusinessHours.objects.update_or_create(
        team=team, defaults={"days": days, "opens": opens, "closes": closes, "time_zone": time_zone}
    )
    data = {
        "team": team.name,
        "days": days,
        "opens": f"{opens:%H:%M}",
        "closes": f"{closes:%H:%M}",
        "timeZone": time_zone,
    }
    audit(actor=Actor.for_user(user), verb="team.hours_set", obj=hours, data=data)
    return hours


@transaction.atomic
def hours_clear(*, user: Any, team: Group) -> bool:
    """The team works around the clock again; audited as ``team.hours_cleared``. False when it had no hours."""
    if not may_set_hours(user, team):
        raise ApplicationError.invalid("team", f"you do not lead {team.name}", code="not_allowed", status=403)
    hours = BusinessHours.objects.filter(team=team).first()
    if hours is None:
        return False
    audit(actor=Actor.for_user(user), verb="team.hours_cleared", obj=hours, data={"team": team.name})
    hours.delete()
    return True


def hours_words(hours: BusinessHours) -> str:
    """ "Mon–Fri 09:00–17:00 Europe/Berlin"."""
    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    days = sorted(hours.weekdays)
    if days and days == list(range(days[0], days[-1] + 1)) and len(days) > 2:
        when = f"{names[days[0] - 1]}–{names[days[-1] - 1]}"
    else:
        when = ", ".join(names[day - 1] for day in days) or "no day"
    return f"{when} {hours.opens:%H:%M}–{hours.closes:%H:%M} {hours.time_zone}"
