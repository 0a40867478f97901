"""Read paths: which rows a user may see, with the joins the pages and API need."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agents.models import Agent
from inbox.models import InboxItem, Run


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
        items = items.filter(agent__in=visible_agents(user))
    return items


def visible_runs(user) -> QuerySet[Run]:
    if not user.is_authenticated:
        return Run.objects.none()
    runs = Run.objects.all()
    if not user.is_staff:
        runs = runs.filter(agent__in=visible_agents(user))
    return runs


def item_list(
    *, user, status: str | None = None, agent: str | None = None, reason: str | None = None, thread: str | None = None
) -> QuerySet[InboxItem]:
    items = visible_items(user).select_related("agent", "thread", "run", "decided_by", "claimed_by")
    if status:
        items = items.filter(status=status)
    if agent:
        items = items.filter(agent__slug=agent)
    if reason:
        items = items.filter(reason=reason)
    if thread:
        items = items.filter(thread__thread_id=thread)
    # Newest first: ids grow with arrival, and the primary key needs no index of its own to sort on.
    return items.order_by("-id")
