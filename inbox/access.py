"""Read paths: which rows a user may see, with the joins the pages and API need."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Exists, OuterRef, Q, QuerySet

from agents.models import Agent
from inbox.models import InboxItem, NotificationPreference, Run


def visible_agents(user) -> QuerySet[Agent]:
    """Staff see every agent; an approver sees the agents of their teams (Django groups)."""
    if not user.is_authenticated:
        return Agent.objects.none()
    if user.is_staff:
        return Agent.objects.all()
    return Agent.objects.filter(Q(teams__in=user.groups.all())).distinct()


def visible_items(user) -> QuerySet[InboxItem]:
    """An item is its agent's teams' to see, unless a policy routed it to another team: then that team's."""
    if not user.is_authenticated:
        return InboxItem.objects.none()
    items = InboxItem.objects.all()
    if not user.is_staff:
        items = items.filter(
            Q(routed_team__isnull=True, agent__in=visible_agents(user)) | Q(routed_team__in=user.groups.all())
        )
    return items


def visible_runs(user) -> QuerySet[Run]:
    if not user.is_authenticated:
        return Run.objects.none()
    runs = Run.objects.all()
    if not user.is_staff:
        routed_here = InboxItem.objects.filter(run=OuterRef("pk"), routed_team__in=user.groups.all())
        runs = runs.filter(Q(agent__in=visible_agents(user)) | Exists(routed_here))
    return runs


def approvers_of(agent_id: int, *, team_id: int | None = None) -> QuerySet:
    """Who can decide the agent's items: members of its teams (or of ``team_id``, the team a policy routed
    them to), or staff when it has no team. Users who turned email off are left out."""
    User = get_user_model()
    users = User.objects.filter(is_active=True).exclude(email="")
    if team_id is not None:
        teams = [team_id]
    else:
        teams = list(Group.objects.filter(agents__pk=agent_id).values_list("pk", flat=True))
    users = users.filter(groups__in=teams) if teams else users.filter(is_staff=True)
    users = users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
    return users.distinct().order_by("pk")
