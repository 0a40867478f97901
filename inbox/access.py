"""Read paths: which rows a user may see, with the joins the pages and API need."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Q, QuerySet

from agents.models import Agent
from inbox.core import sql as _sql  # noqa: F401  (registers the __anyof lookup)
from inbox.models import InboxItem, NotificationPreference, Run


def visible_agents(user) -> QuerySet[Agent]:
    """Staff see every agent; an approver sees the agents of their teams (Django groups)."""
    if not user.is_authenticated:
        return Agent.objects.none()
    if user.is_staff:
        return Agent.objects.all()
    return Agent.objects.filter(Q(teams__in=user.groups.all())).distinct()


def visible_items(user) -> QuerySet[InboxItem]:
    if not user.is_authenticated:
        return InboxItem.objects.none()
    items = InboxItem.objects.all()
    if not user.is_staff:
        items = items.filter(agent_id__anyof=visible_agents(user).values("pk"))
    return items


def visible_runs(user) -> QuerySet[Run]:
    if not user.is_authenticated:
        return Run.objects.none()
    runs = Run.objects.all()
    if not user.is_staff:
        runs = runs.filter(agent_id__anyof=visible_agents(user).values("pk"))
    return runs


def approvers_of(agent_id: int) -> QuerySet:
    """Who can decide the agent's items: members of its teams, or staff when it has no team. Users who
    turned email off are left out."""
    User = get_user_model()
    users = User.objects.filter(is_active=True).exclude(email="")
    teams = list(Group.objects.filter(agents__pk=agent_id).values_list("pk", flat=True))
    users = users.filter(groups__in=teams) if teams else users.filter(is_staff=True)
    users = users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
    return users.distinct().order_by("pk")
