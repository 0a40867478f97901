"""Who may see and who may decide: the team rule, written once.

- **Seeing.** Staff see everything; anyone else sees the agents of their teams (Django groups), and with
  them those agents' items, runs, threads, resumes, decisions and audit events. Everything a user may not
  see is a 404, never a 403 that would confirm it exists. Every read path (pages, API, exports, stats,
  the websocket) starts from a ``visible_*`` queryset here.
- **Deciding.** Whoever sees an item may decide it, unless someone else holds it (``InboxItem.held_by_other``):
  then only the holder, or staff (an override the decision service audits), may decide it, release the
  claim or reassign it (``locked_by_claim``). Who is *asked* to decide (mail, digests) is the agent's team
  members, or staff when the agent has no team (``approvers_of`` / ``deciding_agents``).

What counts as a denial and as a decided status are ``inbox.models.is_denial`` / ``InboxItem.is_denial``
and ``InboxItem.DECIDED`` / ``InboxItem.is_decided``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Q, QuerySet

from agents.models import Agent
from inbox.models import AuditEvent, Decision, InboxItem, NotificationPreference, Resume, Run, Thread


def sees_everything(user: Any) -> bool:
    """Staff see (and may decide) every agent's items."""
    return bool(user.is_authenticated and user.is_staff)


def visible_agents(user: Any) -> QuerySet[Agent]:
    """Staff see every agent; an approver sees the agents of their teams (Django groups)."""
    if not user.is_authenticated:
        return Agent.objects.none()
    if sees_everything(user):
        return Agent.objects.all()
    return Agent.objects.filter(Q(teams__in=user.groups.all())).distinct()


def _of_visible_agents(user: Any, queryset: QuerySet, agent_path: str = "agent") -> QuerySet:
    if not user.is_authenticated:
        return queryset.none()
    if sees_everything(user):
        return queryset
    return queryset.filter(**{f"{agent_path}__in": visible_agents(user)})


def visible_items(user: Any) -> QuerySet[InboxItem]:
    return _of_visible_agents(user, InboxItem.objects.all())


def visible_runs(user: Any) -> QuerySet[Run]:
    return _of_visible_agents(user, Run.objects.all())


def visible_threads(user: Any) -> QuerySet[Thread]:
    return _of_visible_agents(user, Thread.objects.all())


def visible_resumes(user: Any) -> QuerySet[Resume]:
    return _of_visible_agents(user, Resume.objects.all())


def visible_decisions(user: Any) -> QuerySet[Decision]:
    return _of_visible_agents(user, Decision.objects.all(), "item__agent")


def visible_audit_events(user: Any) -> QuerySet[AuditEvent]:
    """Staff see the whole log; an approver sees the events about their teams' agents."""
    return _of_visible_agents(user, AuditEvent.objects.all())


def visible_teams(user: Any) -> QuerySet[Group]:
    if not user.is_authenticated:
        return Group.objects.none()
    if sees_everything(user):
        return Group.objects.all().order_by("name")
    return user.groups.all().order_by("name")


VISIBLE_BY_KIND = {"item": visible_items, "run": visible_runs}


def may_see(user: Any, kind: str, pk: int) -> bool:
    """Whether ``user`` may see the ``kind`` (``item`` or ``run``) with this id."""
    return VISIBLE_BY_KIND[kind](user).filter(pk=pk).exists()


def locked_by_claim(user: Any, item: InboxItem) -> bool:
    """Someone else holds the item and ``user`` is not staff: ``user`` may not decide it, release its
    claim or reassign it."""
    return item.held_by_other(user) and not sees_everything(user)


def overrides_claim(user: Any, item: InboxItem) -> bool:
    """Staff acting on an item someone else holds (allowed, and recorded in the audit)."""
    return item.held_by_other(user) and sees_everything(user)


def deciding_agents(user: Any) -> QuerySet[Agent]:
    """The agents ``user`` is asked to decide for: those of their teams, and (staff) those with no team.
    The other direction of ``approvers_of``."""
    deciding = Q(teams__in=user.groups.all())
    if user.is_staff:
        deciding |= Q(teams__isnull=True)
    return Agent.objects.filter(deciding).distinct()


def approvers_of(agent_id: int) -> QuerySet:
    """Who can decide the agent's items: members of its teams, or staff when it has no team. Users who
    turned email off are left out."""
    User = get_user_model()
    users = User.objects.filter(is_active=True).exclude(email="")
    teams = list(Group.objects.filter(agents__pk=agent_id).values_list("pk", flat=True))
    users = users.filter(groups__in=teams) if teams else users.filter(is_staff=True)
    users = users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
    return users.distinct().order_by("pk")
