"""The approver's pages as every package renders them: the item page and the run page (``item_page``,
``run_page``, after a refused decision, claim or comment too), the objects they show or a 404
(``item_or_404``, ``run_or_404``), the list's changing part (``list_context``) and the run page's live part
(``run_live_context``, ``run_rows``), which the live updates (``inbox.web.fragments``) render as well."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.messages import SUCCESS
from django.contrib.messages.storage.base import Message
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers

from inbox.access import locked_by_claim
from inbox.audit.seen import record_seen
from inbox.core.converters import database_id
from inbox.decisions import forms
from inbox.decisions.rules import is_requester, requester_of
from inbox.expiry.services import run_expiry_summary
from inbox.listing import chain, detail, saved_views
from inbox.listing import selectors as page_selectors
from inbox.listing.preview import resume_preview
from inbox.listing.selectors import ListFilters
from inbox.models import InboxItem, Run
from inbox.teams.snooze import PRESETS as SNOOZE_PRESETS
from inbox.teams.snooze import snooze_of

LIST_COOKIE = "inbox_list"


THEN_NEXT_SESSION_KEY = "inbox_then_next"


def list_filters_of(request: HttpRequest) -> ListFilters:
    """The filters of the list this user last looked at (the Open tab by default)."""
    return ListFilters.from_query(QueryDict(request.COOKIES.get(LIST_COOKIE, "")))


def then_next(request: HttpRequest) -> bool:
    """Whether deciding an item goes on to the next open one (the default) or stays on the decided item."""
    return bool(request.session.get(THEN_NEXT_SESSION_KEY, True))


def _triage(request: HttpRequest, item: InboxItem, filters: ListFilters) -> dict[str, Any]:
    following, previous = detail.neighbours_in_list(user=request.user, filters=filters, item=item)
    return {
        "next_item": following,
        "previous_item": previous,
        "list_url": "/inbox/?" + filters.querystring(),
        "then_next": then_next(request),
    }


def list_context(*, user, filters: ListFilters) -> dict[str, Any]:
    """What the list shows that changes as items come and go: the page of rows, the tab and view counts, the pager.
    The page and its live updates (inbox.web.fragments) render it from here."""
    views = saved_views.tab_views(user)
    tabs = page_selectors.tab_querysets(user=user, filters=filters)  # the counts and the page filter them the same
    counts, view_counts = page_selectors.tab_counts(
        user=user, filters=filters, views=[saved_views.filters_of(view) for view in views], tabs=tabs
    )
    page = page_selectors.list_page(user=user, filters=filters, counts=counts, tabs=tabs)
    items = page_selectors.with_bulk_notes(list(page.object_list), user)
    return {
        "filters": filters,
        "counts": counts,
        "page": page,
        "items": items,
        "has_open": any(item.is_open for item in items),
        # The bulk bar is there wherever open rows may come and go; the stylesheet hides it while none show.
        "may_have_open": filters.tab in page_selectors.BULK_TABS,
        "tabs": [
            (tab, tab.title(), counts[tab], filters.querystring(tab=tab, page=1, sort=""))
            for tab in page_selectors.TABS
        ],
        "base_qs": filters.querystring(page=1),
        "item_path": item_path(),
        # The viewer's saved views as tabs with their counts (and whether the list shows one now).
        "view_tabs": saved_views.view_tabs(views=views, counts=view_counts, filters=filters),
    }


def item_path() -> str:
    """The item page's path up to its id (``/inbox/items/``): a row links to ``{{ item_path }}{{ item.pk }}/``,
    one ``reverse`` per page of rows rather than one per row."""
    one = reverse("inbox:item", kwargs={"pk": 1})
    return one[: one.rindex("1/")]


def item_or_404(request: HttpRequest, pk: int) -> InboxItem:
    """The item as its page shows it, if the user may see it (anything else is a 404, never a 403)."""
    item = detail.item_for_page(user=request.user, pk=pk)
    if item is None:
        raise Http404("No such item.")
    return item


def run_or_404(request: HttpRequest, pk: int) -> Run:
    run = detail.run_for_page(user=request.user, pk=pk)
    if run is None:
        raise Http404("No such run.")
    return run


def decision_words(item: InboxItem) -> str:
    """The toast's word for a closed item: its stored outcome (Approved, Approved with edits, Denied, Answered,
    Cancelled), as judged when it was decided."""
    return item.outcome_label


PANE_TARGET = "split-pane"


def is_pane_request(request: HttpRequest) -> bool:
    """Whether the list's split view asked for the item as its pane (htmx names the element it swaps)."""
    return request.headers.get("HX-Target") == PANE_TARGET


