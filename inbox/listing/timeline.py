"""The thread timeline: runs, interrupts, decisions, comments, expiries and resumes of a thread in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from inbox.core.json_view import show
from inbox.models import AuditEvent, Decision, InboxItem, Resume, Thread
from inbox.resumes.states import DELIVERED, EXPIRED, FAILED, delivery_of_resume


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


KIND_ORDER = {
    "run": 0,
    "result": 1,
    "interrupt": 2,
    "comment": 3,
    "decision": 4,
    "expired": 5,
    "resume": 6,
    "attempt": 7,
}


OUTCOME_TONE = {"success": "ok", "interrupt": "warn", "error": "bad", "cancelled": "bad"}


def thread_timeline(thread: Thread) -> list[Entry]:
    entries: list[Entry] = []
    runs = list(thread.runs.order_by("created_at", "id"))
    for run in runs:
        label = {"ingest": "posted by the agent", "resume": "resumed by the inbox", "started": "started from the inbox"}
        entries.append(
            Entry(
                run.created_at,
                "run",
                f"Run {run.run_id}",
                who=label.get(run.source, run.source),
                detail=run.error_message,
                tone=OUTCOME_TONE.get(run.outcome, ""),
                extra={"outcome": run.get_outcome_display(), "run": run},
            )
        )
        for result in run.tool_results or []:
            entries.append(
                Entry(
                    run.created_at,
                    "result",
                    f"Tool result for {result.get('toolCallId', '')}",
                    detail=show(result.get("content")),
                    tone="ok",
                    extra={"toolCallId": result.get("toolCallId", "")},
                )
            )
    items = list(thread.items.select_related("run").order_by("created_at", "position"))
    for item in items:
        entries.append(
            Entry(
                item.created_at,
                "interrupt",
                f"Interrupt {item.interrupt_id}",
                detail=item.message,
                who=item.reason,
                url=item.get_absolute_url(),
                tone="warn",
                extra={"item": item, "tool": item.tool_name},
            )
        )
        if item.status == InboxItem.Status.EXPIRED and item.decided_at:
            entries.append(
                Entry(
                    item.decided_at,
                    "expired",
                    f"Interrupt {item.interrupt_id} {'superseded' if item.is_superseded else 'expired'}",
                    detail=item.status_note,
                    tone="bad",
                )
            )
    decisions = Decision.objects.filter(item__thread=thread).select_related("user", "item").order_by("created_at")
    for decision in decisions:
        # The decision's stored outcome, as its item's schema judged it when it was made.
        if decision.status == Decision.Status.CANCELLED:
            verb, tone = "cancelled", "bad"
        elif decision.is_denial:
            verb, tone = "denied", "bad"
        elif decision.outcome == InboxItem.Outcome.ANSWERED:
            verb, tone = "answered", "ok"
        else:
            verb, tone = "approved", "ok"
        edited = decision.is_edit
        entries.append(
            Entry(
                decision.created_at,
                "decision",
                f"{decision.user.get_username()} {verb} {decision.item.interrupt_id}"
                + (" with edits" if edited else "")
                + (" (undone before it was sent)" if decision.withdrawn_at else ""),
                detail=decision.comment,
                who=decision.user.get_username(),
                tone=tone,
                extra={
                    "payload": show(decision.payload) if decision.payload is not None else "",
                    "final": decision.final,
                },
            )
        )
    resumes = list(Resume.objects.filter(thread=thread).select_related("run"))
    for resume in resumes:
        shown = delivery_of_resume(resume)
        tone = {DELIVERED: "ok", FAILED: "bad", EXPIRED: "bad"}.get(shown.state, "warn")
        entries.append(
            Entry(
                resume.created_at,
                "resume",
                f"Resume {resume.next_run_id} of run {resume.run.run_id}",
                detail=shown.sentence,
                tone=tone,
                extra={"attempts": resume.attempts, "delivery": shown},
            )
        )
    # By the resumes' ids (the object index): the log keeps no index on its thread column, which every event
    # written (an expiry sweep writes many at once) would pay for.
    attempts = AuditEvent.objects.filter(
        object_type="resume", object_id__in=[str(resume.pk) for resume in resumes]
    ).exclude(verb="resume.created")
    for event in attempts.order_by("created_at", "id"):
        bad = any(word in event.verb for word in ("fail", "error", "expired"))
        detail = event.data.get("error") or event.data.get("detail") or "" if isinstance(event.data, dict) else ""
        entries.append(
            Entry(
                event.created_at,
                "attempt",
                event.verb.replace("resume.", "Resume ").replace("_", " "),
                detail=str(detail),
                who=event.actor_label,
                tone="bad" if bad else "",
            )
        )
    entries.sort(key=lambda entry: (entry.at, KIND_ORDER.get(entry.kind, 9)))
    return entries
