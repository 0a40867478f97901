"""Read paths of the inbox list: filtered, sorted, counted and searched.

Every query starts from ``access.visible_items``, so a page never shows a row its viewer may not see, and the
list page runs a fixed number of queries whatever the data (tab counts with the paginator's total, the page of
rows, the reason filter's options), one fewer on a tab its count found empty (no rows to read). The item and run
pages read through ``inbox.listing.detail``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db import connection, connections
from django.db.models import Exists, F, Min, OuterRef, Q, QuerySet, Subquery, TextField, Value
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import StrIndex, Upper
from django.http import QueryDict
from django.utils import timezone

from inbox.access import agent_choices, locked_by_claim, of_agent, visible_agents, visible_items
from inbox.core.paging import AtLeast, distinct_values
from inbox.decisions.rules import is_requester
from inbox.decisions.shapes import needs_form_input
from inbox.limits import LIST_BADGE_COUNT_LIMIT, LIST_COUNT_LIMIT, LIST_SEARCH_LIMIT, SEARCH_RECENT_ROWS
from inbox.models import InboxItem, ItemSearchText, Resume, Snooze

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class Truth(TypedDict):
    """The attributes ``with_truth`` annotates on an item."""

    run_has_open: bool
    run_deadline: datetime | None
    delivery: str | None
    delivery_error: str | None
    delivery_attempts: int | None
    delivery_next_at: datetime | None
    delivery_at: datetime | None


def with_truth(items: QuerySet[InboxItem]) -> QuerySet[WithAnnotations[InboxItem, Truth]]:
    """Annotate what a row must say besides its own columns:

    - ``run_deadline``: the earliest ``expiresAt`` among the run's items that are not expired. One resume
      answers every interrupt and none may be answered late, so that (not the item's own ``expiresAt``) is
      when the item stops being decidable. Decided siblings count: their lapse closes the run too.
    - ``delivery`` / ``delivery_error`` / ``delivery_attempts``: the state of the run's resume (the answer
      going back to the agent), empty while there is none yet; ``run_has_open``: some interrupt of the run is
      still open (so a decided item's answer waits for it)."""
    siblings = (
        InboxItem.objects.filter(run_id=OuterRef("run_id"))
        .exclude(status=InboxItem.Status.EXPIRED)
        .order_by()
        .values("run_id")
        .annotate(first=Min("expires_at"))
        .values("first")
    )
    open_sibling = InboxItem.objects.filter(run_id=OuterRef("run_id"), status=InboxItem.Status.OPEN)
    # A run has one resume at most: its columns come from a join (the run is joined for the row anyway), not
    # from three subqueries per row that the ORM builds and PostgreSQL plans on every page.
    return items.annotate(
        run_has_open=Exists(open_sibling),
        run_deadline=Subquery(siblings[:1]),
        delivery=F("run__resume__state"),
        delivery_error=F("run__resume__last_error"),
        delivery_attempts=F("run__resume__attempts"),
        delivery_next_at=F("run__resume__next_attempt_at"),
        delivery_at=F("run__resume__delivered_at"),
    )


def item_list(
    *,
    user,
    status: str | None = None,
    outcome: str | None = None,
    agent: str | None = None,
    reason: str | None = None,
    thread: str | None = None,
    view: ListFilters | None = None,
) -> QuerySet[InboxItem]:
    """The API's list: visible items, newest first; or the rows a saved view's filters show (``view``: its tab,
    filters and order, as on the page), narrowed further by the other filters."""
    items = visible_items(user) if view is None else tab_rows(user=user, filters=view)
    items = items.select_related("agent", "thread", "run", "decided_by", "claimed_by")
    if status:
        items = items.filter(status=status)
    if outcome:
        items = items.filter(outcome="" if outcome == "none" else outcome)
    if agent:
        items = items.filter(agent__slug=agent)
    if reason:
        items = items.filter(reason=reason)
    if thread:
        items = items.filter(thread__thread_id=thread)
    if view is not None:
        return items
    # Newest first: ids grow with arrival, and the primary key needs no index of its own to sort on.
    return items.order_by("-id")


PAGE_SIZE = 50


TABS = ("open", "mine", "snoozed", "decided", "expired", "all")

# The tabs that may show open rows, so the bulk bar and the rows' selection column.
BULK_TABS = ("open", "mine", "snoozed", "all")

# The tabs of open items a person works through: the items they snoozed are out of these until they wake.
WORK_TABS = ("open", "mine")


# The list's orders, each one read from the index of the tab it is offered on (the partial indexes per
# status): open items by their expiry either way ("item_open_expires", read backwards for the latest first) or
# by arrival; every tab by arrival, since ids grow with arrival ("item_*_newest", the primary key on All).
# Nothing else: an order no index serves would sort the whole tab on every page view.
SORT_ORDERS: dict[str, tuple[str, ...]] = {
    "expires": ("expires_at", "pk"),
    "expires_last": ("-expires_at", "-pk"),
    "newest": ("-pk",),
    "oldest": ("pk",),
}

SORTS = tuple(SORT_ORDERS)

SORT_LABELS = {
    "expires": "Expires soonest",
    "expires_last": "Expires latest",
    "newest": "Newest",
    "oldest": "Oldest",
}

_ARRIVAL_SORTS = ("newest", "oldest")

TAB_SORTS: dict[str, tuple[str, ...]] = {
    "open": SORTS,
    "mine": SORTS,
    "snoozed": SORTS,
    "decided": _ARRIVAL_SORTS,
    "expired": _ARRIVAL_SORTS,
    "all": _ARRIVAL_SORTS,
}

# The column headers that sort, and the two orders each one toggles between (the first is the one a first
# click gives). The aria-sort of each order describes the column's values: newest first is ages ascending.
SORT_COLUMNS: dict[str, tuple[str, str]] = {"age": ("newest", "oldest"), "due": ("expires", "expires_last")}

_ARIA_SORT = {"expires": "ascending", "expires_last": "descending", "newest": "ascending", "oldest": "descending"}


CORE_REASONS = ("tool_call", "input_required", "confirmation")


_TAB_FILTERS: dict[str, Q] = {
    "open": Q(status=InboxItem.Status.OPEN),
    "mine": Q(status=InboxItem.Status.OPEN),  # and held by the viewer
    "snoozed": Q(status=InboxItem.Status.OPEN),  # and snoozed by the viewer
    "decided": Q(status__in=InboxItem.DECIDED),
    "expired": Q(status=InboxItem.Status.EXPIRED),
    "all": Q(),
}


def _snoozes_in_force(user) -> QuerySet[Snooze]:
    """``user``'s snooze of the outer row, if it is in force: not yet woken and its time still ahead."""
    now = timezone.now()  # the app's clock, as the expiry sweep reads it
    return Snooze.objects.filter(user_id=user.pk, item_id=OuterRef("pk"), woken_at__isnull=True, until__gt=now)


def snoozed_by(user) -> Exists:
    """The row is snoozed by ``user`` now: a snooze of theirs not yet woken whose time is still ahead. As a
    filter it is an EXISTS (or NOT EXISTS) probe of the snooze table's (user, item) index per row the tab's
    own index yields, so the tab keeps its plan; other people's snoozes never count."""
    return Exists(_snoozes_in_force(user))


def tab_q(tab: str, user, *, snoozed: Exists | None = None) -> Q:
    """The rows of ``tab`` for ``user``: the tab's status, and on the work tabs (Open, Mine) none ``user``
    snoozed; Mine only what they hold, Snoozed only what they snoozed. ``snoozed``: ``snoozed_by(user)``, when
    the caller builds it once for several tabs."""
    condition = _TAB_FILTERS[tab]
    if tab == "mine":
        condition &= Q(claimed_by=user.pk)
    if tab in WORK_TABS or tab == "snoozed":
        snoozed = snoozed if snoozed is not None else snoozed_by(user)
        condition &= Q(~snoozed if tab in WORK_TABS else snoozed)
    return condition


# What the list's rows never read, left out of their statement. Heavy JSON: the row needs only tool_call (for the
# tool's name) and, for an open item's bulk checkbox and its words, response_schema and metadata (does it need its
# form? what does it ask? Both are read through the known emitters' table, inbox.agui.emitters, which recognises an
# interrupt by its metadata: a Strands question's words are in metadata.reason). What only the item page shows:
# when it was decided or claimed, the comment, the reminder's and tool result's times, its position in the run, its
# own approval count, the team a policy routed it to. And of the person holding it, all but their names (their
# password hash among them).
_LIST_DEFERRED = (
    "raw",
    "response_payload",
    "tool_result",
    "status_note",
    "response_schema_text",
    "decided_at",
    "decision_comment",
    "claimed_at",
    "reminder_sent_at",
    "tool_result_at",
    "position",
    "approvals_required",
    "routed_team",
    *(
        f"claimed_by__{name}"
        for name in ("password", "last_login", "is_superuser", "email", "is_staff", "is_active", "date_joined")
    ),
)


@dataclass(frozen=True)
class ListFilters:
    """The list page's query string, normalised: unknown values fall back to the defaults."""

    tab: str = "open"
    agent: str = ""
    reason: str = ""
    thread: str = ""
    q: str = ""
    sort: str = ""
    page: int = 1
    # Decided items by outcome (``InboxItem.Outcome``) and by the state of their resume (``Resume.State``).
    outcome: str = ""
    delivery: str = ""
    # A text search's matches, read once for the page's rows and its counts (``_search_ids``). It lives as long
    # as these filters: one request, or one live render of an open page, never longer.
    search_matches: dict[tuple[Any, str], list[int]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def search_is_short(self) -> bool:
        """The search term has no word of three characters: it is looked for among the newest items only."""
        return bool(self.q) and not _trigram_word(self.q)

    @property
    def search_recent_rows(self) -> str:
        """How many of the newest items a short term is looked for in, as the page writes it ("5,000")."""
        return f"{SEARCH_RECENT_ROWS:,}"

    @classmethod
    def from_query(cls, query: QueryDict) -> ListFilters:
        tab = query.get("tab", "open")
        sort = query.get("sort", "")
        try:
            page = min(max(1, int(query.get("page", "1"))), 1_000_000)  # an offset the database can take
        except ValueError:
            page = 1
        return cls(
            tab=tab if tab in TABS else "open",
            agent=query.get("agent", "").strip()[:64],
            reason=query.get("reason", "").strip()[:255],
            thread=query.get("thread", "").strip()[:255],
            q=query.get("q", "").strip()[:200],
            sort=sort if sort in TAB_SORTS[tab if tab in TABS else "open"] else "",
            page=page,
            outcome=query.get("outcome", "") if query.get("outcome", "") in InboxItem.Outcome.values else "",
            delivery=query.get("delivery", "") if query.get("delivery", "") in Resume.State.values else "",
        )

    @property
    def effective_sort(self) -> str:
        """Open items are worked soonest-to-expire first; everything else newest first."""
        return self.sort or ("expires" if self.tab in ("open", "mine", "snoozed") else "newest")

    @property
    def sort_choices(self) -> list[tuple[str, str]]:
        """The orders this tab offers (``SORT_LABELS``), for the Sort select."""
        return [(sort, SORT_LABELS[sort]) for sort in TAB_SORTS[self.tab]]

    def sort_header(self, column: str) -> SortHeader | None:
        """How the header of ``column`` sorts on this tab; None where it does not."""
        first, second = SORT_COLUMNS[column]
        if first not in TAB_SORTS[self.tab]:
            return None
        current = self.effective_sort
        active = current in (first, second)
        following = (second if current == first else first) if active else first
        return SortHeader(
            aria_sort=_ARIA_SORT[current] if active else "",
            label=SORT_LABELS[current] if active else "",
            next_label=SORT_LABELS[following],
            querystring=self.querystring(sort=following, page=1),
        )

    @property
    def is_filtered(self) -> bool:
        return bool(self.agent or self.reason or self.thread or self.q or self.outcome or self.delivery)

    def querystring(self, **changes: Any) -> str:
        """The query string of these filters with ``changes``; defaults are left out."""
        values = replace(self, **changes)
        params = {
            "tab": values.tab if values.tab != "open" else "",
            "agent": values.agent,
            "reason": values.reason,
            "thread": values.thread,
            "q": values.q,
            "sort": values.sort,
            "outcome": values.outcome,
            "delivery": values.delivery,
            "page": str(values.page) if values.page != 1 else "",
        }
        return urlencode({key: value for key, value in params.items() if value})


@dataclass(frozen=True)
class SortHeader:
    """A sortable column header: ``aria_sort`` and ``label`` (e.g. "Newest") when the list is sorted by it,
    and the link that sorts by it next (the other way round when it is the current order)."""

    aria_sort: str
    label: str
    next_label: str
    querystring: str


def _filtered(user, filters: ListFilters, *, search_limit: int | None = None) -> QuerySet[InboxItem]:
    items = visible_items(user)
    if filters.agent:
        items = items.filter(of_agent(user, filters.agent))
    if filters.reason:
        items = items.filter(reason=filters.reason)
    if filters.thread:
        items = items.filter(thread__thread_id=filters.thread)
    if filters.q:
        matches = _search_ids(user, filters.q, memo=filters.search_matches)
        items = items.filter(pk__anyof=matches[: search_limit or LIST_SEARCH_LIMIT])
    if filters.outcome:
        items = items.filter(outcome=filters.outcome)
    if filters.delivery:
        items = items.filter(run__resume__state=filters.delivery)
    return items


def _search_ids(user, q: str, *, memo: dict[tuple[Any, str], list[int]]) -> list[int]:
    """Items whose message, tool name or thread id contains ``q`` (case-insensitive): the ids of the newest
    ``LIST_SEARCH_LIMIT + 1`` among ``user``'s agents, newest first, read from ``ItemSearchText`` in one query
    and kept in ``memo`` (the filters'), so the page's rows and its tab counts use the same matches (SQLite
    scans).

    On PostgreSQL the query has two parts glued with ``UNION ALL ... LIMIT``: first the newest
    ``SEARCH_RECENT_ROWS`` rows of the viewer's, read newest first and matched with a plain LIKE; then, only
    if those held too few matches (PostgreSQL's Append stops pulling once the limit is met), the older rows
    through the trigram index. A common term is found among the
    newest rows, where the trigram index alone fetched and sorted all its matches; a rare one goes to the index
    after a short scan (``_older_matches``), always: the planner may not trade it for a walk of every row."""
    key = (user.pk, q)
    if key not in memo:
        memo[key] = _read_search_ids(user, q)
    return memo[key]


def _read_search_ids(user, q: str) -> list[int]:
    limit = LIST_SEARCH_LIMIT + 1
    scope = ItemSearchText.objects.all()
    if not user.is_staff:
        scope = scope.filter(agent_id__anyof=visible_agents(user).values("pk"))
    # A term without a word of three characters has no trigram for an index to look up, and matching it against
    # every row grows with the table: it is looked for among the viewer's newest SEARCH_RECENT_ROWS items only,
    # the first part of the search below, and the page says so (``ListFilters.search_is_short``).
    word = _trigram_word(q)
    recent = scope.order_by("-item_id").values("item_id", "text")[:SEARCH_RECENT_ROWS]
    if connection.vendor != "postgresql":
        matches = scope if word else scope.filter(item_id__in=recent.values("item_id"))
        return list(matches.filter(text__icontains=q).order_by("-item_id").values_list("item_id", flat=True)[:limit])
    recent_sql, recent_params = recent.query.sql_with_params()
    pattern = f"%{connection.ops.prep_for_like_query(q)}%"
    # The newest rows are read first, whole (MATERIALIZED): given the LIKE beside them, the planner would walk the
    # key backwards testing every row for a term that matches none.
    newest = (
        f"WITH search_recent AS MATERIALIZED ({recent_sql}) "
        "(SELECT item_id FROM search_recent WHERE UPPER(text) LIKE UPPER(%s) ORDER BY item_id DESC)"
    )
    if not word:
        sql, params = f"{newest} LIMIT %s", [*recent_params, pattern, limit]
    else:
        # The older matches are found through the trigram index, whatever the planner makes of the term: its
        # estimate of a LIKE comes from a sample, and when the sample overrated a term (a rare tool name after an
        # unlucky ANALYZE) it walked the primary key backwards testing every row, or scanned the table, in time
        # growing with the table. So the older part is planned on its own (``OFFSET 0``), its bound on ``item_id``
        # is not an index condition (``+ 0``: it would offer a range scan of the whole key), and sequential scans
        # are off for this one statement (RESET after it, in the same round trip; an error rolls the SET back with
        # its transaction).
        below_recent = RawSQL("(SELECT min(item_id) FROM search_recent)", [])
        older = _older_matches(scope, q, word).alias(unindexed_id=F("item_id") + 0)
        older_sql, older_params = (
            older.filter(unindexed_id__lt=below_recent).order_by().values("item_id").query.sql_with_params()
        )
        sql = (
            f"SET enable_seqscan = off; {newest} UNION ALL (SELECT item_id FROM ({older_sql} OFFSET 0) AS older "
            "ORDER BY item_id DESC LIMIT %s) LIMIT %s; RESET enable_seqscan"
        )
        params = [*recent_params, pattern, *older_params, limit, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while cursor.description is None and cursor.nextset():  # past the SET, to the rows
            pass
        return [row[0] for row in cursor.fetchall()]


def _older_matches(scope: QuerySet[ItemSearchText], q: str, word: str) -> QuerySet[ItemSearchText]:
    """Rows of ``scope`` containing ``q``, for the trigram index to find. The index reads a posting list per
    trigram of what it is given, and the trigrams of a common word ("invoice", "thread") list nearly every row:
    for "invoice 424242" it read 16 MB to find one. So it is given one word of ``q`` only, the one most likely to
    be rare (the longest with a digit in it, else the longest), and the whole of ``q`` is checked on the rows it
    returns, in a form the index cannot take (``strpos``). ``word`` is ``_trigram_word(q)``: a term without one
    is not searched here (``_read_search_ids``)."""
    if len(word) == len(q):
        return scope.filter(text__icontains=q)
    contains = StrIndex(Upper("text"), Upper(Value(q, output_field=TextField())))
    return scope.filter(text__icontains=word).alias(position=contains).filter(position__gt=0)


_WORD = re.compile(r"[^\W_]+")  # what pg_trgm takes trigrams of: runs of letters and digits


def _trigram_word(q: str) -> str:
    """The word of ``q`` the trigram index is asked for (``_older_matches``), or "" when no word has a trigram."""
    words = [word for word in _WORD.findall(q) if len(word) >= 3]
    return max(words, key=lambda word: (any(c.isdigit() for c in word), len(word)), default="")


def _bounded_count_sql(querysets: list[tuple[QuerySet, int]]) -> tuple[str, list]:
    """One statement of scalar subqueries, each counting its queryset's rows up to its bound + 1."""
    parts: list[str] = []
    params: list[Any] = []
    for queryset, bound in querysets:
        sql, inner = queryset.order_by().values("pk")[: bound + 1].query.sql_with_params()
        parts.append(f"(SELECT COUNT(*) FROM ({sql}) AS bounded)")
        params.extend(inner)
    return "SELECT " + ", ".join(parts), params


def tab_querysets(*, user, filters: ListFilters) -> dict[str, QuerySet[InboxItem]] | None:
    """Each tab's rows under the filters, unordered: built once for a page's tab counts and its rows. None with a
    text search, whose counts take one pass over its matches instead (``_search_counts``)."""
    return None if filters.q else _tab_querysets(user, filters)


def _tab_querysets(user, filters: ListFilters, snoozed: Exists | None = None) -> dict[str, QuerySet[InboxItem]]:
    base = _filtered(user, filters)
    snoozed = snoozed if snoozed is not None else snoozed_by(user)
    return {tab: base.filter(tab_q(tab, user, snoozed=snoozed)) for tab in TABS}


def tab_counts(
    *,
    user,
    filters: ListFilters,
    views: Sequence[ListFilters] = (),
    tabs: dict[str, QuerySet[InboxItem]] | None = None,
) -> tuple[dict[str, int], list[int]]:
    """Items per tab under the current filters, and the rows of each of ``views`` (its tab under its filters: the
    saved views' tabs), in one query of one bounded subquery per tab and per view. ``tabs``: the
    ``tab_querysets`` of these filters, when the caller built them (a search counts its own, one match longer).

    Each subquery stops after its bound (read from the index that serves the tab), so the cost does not grow
    with the history: the current tab counts up to ``LIST_COUNT_LIMIT`` (its pager needs the number; past it
    the tab reads "10,000+" and the pager stops there), the others' badges and the views up to
    ``LIST_BADGE_COUNT_LIMIT`` ("1,000+"). A view with a search reads its matches first, as the list does."""
    badge = min(LIST_BADGE_COUNT_LIMIT, LIST_COUNT_LIMIT)
    # A search's counts take one match past the limit: it says there are more than the list shows. The tabs the
    # caller built already hold the filters (All: the filters alone), so they are not built a second time.
    if tabs and not filters.q:
        base = tabs["all"]
    else:
        base = _filtered(user, filters, search_limit=LIST_SEARCH_LIMIT + 1 if filters.q else None)
    # The views' tabs share one snooze probe (and their rows are counted, not ordered).
    snoozed = snoozed_by(user) if views else None
    viewed = [_filtered(user, each).filter(tab_q(each.tab, user, snoozed=snoozed)) for each in views]
    if base.query.is_empty() or any(queryset.query.is_empty() for queryset in viewed):  # nobody logged in
        return dict.fromkeys(TABS, 0), [0] * len(views)
    if filters.q:
        counts, row = _search_counts(user=user, matches=base, also=[(queryset, badge) for queryset in viewed])
    else:
        bounds = {tab: LIST_COUNT_LIMIT if tab == filters.tab else badge for tab in TABS}
        tabs = tabs or _tab_querysets(user, filters, snoozed)
        querysets = [(tabs[tab], bounds[tab]) for tab in TABS]
        sql, params = _bounded_count_sql([*querysets, *((queryset, badge) for queryset in viewed)])
        with connections[base.db].cursor() as cursor:
            cursor.execute(sql, params)
            row = list(cursor.fetchone())
        counts = {tab: AtLeast(bounds[tab]) if n > bounds[tab] else n for tab, n in zip(TABS, row, strict=False)}
        row = row[len(TABS) :]
    return counts, [AtLeast(badge) if n > badge else n for n in row]


def _search_counts(
    *, user, matches: QuerySet[InboxItem], also: list[tuple[QuerySet, int]]
) -> tuple[dict[str, int], list[int]]:
    """Tab counts of a text search in one pass over its matches (at most ``LIST_SEARCH_LIMIT + 1``): one read of
    the search instead of one per tab. With more matches than the list shows, every count is a lower bound
    ("123+"). The same statement counts ``also`` (bounded subqueries: the saved views)."""
    matches = matches.annotate(snoozed=snoozed_by(user))
    sql, params = matches.order_by().values("status", "claimed_by", "snoozed").query.sql_with_params()
    also_sql, also_params = _bounded_count_sql(also) if also else ("SELECT ", [])
    also_columns = also_sql.removeprefix("SELECT ")
    status = InboxItem.Status
    decided = (status.RESOLVED, status.CANCELLED)
    with connections[matches.db].cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), "
            "COALESCE(SUM(CASE WHEN m.status = %s AND NOT m.snoozed THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN m.status = %s AND m.claimed_by = %s AND NOT m.snoozed THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN m.status = %s AND m.snoozed THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN m.status IN (%s, %s) THEN 1 ELSE 0 END), 0), "
            f"COALESCE(SUM(CASE WHEN m.status = %s THEN 1 ELSE 0 END), 0){', ' if also else ''}{also_columns} "
            f"FROM ({sql}) AS m",
            [status.OPEN, status.OPEN, user.pk, status.OPEN, *decided, status.EXPIRED, *also_params, *params],
        )
        total, *tabs = cursor.fetchone()
    bounded = total > LIST_SEARCH_LIMIT
    counts = dict(zip(("open", "mine", "snoozed", "decided", "expired"), tabs[:5], strict=True))
    counts["all"] = min(total, LIST_SEARCH_LIMIT)
    return {tab: AtLeast(n) if bounded else n for tab, n in counts.items()}, list(tabs[5:])


def tab_rows(*, user, filters: ListFilters, rows: QuerySet[InboxItem] | None = None) -> QuerySet[InboxItem]:
    """The tab's rows under the filters, in the tab's order (no columns chosen yet). ``rows``: the tab's rows
    from ``tab_querysets``, when the caller built them."""
    items = rows if rows is not None else _filtered(user, filters).filter(tab_q(filters.tab, user))
    return items.order_by(*SORT_ORDERS[filters.effective_sort])


def list_rows(*, user, filters: ListFilters) -> QuerySet[InboxItem]:
    return _row_columns(tab_rows(user=user, filters=filters))


def _row_columns(items: QuerySet[InboxItem]) -> QuerySet[InboxItem]:
    """What a row shows besides its own columns: who holds it joined (``bulk_note`` and the holder's chip read the
    person), its run's truth annotated, and the names of its agent, thread and decider (``agent_slug``,
    ``agent_name``, ``thread_key``, ``decided_by_name``): columns read through the same joins, where whole objects
    cost up to 150 model instances a page to show four strings."""
    items = items.select_related("claimed_by").defer(*_LIST_DEFERRED)
    names = {
        "agent_slug": F("agent__slug"),
        "agent_name": F("agent__name"),
        "thread_key": F("thread__thread_id"),
        "decided_by_name": F(f"decided_by__{get_user_model().USERNAME_FIELD}"),
    }
    return with_truth(items.annotate(**names))


def _with_row_notes(items: QuerySet[InboxItem], user) -> QuerySet[InboxItem]:
    """Who asked for each row's action, read beside the row (its metadata stays deferred, its run unjoined
    otherwise): ``requested_by_meta`` (the interrupt's ``metadata.requestedBy``) and ``requested_by_run``; and
    ``snoozed_until``, the end of the viewer's snooze of it in force (None without one), for the row's marker:
    a subquery on the snooze table's (user, item) index in the page's one query, not a query per row."""
    return items.annotate(
        requested_by_meta=KT("metadata__requestedBy"),
        requested_by_run=F("run__requested_by"),
        snoozed_until=Subquery(_snoozes_in_force(user).values("until")[:1]),
    )


@dataclass(frozen=True)
class BulkNote:
    """Why a row of the list cannot be picked for a bulk decision, or what a bulk approval of it will not do.

    ``kind``: "" (pick it), "closed" (not open), "form" (needs an answer from its own form), "claimed"
    (someone else holds it), "self" (the viewer asked for the action: they may pick it to deny or cancel it,
    the approval is refused). ``words`` say so to the approver."""

    kind: str = ""
    words: str = ""

    @property
    def selectable(self) -> bool:
        return self.kind in ("", "self")


def bulk_note(item: InboxItem, user) -> BulkNote:
    """The rules the bulk decision applies (``decision_bulk``, ``check_claim``, ``check_not_requester``), told
    before the click."""
    if not item.is_open:
        return BulkNote("closed", f"{item.outcome_label}: nothing to decide")
    if needs_form_input(item):
        return BulkNote("form", "Needs an answer from its form: open it to decide")
    if locked_by_claim(user, item) and item.claimed_by is not None:
        return BulkNote("claimed", f"Claimed by {item.claimed_by.get_username()}: only they decide it")
    # decisions.rules.requester_of, from the annotations of _with_row_notes (no query per row).
    meta = getattr(item, "requested_by_meta", None)
    requester = meta.strip() if isinstance(meta, str) and meta.strip() else getattr(item, "requested_by_run", "")
    if is_requester(user, requester or ""):
        return BulkNote("self", "You requested this: someone else must approve it (you may deny or cancel it)")
    return BulkNote()


def with_bulk_notes(items: list[InboxItem], user) -> list[InboxItem]:
    """``items``, each with its ``bulk_note`` for the row's selection cell."""
    for item in items:
        item.bulk_note = bulk_note(item, user)  # type: ignore[attr-defined]
    return items


def list_page(
    *, user, filters: ListFilters, counts: dict[str, int], tabs: dict[str, QuerySet[InboxItem]] | None = None
) -> Page:
    """The page of rows; ``tabs``: the ``tab_querysets`` of these filters, when the caller built them."""
    rows = tab_rows(user=user, filters=filters, rows=tabs[filters.tab] if tabs else None)
    paginator = Paginator(rows, PAGE_SIZE)
    # The tab counts already hold the total (bounded: see tab_counts): no second COUNT(*).
    paginator.count = counts[filters.tab]
    page = paginator.get_page(filters.page)
    if not paginator.count:  # an empty tab (Mine, Snoozed, often): its count said so, no statement for its rows
        page.object_list = []
        return page
    # A deferred join: the page's ids are read from the tab's index alone (an index-only scan, however deep
    # the page), then only those 50 rows are fetched with their joins. One query. The ids are an array
    # (``= ANY(ARRAY(…))``, an InitPlan) rather than ``IN (…)``: as a semi-join they were one more relation
    # for PostgreSQL to order among the row's seven joins, which made planning slower.
    # The ids are the tab's rows the viewer may see (visible_items, the tab, the filters), read in the same statement:
    # the outer query only orders and joins those 50, it does not state the whole filter again (which cost as much
    # Python to compile as the rest of the statement, and for an approver's visibility, more).
    start = (page.number - 1) * PAGE_SIZE
    ids = rows.values("pk")[start : start + PAGE_SIZE]
    page_rows = InboxItem.objects.filter(pk__anyof=ids).order_by(*SORT_ORDERS[filters.effective_sort])
    page.object_list = _with_row_notes(_row_columns(page_rows), user)
    return page


def rows_by_ids(*, user, filters: ListFilters, ids: list[int]) -> list[InboxItem]:
    """The rows the live list asked for, if the viewer may see them and they match the filters."""
    return list(_with_row_notes(list_rows(user=user, filters=filters).filter(pk__in=ids[:PAGE_SIZE]), user))


def filter_options(*, user, filters: ListFilters) -> dict[str, list]:
    """The agent and reason choices. Reasons: the core ones, those of open items (read from the status
    index, not a scan of the whole history) and the one currently chosen."""
    agents = [(slug, name) for _pk, slug, name in agent_choices(user)]
    open_reasons = distinct_values(visible_items(user).filter(status=InboxItem.Status.OPEN), "reason", limit=100)
    seen = set(open_reasons) | ({filters.reason} if filters.reason else set())
    reasons = list(CORE_REASONS) + sorted(seen - set(CORE_REASONS))
    return {"agents": agents, "reasons": reasons}
