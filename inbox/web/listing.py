"""The approver's pages: the inbox list and its saved views, an item, a run (decide all its interrupts at once),
the run page's live part and preview. Views parse, read, and render; what the pages show is built in ``inbox.web.pages``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from inbox.access import sees_everything, visible_teams, visible_threads
from inbox.audit.provenance import item_provenance as item_provenance_of
from inbox.audit.seen import record_seen
from inbox.core.converters import database_id
from inbox.core.errors import ApplicationError
from inbox.limits import MAX_DB_ID, MAX_SAVED_VIEW_NAME
from inbox.listing import detail, saved_views
from inbox.listing import selectors as page_selectors
from inbox.listing.selectors import ListFilters
from inbox.models import InboxItem
from inbox.resumes.states import FILTER_LABELS
from inbox.web.pages import (
    LIST_COOKIE,
    item_context,
    item_or_404,
    item_page,
    item_path,
    list_context,
    run_live_context,
    run_or_404,
    run_page,
)


@login_required
@require_GET
def item_list(request: HttpRequest) -> HttpResponse:
    filters = ListFilters.from_query(request.GET)
    context = {
        **list_context(user=request.user, filters=filters),
        "options": page_selectors.filter_options(user=request.user, filters=filters),
        "outcome_choices": InboxItem.Outcome.choices,
        "delivery_choices": list(FILTER_LABELS.items()),
        # The column headers that sort on this tab (None: a plain header).
        "sorts": {column: filters.sort_header(column) for column in page_selectors.SORT_COLUMNS},
        # The outcome of a bulk action, shown once after its redirect (see inbox.web.decisions.bulk_decide).
        "bulk_result": request.session.pop("bulk_result", None),
        **_split_pane(request, filters),
    }
    response = render(request, "inbox/list.html", context)
    # Remembered (a cookie: no session write on every list view) so that an item page's next / previous and
    # "after deciding" follow this list's order and filters. It is only ever parsed by ListFilters.from_query.
    response.set_cookie(
        LIST_COOKIE, filters.querystring(page=1), samesite="Lax", httponly=True, secure=request.is_secure()
    )
    return response


def _split_pane(request: HttpRequest, filters: ListFilters) -> dict:
    """The split view's pane: the item of ``?item=`` as its page shows it (nothing for one the user may not see).
    Below the split view's width the address is replaced by the item's page (to_split.js, ``page_carried``)."""
    pk = database_id(request.GET.get("item"))
    item = detail.item_for_page(user=request.user, pk=pk) if pk is not None else None
    if item is None:
        return {}
    record_seen(item_id=item.pk, user=request.user)
    return {**item_context(request, item, filters=filters), "pane_shown": True, "page_carried": _carried(request)}


@login_required
@require_GET
def item_provenance(request: HttpRequest, pk: int) -> HttpResponse:
    """The item page's Audit record card, read when the person opens it: the page itself reads no audit row."""
    item = item_or_404(request, pk)
    provenance = item_provenance_of(item)
    context = {"item": item, "events": provenance.events, "chain": provenance.chain, "seen": provenance.seen}
    return render(request, "audit/_item_provenance.html", context)


@login_required
@require_POST
def item_seen(request: HttpRequest, pk: int) -> HttpResponse:
    """The split view shows a pane it fetched ahead (``X-Pane-Prefetch``): the item is seen from now."""
    item = item_or_404(request, pk)
    record_seen(item_id=item.pk, user=request.user)
    return HttpResponse(status=204)


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
    }
    return render(request, "inbox/_rows.html", context)


# What the item page reads from its address that the split view reads the same way (pages._chain).
_CARRIED_TO_SPLIT = ("after", "asked_again")


def _carried(request: HttpRequest) -> str:
    """The query string of ``_CARRIED_TO_SPLIT`` in ``request``, for the other view's address (to_split.js)."""
    carried = QueryDict(mutable=True)
    for key in _CARRIED_TO_SPLIT:
        if key in request.GET:
            carried[key] = request.GET[key]
    return carried.urlencode()


@login_required
@require_GET
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The item page. On a wide screen its script (to_split.js) replaces it with the list's split view showing
    the item, so a link to an item opens beside the list; not for ``?full`` (the pane's "Open as a page"), nor
    while the page carries a message just said (after a signed link's decision), which the list would lose, nor
    (the script reads the referrer) when an item page led here."""
    item = item_or_404(request, pk)
    opens_split = "full" not in request.GET and not len(messages.get_messages(request))
    return item_page(request, item, extra={"opens_split": opens_split, "split_carried": _carried(request)})


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


# --- saved views ------------------------------------------------------------------------------------------


def _views_page(
    request: HttpRequest, *, error: ApplicationError | None = None, error_view: int | None = None, status: int = 200
) -> HttpResponse:
    """The person's saved views (rename, share, delete) and the form that saves the list's current filters."""
    user = request.user
    query = saved_views.normalised_query(request.POST.get("query") or request.GET.get("query") or "")
    rows = [
        {
            "view": view,
            "description": saved_views.describe(saved_views.filters_of(view)),
            "may_change": view.owner_id == user.pk or sees_everything(user),
        }
        for view in saved_views.views_in_order(user)
    ]
    context = {
        "rows": rows,
        "teams": list(visible_teams(user)) if sees_everything(user) else [],
        "new_query": query,
        "new_description": saved_views.describe(saved_views.filters_of_query(query)),
        "new_name": request.POST.get("name", "")
        if error_view is None and request.method == "POST"
        else saved_views.suggested_name(saved_views.filters_of_query(query)),
        "name_limit": MAX_SAVED_VIEW_NAME,
        "error": error,
        "error_view": error_view,
        "error_name": request.POST.get("name", ""),
    }
    return render(request, "inbox/saved_views.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def saved_view_list(request: HttpRequest) -> HttpResponse:
    """GET: the views page (``?query=`` fills the save form). POST (``name``, ``query``: the list's query
    string): save a view, then show the list through it."""
    if request.method == "GET":
        return _views_page(request)
    try:
        view = saved_views.saved_view_create(
            user=request.user, name=request.POST.get("name"), query=request.POST.get("query", "")
        )
    except ApplicationError as error:
        return _views_page(request, error=error, status=error.status)
    messages.success(request, f"Saved the view “{view.name}”: it is a tab of the inbox.")
    return redirect(f"{reverse('inbox:list')}?{view.query}")


@login_required
@require_POST
def saved_view_update(request: HttpRequest, pk: int) -> HttpResponse:
    """Rename a view (``name``), or (staff, ``share``) share it with a team (``team``: its name, "" for no one)."""
    changes = (
        {"team": request.POST.get("team") or None} if "share" in request.POST else {"name": request.POST.get("name")}
    )
    try:
        view = saved_views.saved_view_update(user=request.user, view_id=pk, **changes)
    except ApplicationError as error:
        if error.status == 404:
            raise Http404(error.message) from None
        return _views_page(request, error=error, error_view=pk, status=error.status)
    if "share" in request.POST:
        messages.success(
            request,
            f"“{view.name}” is shared with {view.team.name}." if view.team else f"“{view.name}” is yours alone.",
        )
    else:
        messages.success(request, f"Renamed to “{view.name}”.")
    return redirect("inbox:saved_views")


@login_required
@require_POST
def saved_view_delete(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        saved_views.saved_view_delete(user=request.user, view_id=pk)
    except ApplicationError as error:
        if error.status == 404:
            raise Http404(error.message) from None
        return _views_page(request, error=error, error_view=pk, status=error.status)
    messages.success(request, "View deleted.")
    return redirect("inbox:saved_views")
