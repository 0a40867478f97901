"""Who may see and who may decide: the team rule, written once.

Every read path (pages, API, exports, stats, the websocket) starts from a ``visible_*`` queryset here: staff see
everything, anyone else the agents of their teams and what belongs to them, plus the items escalated to them;
the rest is a 404. ``locked_by_claim`` says who may act on a held item, ``approvers_of`` who is asked to decide.
The rules: docs/deciding.md and docs/teams.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Exists, OuterRef, Q, QuerySet

from agents.models import Agent
from inbox.core import sql as _sql  # noqa: F401  (registers the __anyof lookup)
from inbox.models import (
    AuditEvent,
    Decision,
    Escalation,
    InboxItem,
    NotificationPreference,
    Resume,
    Run,
    TeamLead,
    Thread,
)


def sees_everything(user: Any) -> bool:
    """Staff see (and may decide) every agent's items."""
    return bool(user.is_authenticated and user.is_staff)


def led_team_ids(user: Any) -> QuerySet:
    """The ids of the teams ``user`` leads (``TeamLead``) and is still a member of. Leading a team lets one write
    its shadow policies and business hours; it adds nothing to what one sees or decides."""
    if not user.is_authenticated:
        return TeamLead.objects.none().values("team_id")
    return TeamLead.objects.filter(user_id=user.pk, team__in=user.groups.all()).values("team_id")


def leads_a_team(user: Any) -> bool:
    return bool(user.is_authenticated) and led_team_ids(user).exists()


def visible_agents(user: Any) -> QuerySet[Agent]:
    """Staff see every agent; an approver sees the agents of their teams (Django groups)."""
    if not user.is_authenticated:
        return Agent.objects.none()
    if sees_everything(user):
        return Agent.objects.all()
    ids = _agent_ids(user)
    return Agent.objects.filter(pk__anyof=ids) if isinstance(ids, list) else _agents_of_teams(user)


def _agents_of_teams(user: Any) -> QuerySet[Agent]:
    return Agent.objects.filter(Q(teams__in=user.groups.all())).distinct()


# --- one request's answers ---------------------------------------------------------------------------
# A page asks "which agents and teams are this approver's" in every query it builds (a list page: the tab
# counts, the rows, the filter options). Within one request (``remembered_per_request``, which the
# ``RememberPerRequest`` middleware opens) the answer is read once, in one query: the agents (id, slug, name)
# and team ids the queries then carry as values, with no subquery to build and plan again in each statement.
# Outside one (tasks, websocket renders, the shell, tests calling selectors) every query carries its subquery,
# so a membership change is seen at once. Nothing outlives the request. The approver's ``visible_items`` queryset,
# which a list page filters three times, is built once too (its escalation subquery still runs in each statement).
AgentChoice = tuple[int, str, str]  # an agent's id, slug and name


@dataclass(frozen=True)
class _Visible:
    agents: list[AgentChoice]  # by name
    teams: list[int]
    querysets: dict[str, QuerySet] = field(default_factory=dict, compare=False, repr=False)

    @property
    def agent_ids(self) -> list[int]:
        return sorted(pk for pk, _slug, _name in self.agents)


_REMEMBERED: ContextVar[dict[int, _Visible] | None] = ContextVar("inbox_access_memo", default=None)


@contextmanager
def remembered_per_request() -> Iterator[None]:
    token = _REMEMBERED.set({})
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


class RememberPerRequest:
    """Middleware: ``remembered_per_request`` around every request."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):
        with remembered_per_request():
            return self.get_response(request)


def _agent_ids(user: Any) -> QuerySet | list[int]:
    """The ids of the (non-staff) user's visible agents: a list within a request, else a subquery."""
    memo = _remembered(user)
    if memo is None:
        return _agents_of_teams(user).values("pk")
    return memo.agent_ids


def _team_ids(user: Any) -> QuerySet | list[int]:
    """The ids of the user's teams: a list within a request, else a subquery."""
    memo = _remembered(user)
    if memo is None:
        return user.groups.values("pk")
    return memo.teams


def _remembered(user: Any) -> _Visible | None:
    """The user's visible agents and teams, read in one query the first time a request asks; None outside one."""
    memo = _REMEMBERED.get()
    if memo is None:
        return None
    if user.pk not in memo:
        if sees_everything(user):
            memo[user.pk] = _Visible(
                agents=list(Agent.objects.order_by("name", "pk").values_list("pk", "slug", "name")), teams=[]
            )
        else:
            rows = user.groups.order_by("agents__name", "agents").values_list(
                "pk", "agents", "agents__slug", "agents__name"
            )
            agents = {agent: (agent, slug, name) for _team, agent, slug, name in rows if agent is not None}
            memo[user.pk] = _Visible(agents=list(agents.values()), teams=sorted({team for team, *_ in rows}))
    return memo[user.pk]


def agent_choices(user: Any) -> list[AgentChoice]:
    """The user's visible agents as (id, slug, name), by name: read once per request (``remembered_per_request``)."""
    if not user.is_authenticated:
        return []
    memo = _remembered(user)
    if memo is not None:
        return memo.agents
    return list(visible_agents(user).order_by("name", "pk").values_list("pk", "slug", "name"))


