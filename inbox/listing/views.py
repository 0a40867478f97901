"""The approver's pages: the inbox list, an item, a run (decide all its interrupts at once), and the
HTML fragments the live page script asks for. Views parse, call one service, and render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from inbox.access import locked_by_claim, visible_threads
from inbox.decisions import forms
from inbox.expiry.services import run_expiry_summary
from inbox.limits import MAX_DB_ID
from inbox.listing import selectors as page_selectors
from inbox.listing.selectors import ListFilters
from inbox.models import InboxItem, Run


@login_required
@require_GET
def item_list(request: HttpRequest) -> HttpResponse:
    filters = ListFilters.from_query(request.GET)
    counts = page_selectors.tab_counts(user=request.user, filters=filters)
    page = page_selectors.list_page(user=request.user, filters=filters, counts=counts)
    items = list(page.object_list)
    context = {
        "filters": filters,
        "counts": counts,
        "page": page,
        "items": items,
        "has_open": any(item.is_open for item in items),
        "options": page_selectors.filter_options(user=request.user, filters=filters),
        "tabs": [
            (tab, tab.title(), counts[tab], filters.querystring(tab=tab, page=1, sort=""))
            for tab in page_selectors.TABS
        ],
        "base_qs": filters.querystring(page=1),
        # The outcome of a bulk action, shown once after its redirect (see team_views.bulk_decide).
        "bulk_result": request.session.pop("bulk_result", None),
    }
    return render(request, "inbox/list.html", context)


@login_required
@require_GET
def item_rows(request: HttpRequest) -> HttpResponse:
    """``<tr>`` rows for the live list: ``?ids=1,2`` plus the list's filters."""
    try:
        ids = [int(part) for part in request.GET.get("ids", "").split(",") if part.strip()]
        if not all(0 < pk <= MAX_DB_ID for pk in ids):
            raise ValueError
    except ValueError:
        return HttpResponseBadRequest("ids: a comma-separated list of item ids", content_type="text/plain")
    filters = ListFilters.from_query(request.GET)
    items = page_selectors.rows_by_ids(user=request.user, filters=filters, ids=ids)
    return render(request, "inbox/_rows.html", {"items": items, "filters": filters})


def _item_or_404(request: HttpRequest, pk: int) -> InboxItem:
    """The item as its page shows it, if the user may see it (anything else is a 404, never a 403)."""
    item = page_selectors.item_for_page(user=request.user, pk=pk)
    if item is None:
        raise Http404("No such item.")
    return item


def _run_or_404(request: HttpRequest, pk: int) -> Run:
    run = page_selectors.run_for_page(user=request.user, pk=pk)
    if run is None:
        raise Http404("No such run.")
    return run


@login_required
@require_GET
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    item = _item_or_404(request, pk)
    return _item_page(request, item)


def _decision_words(item: InboxItem) -> str:
    if item.status == InboxItem.Status.CANCELLED:
        return "Cancelled"
    if item.is_denial:
        return "Denied"
    payload = item.response_payload
    if isinstance(payload, dict) and "editedArgs" in payload:
        return "Approved with edits"
    return "Approved" if isinstance(payload, dict) and payload.get("approved") is True else "Answered"


def _item_page(
    request: HttpRequest, item: InboxItem, *, error=None, post=None, status: int = 200, extra: dict | None = None
) -> HttpResponse:
    siblings = page_selectors.run_items(item.run)
    errors = forms.field_errors(getattr(error, "errors", []) or [])
    decided = sum(1 for sibling in siblings if sibling.is_decided)
    decisions = list(item.decisions.select_related("user"))
    context = {
        "item": item,
        "run": item.run,
        "siblings": siblings,
        "decided_count": decided,
        "ui": forms.decision_ui(item, post=post, errors=errors) if item.is_open else None,
        "error": error,
        "comment": post.get("comment", "") if post is not None else "",
        "decisions": decisions,
        "next_item": page_selectors.next_open_item(user=request.user, after=item) if not item.is_open else None,
        **page_selectors.item_team(user=request.user, item=item, decisions=decisions),
        **(extra or {}),
    }
    return render(request, "inbox/item.html", context, status=status)


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_or_404(request, pk)
    return _run_page(request, run)


def _run_page(
    request: HttpRequest, run: Run, *, error=None, post=None, status: int = 200, extra: dict | None = None
) -> HttpResponse:
    items = page_selectors.run_items(run)
    rows = [_run_row(item, post, request.user) for item in items]
    context = {
        "run": run,
        "rows": rows,
        # Open interrupts this user may decide here (not locked by someone else's claim).
        "choosable_count": sum(1 for row in rows if row["item"].is_open and not row["locked"]),
        "items": items,
        "error": error,
        "comment": post.get("comment", "") if post is not None else "",
        **_run_live_context(run, items),
        "comments": page_selectors.comments_of(run),
        **(extra or {}),
    }
    return render(request, "inbox/run.html", context, status=status)


def _run_row(item: InboxItem, post, user) -> dict[str, Any]:
    row: dict[str, Any] = {
        "item": item,
        "ui": None,
        "choice": post.get(f"decision-{item.pk}", "") if post else "",
        "locked": locked_by_claim(user, item),
    }
    if item.is_open:
        row["ui"] = forms.decision_ui(item)
        if row["ui"].mode == "boolean":
            # What each choice sends, for the live preview of the RunAgentInput.
            row["approve_json"] = json.dumps(forms.run_choice_payload(item, "approve")[1])
            row["deny_json"] = json.dumps(forms.run_choice_payload(item, "deny")[1])
    return row


def _run_live_context(run: Run, items: list[InboxItem]) -> dict[str, Any]:
    resume = _resume_of(run)
    decided = sum(1 for item in items if item.is_decided)
    preview = page_selectors.resume_preview(run=run, items=items) if resume is None else None
    resumed_run = resume.resumed_run if resume is not None and resume.resumed_run_id else None
    return {
        "resume": resume,
        "resumed_run": resumed_run,
        "unfiled_results": page_selectors.unfiled_results(resumed_run=resumed_run, items=items),
        "decided_count": decided,
        "open_count": sum(1 for item in items if item.is_open),
        "expired_count": sum(1 for item in items if item.status == InboxItem.Status.EXPIRED),
        "preview": preview,
        "preview_json": json.dumps(preview["input"], indent=2, ensure_ascii=False) if preview else "",
        "expiry_summary": run_expiry_summary(run),
    }


def _resume_of(run: Run):
    from inbox.models import Resume

    return Resume.objects.select_related("resumed_run").filter(run=run).first()


@login_required
@require_GET
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's live parts (resume state, item statuses, the resumed run's events) as a fragment."""
    run = _run_or_404(request, pk)
    items = page_selectors.run_items(run)
    return render(request, "inbox/_run_live.html", {"run": run, "items": items, **_run_live_context(run, items)})


@login_required
@require_GET
def thread_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A thread's timeline lives with the audit pages."""
    get_object_or_404(visible_threads(request.user), pk=pk)
    return redirect(f"/audit/threads/{pk}/")
