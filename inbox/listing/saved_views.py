"""Saved views: the list's filters and sort under a name, a person's own, and a team's too when staff share one.

A view stores the list's own query string (``ListFilters.querystring``) and is read back through
``ListFilters.from_query``, so it shows exactly the rows of its filters. Reads: ``visible_views``, ``tab_views``,
``view_tabs``; writes: ``saved_view_create``, ``saved_view_update``, ``saved_view_delete``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from django.http import QueryDict

from inbox.access import sees_everything
from inbox.core.errors import ApplicationError
from inbox.limits import MAX_SAVED_VIEW_NAME, MAX_SAVED_VIEWS, SAVED_VIEW_TABS
from inbox.listing.selectors import SORT_LABELS, ListFilters
from inbox.models import Agent, InboxItem, Resume, SavedView

UNCHANGED: Any = object()  # ``saved_view_update``: leave this field as it is


def visible_views(user: Any) -> QuerySet[SavedView]:
    """The views ``user`` may use: their own, and those shared with one of their teams."""
    if not user.is_authenticated:
        return SavedView.objects.none()
    return SavedView.objects.filter(Q(owner_id=user.pk) | Q(team__in=user.groups.values("pk")))


def views_in_order(user: Any) -> QuerySet[SavedView]:
    """``visible_views``, the person's own first, then by name, with their owner and team."""
    return _in_order(visible_views(user).select_related("owner", "team"), user)


def _in_order(views: QuerySet[SavedView], user: Any) -> QuerySet[SavedView]:
    own_first = Case(When(owner_id=user.pk, then=Value(0)), default=Value(1), output_field=IntegerField())
    return views.order_by(own_first, "name", "pk")


def filters_of(view: SavedView) -> ListFilters:
    return filters_of_query(view.query)


def filters_of_query(query: str) -> ListFilters:
    return ListFilters.from_query(QueryDict(query or ""))


def normalised_query(query: str) -> str:
    """The list's query string as the list itself writes it (unknown values dropped, the first page)."""
    return filters_of_query(query).querystring(page=1)


def describe(filters: ListFilters) -> str:
    """A view's filters in words: "Open · agent mailer · reason tool_call · Expires soonest"."""
    parts = [filters.tab.title()]
    for label, value in (
        ("agent", filters.agent),
        ("reason", filters.reason),
        ("thread", filters.thread),
        ("search", f"“{filters.q}”" if filters.q else ""),
        ("outcome", InboxItem.Outcome(filters.outcome).label if filters.outcome else ""),
        ("delivery", Resume.State(filters.delivery).label if filters.delivery else ""),
    ):
        if value:
            parts.append(f"{label} {value}")
    parts.append(SORT_LABELS[filters.effective_sort])
    return " · ".join(parts)


# Reasons as people say them in a view's name; any other reason string reads with its separators as spaces.
_REASON_WORDS = {"tool_call": "tool calls", "input_required": "input requests", "confirmation": "confirmations"}
_SORT_NAMES = {
    "expires": "{tab} expiring soonest",
    "expires_last": "{tab} expiring latest",
    "newest": "newest {tab}",
    "oldest": "oldest {tab}",
}
_TAB_WORDS = {"open": "open", "mine": "mine", "snoozed": "snoozed", "decided": "decided", "expired": "expired"}


def suggested_name(filters: ListFilters) -> str:
    """The name a person would give a view of ``filters``, offered in the save form: "Mailer tool calls",
    "Denied refunds", "Oldest open", rather than the filters' values ("agent=mailer&reason=tool_call")."""
    parts: list[str] = []
    if filters.agent:
        named = Agent.objects.filter(slug=filters.agent).values_list("name", flat=True).first()
        parts.append(named or filters.agent)
    if filters.outcome:
        parts.append(InboxItem.Outcome(filters.outcome).label.lower())
    if filters.q:
        parts.append(f"“{filters.q}”")
    if filters.reason:
        parts.append(_REASON_WORDS.get(filters.reason) or " ".join(filters.reason.replace(":", " ").split("_")))
    if filters.delivery:
        parts.append(f"delivery {Resume.State(filters.delivery).label.lower()}")
    if filters.thread:
        parts.append(f"thread {filters.thread}")
    tab = _TAB_WORDS.get(filters.tab, "")
    if not parts:  # the tab alone, with its sort when one is chosen: "Oldest open", "Open expiring latest"
        words = tab or "everything"
        return (
            _SORT_NAMES.get(filters.sort, "{tab}").format(tab=words).capitalize()
            if filters.sort
            else words.capitalize()
        )
    if tab and tab != "open":
        parts.append(f"({tab})")
    name = " ".join(parts)
    name = name[:1].upper() + name[1:]
    return name if len(name) <= MAX_SAVED_VIEW_NAME else name[: MAX_SAVED_VIEW_NAME - 1].rstrip() + "…"


