"""Audit pages: the audit log (with its exports), the tool-call trail, the thread timeline, stats, and
the user's notification preferences. Every read starts from the team rule (``inbox.selectors``):
what a user may not see is a 404, never a 403 that would confirm it exists."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from inbox.access import visible_agents, visible_items
from inbox.audit import stats as inbox_stats
from inbox.audit.exports import EXPORTS, FORMATS, AuditFilterForm, export_response
from inbox.audit.timeline import thread_timeline
from inbox.audit.trail import build_trail
from inbox.models import AuditEvent, Thread


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
        page = Paginator(events, 50).get_page(request.GET.get("page"))
        for event in page.object_list:
            event.data_json = json.dumps(event.data, ensure_ascii=False, sort_keys=True) if event.data else ""
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "audit/log.html",
        {"form": form, "page": page, "query": query.urlencode(), "verbs": _known_verbs()},
        status=200 if page is not None else 400,
    )


def _known_verbs() -> list[str]:
    return list(AuditEvent.objects.order_by("verb").values_list("verb", flat=True).distinct()[:200])


@login_required
@require_GET
def audit_export(request: HttpRequest, kind: str, fmt: str) -> HttpResponse:
    if kind not in EXPORTS:
        return JsonResponse({"error": "invalid", "field": "kind", "detail": "Export decisions or events."}, status=404)
    if fmt not in FORMATS:
        return JsonResponse({"error": "invalid", "field": "format", "detail": "Format is csv or json."}, status=404)
    form = AuditFilterForm(request.GET, user=request.user)
    if not form.is_valid():
        field_name, message = form.first_error()
        return JsonResponse({"error": "invalid_filter", "field": field_name, "detail": message}, status=400)
    return export_response(request=request, form=form, kind=kind, fmt=fmt)


@login_required
def tool_call_trail(request: HttpRequest, tool_call_id: str) -> HttpResponse:
    items = (
        visible_items(request.user)
        .filter(tool_call_id=tool_call_id)
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
    threads = Thread.objects.select_related("agent").filter(agent__in=visible_agents(request.user))
    thread = get_object_or_404(threads, pk=pk)
    return render(request, "audit/thread.html", {"thread": thread, "entries": thread_timeline(thread)})


@login_required
def stats(request: HttpRequest) -> HttpResponse:
    days = request.GET.get("days", "30")
    days_int = int(days) if days in ("7", "30", "90") else 30
    report = inbox_stats.build_report(user=request.user, days=days_int)
    return render(request, "audit/stats.html", {"report": report, "days": days_int})
