"""Audit pages: the audit log (with its exports), the tool-call trail, the thread timeline, stats, and
the user's notification preferences. Every read starts from the team rule (``inbox.selectors``):
what a user may not see is a 404, never a 403 that would confirm it exists."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from inbox import stats as inbox_stats
from inbox.audit import Actor, audit
from inbox.exports import EXPORTS, FORMATS, AuditFilterForm, export_response
from inbox.models import AuditEvent, Decision, InboxItem, NotificationPreference, Resume, Run, Thread
from inbox.selectors import visible_agents, visible_items

# --- audit log ----------------------------------------------------------------------------------


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


# --- tool-call trail ----------------------------------------------------------------------------


@dataclass
class DiffLine:
    path: str
    change: str  # same | changed | added | removed
    before: str = ""
    after: str = ""
    # For changed text: [(op, text)] with op in equal | delete | insert.
    segments: list[tuple[str, str]] = field(default_factory=list)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix or "(arguments)": value}


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _word_segments(before: str, after: str) -> list[tuple[str, str]]:
    a, b = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("equal", "".join(a[i1:i2])))
        else:
            if i2 > i1:
                segments.append(("delete", "".join(a[i1:i2])))
            if j2 > j1:
                segments.append(("insert", "".join(b[j1:j2])))
    return segments


def args_diff(proposed: Any, edited: Any) -> list[DiffLine]:
    """The edited arguments against the proposal, field by field (editedArgs is a full replacement)."""
    before, after = _flatten(proposed), _flatten(edited)
    lines = []
    # Sorted paths: PostgreSQL's jsonb does not keep the agent's key order, so sort for a stable page.
    for path in sorted(set(before) | set(after)):
        if path not in after:
            lines.append(DiffLine(path, "removed", before=_show(before[path])))
        elif path not in before:
            lines.append(DiffLine(path, "added", after=_show(after[path])))
        elif before[path] == after[path]:
            lines.append(DiffLine(path, "same", before=_show(before[path]), after=_show(after[path])))
        else:
            old, new = _show(before[path]), _show(after[path])
            lines.append(DiffLine(path, "changed", before=old, after=new, segments=_word_segments(old, new)))
    return lines


@dataclass
class Trail:
    item: InboxItem
    proposal: dict | None
    decisions: list[Decision]
    edited_args: Any
    diff: list[DiffLine]
    resume: Resume | None
    sent_entry: dict | None
    result: dict | None

    @property
    def proposal_json(self) -> str:
        return json.dumps((self.proposal or {}).get("args"), indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def edited_json(self) -> str:
        return json.dumps(self.edited_args, indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def sent_json(self) -> str:
        return json.dumps(self.sent_entry, indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def result_text(self) -> str:
        """The tool result's content, pretty-printed when it is JSON (it usually is)."""
        content = (self.result or {}).get("content")
        if isinstance(content, str):
            try:
                return json.dumps(json.loads(content), indent=2, ensure_ascii=False)
            except ValueError:
                return content
        return json.dumps(content, indent=2, ensure_ascii=False)

    @property
    def approved(self) -> bool | None:
        payload = self.item.response_payload
        if self.item.status != InboxItem.Status.RESOLVED:
            return None
        return not (isinstance(payload, dict) and payload.get("approved") is False)


def _resume_of(run: Run) -> Resume | None:
    try:
        return run.resume
    except Resume.DoesNotExist:
        return None


def tool_call_result(item: InboxItem, resume: Resume | None) -> dict | None:
    """The TOOL_CALL_RESULT for the item's tool call: stored on the item, else read from the resumed run."""
    if item.tool_result:
        return item.tool_result
    runs = Run.objects.filter(thread_id=item.thread_id, created_at__gte=item.created_at).exclude(pk=item.run_id)
    if resume is not None and resume.resumed_run_id:
        runs = runs.filter(pk=resume.resumed_run_id)
    elif resume is not None:
        runs = runs.filter(run_id=resume.next_run_id)
    for run in runs.order_by("created_at", "id"):
        for result in run.tool_results or []:
            if result.get("toolCallId") == item.tool_call_id:
                return {**result, "runId": run.run_id}
    return None


