"""Audit pages: the audit log (with its exports), the tool-call trail, the thread timeline, stats, and
the user's notification preferences. Every read starts from the team rule (``inbox.access``):
what a user may not see is a 404, never a 403 that would confirm it exists."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from inbox.access import visible_items, visible_threads
from inbox.audit import review as review_quality
from inbox.audit import stats as inbox_stats
from inbox.audit.details import audit_details
from inbox.audit.exports import EXPORTS, FORMATS, AuditFilterForm, csv_chunks, export_response, signed_chunks
from inbox.audit.trail import build_trail
from inbox.core.errors import ApplicationError
from inbox.core.paging import BoundedPaginator, distinct_values
from inbox.limits import AUDIT_COUNT_LIMIT
from inbox.listing.timeline import thread_timeline
from inbox.models import AuditEvent, InboxItem


@login_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET or None, user=request.user)
    page = None
    if not request.GET or form.is_valid():
        if not request.GET:
            form = AuditFilterForm({}, user=request.user)
            form.is_valid()
        events = form.events().select_related("agent", "thread").order_by("-created_at", "-id")
        page = BoundedPaginator(events, 50, bound=AUDIT_COUNT_LIMIT).get_page(request.GET.get("page"))
        for event in page.object_list:
            event.data_json = json.dumps(event.data, ensure_ascii=False, sort_keys=True) if event.data else ""
            event.details = audit_details(event.data)
        _with_item_outcomes(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "audit/log.html",
        {"form": form, "page": page, "query": query.urlencode(), "verbs": _known_verbs()},
        status=200 if page is not None else 400,
    )


def _with_item_outcomes(events: Iterable[Any]) -> None:
    """An ``item.resolved`` event recorded before decisions carried their outcome shows its item's stored one
    (``event_outcome``): one query for the page, never a payload judged again."""
    ids = {
        int(event.object_id)
        for event in events
        if event.verb == "item.resolved"
        and not (isinstance(event.data, dict) and event.data.get("outcome"))
        and event.object_id.isdigit()
    }
    outcomes = dict(InboxItem.objects.filter(pk__in=ids).values_list("pk", "outcome")) if ids else {}
    for event in events:
        if event.verb == "item.resolved" and event.object_id.isdigit():
            event.item_outcome = outcomes.get(int(event.object_id), "")


def _known_verbs() -> list[str]:
    return distinct_values(AuditEvent.objects.all(), "verb", limit=200)  # skips through the verb index


@login_required
@require_GET
def audit_export(request: HttpRequest, kind: str, fmt: str) -> HttpResponseBase:
    if kind not in EXPORTS:
        return ApplicationError(404, "invalid", "Export decisions or events.", field="kind").json_response()
    if fmt not in FORMATS:
        return ApplicationError(404, "invalid", "Format is csv or json.", field="format").json_response()
    form = AuditFilterForm(request.GET, user=request.user)
    if not form.is_valid():
        field_name, message = form.first_error()
        refusal = ApplicationError(400, "invalid_filter", message, errors=[{"path": field_name, "message": message}])
        return refusal.json_response()
    return export_response(request=request, form=form, kind=kind, fmt=fmt)


@login_required
def tool_call_trail(request: HttpRequest, tool_call_id: str) -> HttpResponse:
    items = (
        visible_items(request.user)
        .filter(search_text__tool_call_id=tool_call_id)  # its index is there, not on the items
        .select_related("agent", "thread", "run", "decided_by")
        .order_by("created_at", "id")
    )
    if request.GET.get("item", "").isdigit() and len(request.GET["item"]) <= 18:
        items = items.filter(pk=int(request.GET["item"]))
    trails = [build_trail(item) for item in items]
    if not trails:
        raise Http404("No such tool call")
    return render(request, "audit/tool_call.html", {"tool_call_id": tool_call_id, "trails": trails})


@login_required
def thread_detail(request: HttpRequest, pk: int) -> HttpResponse:
    thread = get_object_or_404(visible_threads(request.user).select_related("agent"), pk=pk)
    return render(request, "audit/thread.html", {"thread": thread, "entries": thread_timeline(thread)})


@login_required
def stats(request: HttpRequest) -> HttpResponse:
    days = request.GET.get("days", "30")
    days_int = int(days) if days in ("7", "30", "90") else 30
    report = inbox_stats.build_report(user=request.user, days=days_int)
    return render(request, "audit/stats.html", {"report": report, "days": days_int})


@login_required
@require_GET
def review(request: HttpRequest) -> HttpResponse:
    """Review quality (``inbox.audit.review``): per approver and per agent, over the filters' period."""
    form = AuditFilterForm(request.GET, user=request.user)
    if not form.is_valid():
        return render(request, "audit/review.html", {"form": form, "report": None}, status=400)
    report = review_quality.review_for(form)
    query = request.GET.copy()
    return render(
        request,
        "audit/review.html",
        {
            "form": form,
            "report": report,
            "approver_rows": review_quality.chart_rows(report.approvers),
            "agent_rows": review_quality.chart_rows(report.agents),
            "legend": [(review_quality.KIND_CLASSES[k], review_quality.KIND_WORDS[k]) for k in review_quality.KINDS],
            "query": query.urlencode(),
        },
    )


@login_required
@require_GET
def review_export(request: HttpRequest) -> HttpResponseBase:
    """The review-quality figures as CSV, signed like the log's exports (``tools/verify_audit_export.py``)."""
    form = AuditFilterForm(request.GET, user=request.user)
    if not form.is_valid():
        field_name, message = form.first_error()
        return ApplicationError.invalid(field_name, message, code="invalid_filter").json_response()
    rows = review_quality.csv_rows(review_quality.review_for(form))
    # One row per approver and agent: small enough to send whole (no streaming, so no sync iterator under ASGI).
    content = "".join(signed_chunks("csv", csv_chunks(review_quality.CSV_COLUMNS, iter([rows]))))
    response = HttpResponse(content, content_type=FORMATS["csv"])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="inbox-review-quality-{stamp}.csv"'
    response["Cache-Control"] = "no-store"
    return response