def is_prefetch(request: HttpRequest) -> bool:
    """Whether the split view fetched this pane ahead, to show it later (split.js sends ``X-Pane-Prefetch``)."""
    return request.headers.get("X-Pane-Prefetch") == "1"


def split_query(filters: ListFilters, item: InboxItem) -> str:
    """The split view's query string with ``item`` shown: the list's filters, and the item."""
    query = filters.querystring()
    return f"{query}&item={item.pk}" if query else f"item={item.pk}"


def pane_moved_on(request: HttpRequest, *, said: str, following: InboxItem, after: int) -> HttpResponse | None:
    """After a decision in the split view: when the pane of the item it goes on to was fetched ahead
    (``X-Pane-Ahead`` names it), the answer is only the words to show above it (or the decision's Undo toast) and
    where it is (``X-Pane-Next``):
    the browser shows the pane it has instead of waiting for it. None: the page's usual redirect answers."""
    if not is_pane_request(request) or request.headers.get("X-Pane-Ahead") != str(following.pk):
        return None
    # _flashes.html draws the Undo toast of the decision too, when it has one (then ``said`` is empty).
    record_seen(item_id=following.pk, user=request.user)  # the browser shows that pane now
    response = render(request, "inbox/_flashes.html", {"messages": [Message(SUCCESS, said)] if said else []})
    response["X-Pane-Next"] = f"{following.get_absolute_url()}?after={after}"
    return response


def pane_shown_ahead(request: HttpRequest, *, said: str, after: int) -> HttpResponse | None:
    """After a decision the split view sent behind the next item's pane, which it showed at once (``X-Pane-Shown``
    names that item, split.js): the answer is only the words to put above it (or the decision's Undo toast) and where
    it is (``X-Pane-Next``, with the run just decided for its socket to watch). The browser recorded that pane as seen
    when it showed it. None: not such a request."""
    shown = database_id(request.headers.get("X-Pane-Shown")) if is_pane_request(request) else None
    if shown is None:
        return None
    response = render(request, "inbox/_flashes.html", {"messages": [Message(SUCCESS, said)] if said else []})
    response["X-Pane-Next"] = f"{reverse('inbox:item', kwargs={'pk': shown})}?after={after}"
    return response


def item_context(
    request: HttpRequest,
    item: InboxItem,
    *,
    error=None,
    post=None,
    extra: dict | None = None,
    filters: ListFilters | None = None,
) -> dict[str, Any]:
    """What the item page shows, and the split view's pane with it (the same partials draw both). Next and
    previous follow ``filters``: by default the list this user last looked at."""
    filters = filters or list_filters_of(request)
    siblings = detail.item_siblings(item)
    errors = forms.field_errors(getattr(error, "errors", []) or [])
    decided = sum(1 for sibling in siblings if sibling.is_decided)
    decisions = list(item.decisions.select_related("user"))
    return {
        "item": item,
        "run": item.run,
        "siblings": siblings,
        "decided_count": decided,
        "ui": forms.decision_ui(item, post=post, errors=errors) if item.is_open else None,
        "error": error,
        "comment": post.get("comment", "") if post is not None else "",
        "decisions": decisions,
        **_triage(request, item, filters),
        # The requester may not approve their own action: the page says so before the click.
        "is_requester": item.is_open and is_requester(request.user, requester_of(item)),
        **detail.item_team(user=request.user, item=item, decisions=decisions),
        **_chain(request, item),
        # The viewer's own snooze of the item, if one is in force (the snooze control).
        "snooze": snooze_of(request.user, item) if item.is_open else None,
        "snooze_presets": list(SNOOZE_PRESETS.items()),
        "split_query": split_query(filters, item),
        **(extra or {}),
    }


def item_page(
    request: HttpRequest, item: InboxItem, *, error=None, post=None, status: int = 200, extra: dict | None = None
) -> HttpResponse:
    """The item page, or, asked for by the list's split view, the same page's body as its pane."""
    context = item_context(request, item, error=error, post=post, extra=extra)
    if not is_prefetch(request):  # a pane fetched ahead is not shown yet: the browser says when (item_seen)
        record_seen(item_id=item.pk, user=request.user)
    template = "inbox/_item_pane.html" if is_pane_request(request) else "inbox/item.html"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Target"])  # the same URL answers a page or a pane
    return response