def build_trail(item: InboxItem) -> Trail:
    proposal = item.tool_call or item.run.tool_call(item.tool_call_id)
    payload = item.response_payload
    edited = payload.get("editedArgs") if isinstance(payload, dict) and "editedArgs" in payload else None
    resume = _resume_of(item.run)
    sent = None
    if resume is not None:
        sent = next((entry for entry in (resume.input or {}).get("resume", [])
                     if entry.get("interruptId") == item.interrupt_id), None)  # fmt: skip
    return Trail(
        item=item,
        proposal=proposal,
        decisions=list(item.decisions.select_related("user")),
        edited_args=edited,
        diff=args_diff((proposal or {}).get("args"), edited) if edited is not None else [],
        resume=resume,
        sent_entry=sent,
        result=tool_call_result(item, resume),
    )


@login_required
def tool_call_trail(request: HttpRequest, tool_call_id: str) -> HttpResponse:
    items = (
        visible_items(request.user)
        .filter(tool_call_id=tool_call_id)
        .select_related("agent", "thread", "run", "decided_by")
        .order_by("created_at", "id")
    )
    if request.GET.get("item", "").isdigit():
        items = items.filter(pk=int(request.GET["item"]))
    trails = [build_trail(item) for item in items]
    if not trails:
        raise Http404("No such tool call")
    return render(request, "audit/tool_call.html", {"tool_call_id": tool_call_id, "trails": trails})


# --- thread timeline ----------------------------------------------------------------------------


@dataclass
class Entry:
    at: datetime
    kind: str  # run | interrupt | decision | resume | attempt | result | expired | comment
    title: str
    detail: str = ""
    who: str = ""
    url: str = ""
    tone: str = ""  # ok | bad | warn | ""
    extra: dict = field(default_factory=dict)


KIND_ORDER = {"run": 0, "result": 1, "interrupt": 2, "comment": 3, "decision": 4, "expired": 5, "resume": 6,
              "attempt": 7}  # fmt: skip
OUTCOME_TONE = {"success": "ok", "interrupt": "warn", "error": "bad", "cancelled": "bad"}