@dataclass(frozen=True)
class ViewTab:
    view: SavedView
    count: int
    querystring: str
    active: bool
    shared: bool  # shared with a team (by its owner, staff)


def tab_views(user: Any) -> list[SavedView]:
    """The views the list shows as tabs (at most ``SAVED_VIEW_TABS``), in one query: with their team (a shared
    view's tab names it), not their owner."""
    return list(_in_order(visible_views(user).select_related("team"), user)[:SAVED_VIEW_TABS])


def view_tabs(*, views: list[SavedView], counts: list[int], filters: ListFilters) -> list[ViewTab]:
    """``views`` (``tab_views``) as the list's tabs: each with its count (``selectors.tab_counts`` counts them with
    the status tabs, bounded like their badges, in the same statement) and whether the list shows it now (the
    same query string)."""
    current = filters.querystring(page=1)
    return [
        ViewTab(view=view, count=count, querystring=view.query, active=view.query == current, shared=bool(view.team_id))
        for view, count in zip(views, counts, strict=True)
    ]


# --- writes ------------------------------------------------------------------------------------------


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ApplicationError.invalid("name", "give the view a name", code="invalid_view")
    name = " ".join(name.split())
    if len(name) > MAX_SAVED_VIEW_NAME:
        raise ApplicationError.invalid(
            "name", f"at most {MAX_SAVED_VIEW_NAME} characters (this one has {len(name)})", code="invalid_view"
        )
    return name


def _team(user: Any, team: Any) -> Group | None:
    """The team a view is shared with (by name), staff only; None: not shared."""
    if team in (None, ""):
        return None
    if not sees_everything(user):
        raise ApplicationError.invalid("team", "only staff share views with a team", code="forbidden", status=403)
    found = Group.objects.filter(name=team).first() if isinstance(team, str) else None
    if found is None:
        raise ApplicationError.invalid("team", f"no team named {team!r}", code="invalid_view")
    return found


def _save(view: SavedView) -> SavedView:
    try:
        with transaction.atomic():
            view.save()
    except IntegrityError:
        raise ApplicationError.invalid(
            "name", f"you already have a view named “{view.name}”: pick another name", code="duplicate_view", status=409
        ) from None
    return view


def saved_view_create(*, user: Any, name: Any, query: Any, team: Any = None) -> SavedView:
    """Save ``query`` (the list's query string: its filters and sort) as ``name`` for ``user``."""
    name = _clean_name(name)
    if not isinstance(query, str):
        raise ApplicationError.invalid("query", "the list's query string, such as tab=open&agent=mailer")
    shared_with = _team(user, team)
    if SavedView.objects.filter(owner_id=user.pk).count() >= MAX_SAVED_VIEWS:
        raise ApplicationError.invalid(
            "name",
            f"you have {MAX_SAVED_VIEWS} views, the most one person keeps: delete one first",
            code="too_many_views",
        )
    return _save(SavedView(owner=user, name=name, query=normalised_query(query), team=shared_with))


def _own_view(user: Any, view_id: int) -> SavedView:
    """A view ``user`` may change: theirs (staff: any they can see); another's they see is a 403, others a 404."""
    view = visible_views(user).filter(pk=view_id).select_related("team").first()
    if view is None:
        raise ApplicationError(404, "not_found", "No such saved view.")
    if view.owner_id != user.pk and not sees_everything(user):
        raise ApplicationError(403, "forbidden", "Only its owner or staff can change this view.")
    return view


def saved_view_update(*, user: Any, view_id: int, name: Any = UNCHANGED, team: Any = UNCHANGED) -> SavedView:
    """Rename the view, or (staff) share it with a team or stop sharing it (``team=None``)."""
    view = _own_view(user, view_id)
    if name is not UNCHANGED:
        view.name = _clean_name(name)
    if team is not UNCHANGED:
        view.team = _team(user, team)
    return _save(view)


def saved_view_delete(*, user: Any, view_id: int) -> None:
    _own_view(user, view_id).delete()
