"""The approver's pages: the inbox list, an item, a run (decide all its interrupts at once), the run page's
live part and preview. Views parse, read, and render; what the pages show is built in ``inbox.listing.pages``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from inbox.access import visible_threads
from inbox.limits import MAX_DB_ID
from inbox.listing import detail
from inbox.listing import selectors as page_selectors
from inbox.listing.pages import (
    LIST_COOKIE,
    item_or_404,
    item_page,
    item_path,
    list_context,
    run_live_context,
    run_or_404,
    run_page,
)
from inbox.listing.selectors import ListFilters
from inbox.models import InboxItem, Resume


@login_required
@require_GET
def item_list(request: HttpRequest) -> HttpResponse:
    filters = ListFilters.from_query(request.GET)
    context = {
        **list_context(user=request.user, filters=filters),
        "options": page_selectors.filter_options(user=request.user, filters=filters),
        "outcome_choices": InboxItem.Outcome.choices,
        "delivery_choices": [(state, page_selectors.DELIVERY_LABELS[state]) for state in Resume.State.values],
        # The column headers that sort on this tab (None: a plain header).
        "sorts": {column: filters.sort_header(column) for column in page_selectors.SORT_COLUMNS},
        # The outcome of a bulk action, shown once after its redirect (see inbox.decisions.views.bulk_decide).
        "bulk_result": request.session.pop("bulk_result", None),
    }
    response = render(request, "inbox/list.html", context)
    # Remembered (a cookie: no session write on every list view) so that an item page's next / previous and
    # "after deciding" follow this list's order and filters. It is only ever parsed by ListFilters.from_query.
    response.set_cookie(
        LIST_COOKIE, filters.querystring(page=1), samesite="Lax", httponly=True, secure=request.is_secure()
    )
    return response


@login_required
@require_GET
def item_rows(request: HttpRequest) -> HttpResponse:
    """``<tr>`` rows as the list with these filters shows them: ``?ids=1,2`` plus the list's filters. (Open
    pages get their rows over their websocket; this serves clients that poll.)"""
    try:
        ids = [int(part) for part in request.GET.get("ids", "").split(",") if part.strip()]
        if not all(0 < pk <= MAX_DB_ID for pk in ids):
            raise ValueError
    except ValueError:
        return HttpResponseBadRequest("ids: a comma-separated list of item ids", content_type="text/plain")
    filters = ListFilters.from_query(request.GET)
    items = page_selectors.with_bulk_notes(
        page_selectors.rows_by_ids(user=request.user, filters=filters, ids=ids), request.user
    )
    context = {
        "items": items,
        "filters": filters,
        "may_have_open": filters.tab in page_selectors.BULK_TABS,
        "item_path": item_path(),
        "user": request.user,
    }
    # A Jinja2 template (jinja_templates/): Django's context processors do not run for it, so ``user`` is given.
    return render(request, "inbox/_rows.html", context)


@login_required
@require_GET
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    item = item_or_404(request, pk)
    return item_page(request, item)


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_or_404(request, pk)
    return run_page(request, run)


@login_required
@require_GET
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's live parts (resume state, item statuses, the resumed run's events) as a fragment."""
    run = run_or_404(request, pk)
    items = detail.run_items(run)
    context = {"run": run, "items": items, **run_live_context(run, items, user=request.user)}
    return render(request, "inbox/_run_live.html", context)


@login_required
@require_GET
def run_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """The ``RunAgentInput`` the run page's choices (``?decision-<pk>=approve|deny|cancel``) would send, as
    the form's htmx swap asks for it on every change; the summary under the form follows out of band."""
    run = run_or_404(request, pk)
    items = detail.run_items(run)
    context = {**run_live_context(run, items, user=request.user, choices=request.GET), "preview_summary_oob": True}
    if context["preview"] is None:  # sent meanwhile: the live part shows the resume itself
        return HttpResponse(status=204)
    return render(request, "inbox/_resume_preview.html", context)


@login_required
@require_GET
def thread_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A thread's timeline lives with the audit pages."""
    get_object_or_404(visible_threads(request.user), pk=pk)
    return redirect(f"/audit/threads/{pk}/")