def thread_timeline(thread: Thread) -> list[Entry]:
    entries: list[Entry] = []
    runs = list(thread.runs.order_by("created_at", "id"))
    for run in runs:
        label = {"ingest": "posted by the agent", "resume": "resumed by the inbox", "started": "started from the inbox"}
        entries.append(Entry(run.created_at, "run", f"Run {run.run_id}", who=label.get(run.source, run.source),
                             detail=run.error_message, tone=OUTCOME_TONE.get(run.outcome, ""),
                             extra={"outcome": run.get_outcome_display(), "run": run}))  # fmt: skip
        for result in run.tool_results or []:
            entries.append(Entry(run.created_at, "result", f"Tool result for {result.get('toolCallId', '')}",
                                 detail=_show(result.get("content")), tone="ok",
                                 extra={"toolCallId": result.get("toolCallId", "")}))  # fmt: skip
    items = list(thread.items.select_related("run").order_by("created_at", "position"))
    for item in items:
        entries.append(Entry(item.created_at, "interrupt", f"Interrupt {item.interrupt_id}", detail=item.message,
                             who=item.reason, url=item.get_absolute_url(), tone="warn",
                             extra={"item": item, "tool": item.tool_name}))  # fmt: skip
        if item.status == InboxItem.Status.EXPIRED and item.decided_at:
            entries.append(Entry(item.decided_at, "expired", f"Interrupt {item.interrupt_id} expired",
                                 detail=item.status_note, tone="bad"))  # fmt: skip
    decisions = Decision.objects.filter(item__thread=thread).select_related("user", "item").order_by("created_at")
    for decision in decisions:
        denial = isinstance(decision.payload, dict) and decision.payload.get("approved") is False
        if decision.status == Decision.Status.CANCELLED:
            verb, tone = "cancelled", "bad"
        elif denial:
            verb, tone = "denied", "bad"
        else:
            verb, tone = "approved" if decision.item.reason in ("tool_call", "confirmation") else "answered", "ok"
        edited = isinstance(decision.payload, dict) and "editedArgs" in decision.payload
        entries.append(Entry(decision.created_at, "decision",
                             f"{decision.user.get_username()} {verb} {decision.item.interrupt_id}"
                             + (" with edits" if edited else ""),
                             detail=decision.comment, who=decision.user.get_username(), tone=tone,
                             extra={"payload": _show(decision.payload) if decision.payload is not None else "",
                                    "final": decision.final}))  # fmt: skip
    for resume in Resume.objects.filter(thread=thread).select_related("run"):
        tone = {"delivered": "ok", "failed": "bad", "expired": "bad"}.get(resume.state, "warn")
        entries.append(Entry(resume.created_at, "resume", f"Resume {resume.next_run_id} of run {resume.run.run_id}",
                             detail=resume.last_error, who=resume.get_state_display(), tone=tone,
                             extra={"attempts": resume.attempts}))  # fmt: skip
    attempts = AuditEvent.objects.filter(thread=thread, object_type="resume").exclude(verb="resume.created")
    for event in attempts.order_by("created_at", "id"):
        bad = any(word in event.verb for word in ("fail", "error", "expired"))
        detail = event.data.get("error") or event.data.get("detail") or "" if isinstance(event.data, dict) else ""
        entries.append(Entry(event.created_at, "attempt", event.verb.replace("resume.", "Resume ").replace("_", " "),
                             detail=str(detail), who=event.actor_label, tone="bad" if bad else ""))  # fmt: skip
    entries.sort(key=lambda entry: (entry.at, KIND_ORDER.get(entry.kind, 9)))
    return entries


@login_required
def thread_detail(request: HttpRequest, pk: int) -> HttpResponse:
    threads = Thread.objects.select_related("agent").filter(agent__in=visible_agents(request.user))
    thread = get_object_or_404(threads, pk=pk)
    return render(request, "audit/thread.html", {"thread": thread, "entries": thread_timeline(thread)})


# --- stats --------------------------------------------------------------------------------------


@login_required
def stats(request: HttpRequest) -> HttpResponse:
    days = request.GET.get("days", "30")
    days_int = int(days) if days in ("7", "30", "90") else 30
    report = inbox_stats.build_report(user=request.user, days=days_int)
    return render(request, "audit/stats.html", {"report": report, "days": days_int})


# --- notification preferences -------------------------------------------------------------------


class PreferenceForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = ["email_mode"]
        widgets = {"email_mode": forms.RadioSelect}
        labels = {"email_mode": "Email about new items"}


@login_required
def notification_settings(request: HttpRequest) -> HttpResponse:
    prefs, _ = NotificationPreference.objects.get_or_create(user=request.user)
    previous = prefs.email_mode  # the form writes the submitted value onto prefs while validating
    form = PreferenceForm(request.POST or None, instance=prefs)
    if request.method == "POST":
        if form.is_valid():
            mode = form.cleaned_data["email_mode"]
            if mode != previous:
                with transaction.atomic():
                    prefs.email_mode = mode
                    prefs.save(update_fields=["email_mode"])
                    audit(actor=Actor.for_user(request.user), verb="preferences.changed", obj=prefs,
                          data={"email_mode": {"from": previous, "to": mode}})  # fmt: skip
            messages.success(request, "Notification preferences saved.")
            return redirect("inbox:notification_settings")
        return render(request, "audit/notifications.html", {"form": form, "prefs": prefs}, status=400)
    teams = request.user.groups.order_by("name")
    return render(request, "audit/notifications.html", {"form": form, "prefs": prefs, "teams": teams})