def of_agent(user: Any, slug: str) -> Q:
    """The items (threads, runs: anything with an ``agent``) of the agent ``slug``: by its id within a request
    that read the user's agents (``agent_choices``), so the statement needs no join to find it, else by slug."""
    memo = _remembered(user) if user.is_authenticated else None
    pk = next((pk for pk, agent_slug, _name in memo.agents if agent_slug == slug), None) if memo else None
    return Q(agent_id=pk) if pk is not None else Q(agent__slug=slug)


def _among(path: str, ids: QuerySet | list[int]) -> Q:
    """``path`` is one of ``ids`` (``inbox.core.sql.AnyOf``: PostgreSQL sees a list of values either way, so the
    list's index scans check it inside the index)."""
    return Q(**{f"{path}__anyof": ids})


def _of_visible_agents(user: Any, queryset: QuerySet, agent_path: str = "agent") -> QuerySet:
    if not user.is_authenticated:
        return queryset.none()
    if sees_everything(user):
        return queryset
    return queryset.filter(_among(f"{agent_path}_id", _agent_ids(user)))


def escalated_to(user: Any) -> QuerySet:
    """The ids of the items an escalation added ``user`` or one of their teams to the deciders of."""
    escalations = Escalation.objects.filter(_among("to_team_id", _team_ids(user)) | Q(to_user_id=user.pk))
    return escalations.order_by().values("item_id")  # a set of ids: no sort


def visible_items(user: Any) -> QuerySet[InboxItem]:
    """An item is its agent's teams' to see, unless a policy routed it to another team: then that team's. An
    escalation adds its team or person."""
    if not user.is_authenticated:
        return InboxItem.objects.none()
    items = InboxItem.objects.all()
    if sees_everything(user):
        return items
    memo = _remembered(user)
    if memo is not None and "items" in memo.querysets:
        return memo.querysets["items"].all()  # a copy: a caller may evaluate it
    mine = Q(routed_team__isnull=True) & _among("agent_id", _agent_ids(user))
    # Each side is checked inside the list's tab indexes (agent, routed team and id are in the key).
    items = items.filter(mine | _among("routed_team_id", _team_ids(user)) | _among("id", escalated_to(user)))
    if memo is not None:
        memo.querysets["items"] = items
        return items.all()
    return items


def visible_runs(user: Any) -> QuerySet[Run]:
    """A run is its agent's teams' to see, and also the team's that a policy routed one of its items to."""
    if not user.is_authenticated:
        return Run.objects.none()
    runs = Run.objects.all()
    if sees_everything(user):
        return runs
    routed_here = InboxItem.objects.filter(run=OuterRef("pk"), routed_team__in=_team_ids(user))
    escalated_here = InboxItem.objects.filter(run=OuterRef("pk"), pk__in=escalated_to(user))
    return runs.filter(_among("agent_id", _agent_ids(user)) | Exists(routed_here) | Exists(escalated_here))


def visible_threads(user: Any) -> QuerySet[Thread]:
    return _of_visible_agents(user, Thread.objects.all())


def visible_resumes(user: Any) -> QuerySet[Resume]:
    """A resume is seen with its run: by the agent's teams, and by a team a policy routed one of its items to."""
    if not user.is_authenticated:
        return Resume.objects.none()
    if sees_everything(user):
        return Resume.objects.all()
    routed_here = InboxItem.objects.filter(run=OuterRef("run_id"), routed_team__in=_team_ids(user))
    escalated_here = InboxItem.objects.filter(run=OuterRef("run_id"), pk__in=escalated_to(user))
    return Resume.objects.filter(_among("agent_id", _agent_ids(user)) | Exists(routed_here) | Exists(escalated_here))


def routed_teams(run_id: int) -> list[int]:
    """The teams a policy routed some interrupt of the run to: they see the run, so they hear of its resume."""
    routed = InboxItem.objects.filter(run_id=run_id, routed_team__isnull=False)
    return list(routed.values_list("routed_team_id", flat=True).distinct())


def visible_decisions(user: Any) -> QuerySet[Decision]:
    """A decision is seen with its item (``visible_items``: a routed item is its routed team's)."""
    if not user.is_authenticated:
        return Decision.objects.none()
    if sees_everything(user):
        return Decision.objects.all()
    mine = Q(item__routed_team__isnull=True) & _among("item__agent_id", _agent_ids(user))
    escalated = _among("item_id", escalated_to(user))
    return Decision.objects.filter(mine | _among("item__routed_team_id", _team_ids(user)) | escalated)


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


def deciding_items_q(user: Any) -> Q:
    """The items ``user`` is asked to decide, as a filter on InboxItem: those of their teams' agents, those a
    policy routed to their teams, those escalated to them or their teams, and (staff) those of agents with no team."""
    groups = user.groups.all()
    deciding = Q(routed_team__isnull=True, agent__teams__in=groups) | Q(routed_team__in=groups)
    deciding |= Q(pk__in=escalated_to(user))
    if user.is_staff:
        deciding |= Q(routed_team__isnull=True, agent__teams__isnull=True)
    return deciding


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