def _chain(request: HttpRequest, item: InboxItem) -> dict[str, Any]:
    """The chain (``inbox.listing.chain``): a decided item links the interrupt its resumed run raised; the page
    reached right after deciding (``?after=<run pk>``) watches that run's resume for it, and with "Then go to
    the next open item" on goes there as soon as it arrives."""
    after = database_id(request.GET.get("after"))
    own = {} if item.is_open else chain.follow_up_context(user=request.user, run_id=item.run_id)
    earlier = chain.follow_up(user=request.user, run_id=after) if after and after != item.run_id else None
    # Reached by the chain's link (``?asked_again=<the run decided>``): say so, if it is so — this item's run is
    # the one the agent answered that run's resume with.
    asked = database_id(request.GET.get("asked_again"))
    return {
        **own,
        "asked_again": asked is not None and asked != item.run_id and chain.resumed_run_of(asked) == item.run_id,
        "chain_after": after,
        "chain_notice": earlier if earlier is not None and earlier.pk != item.pk else None,
        # Followed at once only on the page reached by deciding, never when a decided item is revisited, and never in
        # the split view's pane: nothing pulls the pane away from the item read (the follow-up is announced there).
        "chain_auto": after is not None and then_next(request) and not is_pane_request(request),
    }


def run_page(
    request: HttpRequest, run: Run, *, error=None, post=None, status: int = 200, extra: dict | None = None
) -> HttpResponse:
    items = detail.run_items(run)
    rows = run_rows(items, post, request.user)
    context = {
        "run": run,
        "rows": rows,
        # Open interrupts this user may decide here (not locked by someone else's claim).
        "choosable_count": sum(1 for row in rows if row["item"].is_open and not row["held_by_other"]),
        # "Set all: Approve/Deny" only where some open interrupt here can be approved or denied from the run page.
        "set_all_applies": any(
            row["item"].is_open and not row["held_by_other"] and row["ui"] is not None and row["ui"].mode == "boolean"
            for row in rows
        ),
        "items": items,
        "error": error,
        "comment": post.get("comment", "") if post is not None else "",
        **run_live_context(run, items, user=request.user, choices=post),
        "comments": detail.comments_of(run),
        **(extra or {}),
    }
    return render(request, "inbox/run.html", context, status=status)


def run_rows(items: list[InboxItem], post, user) -> list[dict[str, Any]]:
    return [_run_row(item, post, user, position) for position, item in enumerate(items, start=1)]


def _run_row(item: InboxItem, post, user, position: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "item": item,
        "position": position,
        "ui": None,
        "choice": post.get(f"decision-{item.pk}", "") if post else "",
        "held_by_other": locked_by_claim(user, item),
    }
    if item.is_open:
        row["ui"] = forms.decision_ui(item)
    return row


def run_live_context(run: Run, items: list[InboxItem], *, user, choices=None) -> dict[str, Any]:
    """The run page's live part: the resume's state, or the preview of the ``RunAgentInput`` with the choices
    made so far in the form (``choices``: the form's ``decision-<pk>`` values)."""
    resume = detail.resume_of(run)
    decided = sum(1 for item in items if item.is_decided)
    preview = resume_preview(run=run, items=items, user=user, choices=choices or {}) if resume is None else None
    resumed_run = resume.resumed_run if resume is not None and resume.resumed_run_id else None
    following = chain.follow_up_context(user=user, run_id=run.pk, resumed_run_id=resumed_run.pk) if resumed_run else {}
    return {
        "resume": resume,
        "resumed_run": resumed_run,
        **following,
        "unfiled_results": detail.unfiled_results(resumed_run=resumed_run, items=items),
        "decided_count": decided,
        "open_count": sum(1 for item in items if item.is_open),
        "expired_count": sum(1 for item in items if item.status == InboxItem.Status.EXPIRED),
        "preview": preview,
        "preview_json": json.dumps(preview["input"], indent=2, ensure_ascii=False) if preview else "",
        "preview_summary": _preview_summary(preview),
        "expiry_summary": run_expiry_summary(run, items=items, resume=resume),
    }


def _preview_summary(preview: dict | None) -> str:
    if not preview:
        return "All chosen decisions are stored together, or none."
    if preview["waiting"]:
        return f"{preview['waiting']} still undecided after this: the resume waits for them."
    return "This completes the run: the resume above is sent."
