"""Batched resumes (the outbox): building the RunAgentInput, dispatching it, reading the resumed run.

Life of a ``Resume`` row: ``pending → sending → delivered | failed | expired``.

- ``resume_create_if_complete`` runs in the transaction of the decision that closes the last open item
  of a run. It fixes the whole input now (same threadId, a fresh runId reused on every retry, resume[]
  for every interrupt in order), so whatever happens later, one decision set is sent as one resume.
- ``resume_dispatch`` (Celery) claims the row with a conditional update, re-checks expiry, POSTs the
  input, and reads the reply: TOOL_CALL_RESULTs complete the items' audit trail, an interrupt outcome is
  ingested like any run (chained interrupts), RUN_ERROR fails the resume, transport failures retry with
  capped, jittered exponential backoff.
- ``resume_requeue_stuck`` (beat) puts back rows a dead worker left in ``sending`` and re-queues
  ``pending`` rows whose task message was lost.
- ``resume_retry`` lets an operator send a ``failed`` resume again, with the same runId.

Every transition out of ``sending`` names the claim it ends (attempt number and claim time), so a
worker that was presumed dead and wakes up late cannot overwrite a newer attempt's outcome.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from datetime import datetime, timedelta
from typing import Any

from ag_ui.core import AssistantMessage, FunctionCall, Message, ResumeEntry, RunAgentInput, ToolCall, ToolMessage
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from pydantic import TypeAdapter

from inbox.audit.record import Actor, audit
from inbox.conformance.recorder import record_resume
from inbox.core.errors import ApplicationError
from inbox.ingest.parser import IngestError, RunRecord, read_run
from inbox.live import push as live
from inbox.models import InboxItem, Resume, Run

log = logging.getLogger(__name__)


SYSTEM = Actor.system("resume")


class ResumeRetryRefused(ApplicationError):
    """409 ``not_failed``: only a failed resume can be sent again (``state`` says what it is)."""


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex}"


def build_resume_input(*, run: Run, items: list[InboxItem], next_run_id: str) -> dict[str, Any]:
    """The RunAgentInput answering every interrupt of ``run`` (``items`` in position order), camelCase
    exactly as the SDK serializes it. Replay-style continuation: ``messages`` as ``resume_messages`` says,
    ``state`` from the interrupted run's STATE_SNAPSHOT ({} without one); tools, context and
    forwardedProps are always present."""
    entries = []
    for item in items:
        if item.status == InboxItem.Status.RESOLVED:
            entries.append(
                ResumeEntry(interrupt_id=item.interrupt_id, status="resolved", payload=item.response_payload)
            )
        elif item.status == InboxItem.Status.CANCELLED:
            entries.append(ResumeEntry(interrupt_id=item.interrupt_id, status="cancelled"))
        else:
            raise ValueError(f"item {item.pk} is {item.status}: only resolved or cancelled items can be resumed")
    run_input = RunAgentInput.model_validate(
        {
            "threadId": run.thread.thread_id,
            "runId": next_run_id,
            "state": run.state_snapshot if run.state_snapshot is not None else {},
            "messages": [],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )
    run_input.messages = resume_messages(run)
    run_input.resume = entries
    return run_input.model_dump(mode="json", by_alias=True)


def resume_messages(run: Run) -> list[Message]:
    """The conversation a resume carries, as AG-UI SDK messages.

    - The interrupted run sent a ``MESSAGES_SNAPSHOT``: that snapshot, as sent (the spec's rule: the agent
      emits what it needs to resume before RUN_FINISHED).
    - It did not: rebuilt from what the inbox saw, in this order:
      1. the messages of the input the run answered (``Run.input``: what the inbox sent when it started or
         resumed the run, or the ``RUN_STARTED.input`` the agent echoed);
      2. a ``tool`` message for each TOOL_CALL_RESULT of the run that answers a call made before it;
      3. one ``assistant`` message (id ``assistant-<runId>``) whose ``toolCalls`` are the run's tool-call
         proposals (id, name, and arguments exactly as streamed), re-emitted calls left out;
      4. a ``tool`` message for each TOOL_CALL_RESULT of the run that answers one of those proposals.
      Nothing known gives ``[]``.
    """
    if run.messages_snapshot:
        return _message_adapter.validate_python(run.messages_snapshot)
    messages: list[Message] = _message_adapter.validate_python((run.input or {}).get("messages") or [])
    proposals = [call for call in run.tool_calls or [] if call.get("id") and not call.get("reemitted")]
    proposed = {call["id"] for call in proposals}
    results = [result for result in run.tool_results or [] if result.get("toolCallId")]
    messages += [_tool_message(result) for result in results if result["toolCallId"] not in proposed]
    if proposals:
        messages.append(
            AssistantMessage(
                id=f"assistant-{run.run_id}",
                role="assistant",
                tool_calls=[
                    ToolCall(
                        id=call["id"],
                        type="function",
                        function=FunctionCall(name=call.get("name") or "", arguments=call.get("argsText") or ""),
                    )
                    for call in proposals
                ],
            )
        )
    messages += [_tool_message(result) for result in results if result["toolCallId"] in proposed]
    return messages


def _tool_message(result: dict) -> ToolMessage:
    content = result.get("content")
    return ToolMessage(
        id=result.get("messageId") or f"tool-{result['toolCallId']}",
        role="tool",
        tool_call_id=result["toolCallId"],
        content=content if isinstance(content, str) else json.dumps(content),
    )


_message_adapter: TypeAdapter = TypeAdapter(list[Message])


def _push_state(resume: Resume) -> None:
    live.publish_on_commit(
        live.groups_for(agent_id=resume.agent_id, run_id=resume.run_id),
        "resume.state",
        resume.live_state(),
    )


def _queue_dispatch(resume_id: int, *, countdown: float | None = None) -> None:
    from inbox.resumes.tasks import dispatch_resume

    def send() -> None:
        try:
            dispatch_resume.apply_async(args=[resume_id], countdown=countdown)
        except Exception:  # the broker is down: the beat sweep re-queues pending rows
            log.exception("could not queue dispatch of resume %s; beat will pick it up", resume_id)

    transaction.on_commit(send)


def resume_create_if_complete(*, run: Run, user: Any = None) -> Resume | None:
    """Create the run's Resume when every item is decided. Call inside the decision's transaction with
    the run's rows locked. Returns None while an item is open, or when one expired (that run can no
    longer be resumed); returns the existing row if there is one."""
    items = list(run.items.order_by("position", "pk"))
    if not items or any(item.status == InboxItem.Status.OPEN for item in items):
        return None
    if any(item.status == InboxItem.Status.EXPIRED for item in items):
        return None
    existing = Resume.objects.filter(run=run).first()
    if existing is not None:
        return existing
    next_run_id = new_run_id()
    resume = Resume.objects.create(
        run=run,
        thread=run.thread,
        agent=run.agent,
        next_run_id=next_run_id,
        input=build_resume_input(run=run, items=items, next_run_id=next_run_id),
        state=Resume.State.PENDING,
        next_attempt_at=timezone.now(),
    )
    audit(
        actor=Actor.for_user(user) if user is not None else SYSTEM,
        verb="resume.created",
        obj=resume,
        data={
            "runId": run.run_id,
            "nextRunId": next_run_id,
            "resume": [
                {"interruptId": entry["interruptId"], "status": entry["status"]} for entry in resume.input["resume"]
            ],
        },
    )
    _push_state(resume)
    _queue_dispatch(resume.pk)
    return resume


def backoff_seconds(attempts: int) -> float:
    """Capped exponential backoff with equal jitter: between half and all of min(cap, base·2^(n-1))."""
    ceiling = min(settings.INBOX_RESUME_BACKOFF_CAP, settings.INBOX_RESUME_BACKOFF_BASE * 2 ** max(attempts - 1, 0))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _claim(resume_id: int, now: datetime) -> Resume | None:
    claimed = (
        Resume.objects.filter(pk=resume_id, state=Resume.State.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(state=Resume.State.SENDING, claimed_at=now, attempts=F("attempts") + 1, updated_at=now)
    )
    if claimed != 1:
        return None
    return Resume.objects.select_related("agent", "thread", "run").get(pk=resume_id)


def _mine(resume: Resume):
    """The row, locked, if this worker's claim still holds."""
    return (
        Resume.objects.select_for_update()
        .filter(pk=resume.pk, state=Resume.State.SENDING, attempts=resume.attempts, claimed_at=resume.claimed_at)
        .first()
    )


def resume_dispatch(*, resume_id: int) -> str:
    """Claim, check, send, read. Safe to run twice: only the worker whose conditional update moved the
    row from pending to sending does anything."""
    from agents.client import AgentCallError, run_agent

    now = timezone.now()
    resume = _claim(resume_id, now)
    if resume is None:
        return "not claimed"
    stale = [
        item for item in resume.run.items.order_by("position") if item.expires_at <= now or item.status == "expired"
    ]
    if stale:
        note = ", ".join(item.interrupt_id for item in stale)
        _finish_expired(resume, f"not sent: interrupt(s) {note} expired before the resume could be sent")
        return "expired"
    log.info("sending resume %s (attempt %s) to %s", resume.pk, resume.attempts, resume.agent.endpoint_url)
    try:
        raw_events = run_agent(agent=resume.agent, run_input=resume.input)
    except AgentCallError as error:
        if error.retryable:
            return _schedule_retry(resume, error.message)
        _finish_failed(resume, error.message)
        return "failed"
    try:
        record = read_run(raw_events, "events", allow_error=True)
    except IngestError as error:
        _finish_failed(resume, f"The agent's reply breaks the AG-UI contract: {error.message}")
        return "failed"
    return _finish_with_reply(resume, record)


def _finish_expired(resume: Resume, note: str) -> None:
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return
        row.state, row.last_error, row.next_attempt_at = Resume.State.EXPIRED, note, None
        row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
        audit(actor=SYSTEM, verb="resume.expired", obj=row, data={"note": note})
        _push_state(row)


def _finish_failed(resume: Resume, message: str, *, resumed_run: Run | None = None) -> None:
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return
        row.state, row.last_error, row.next_attempt_at = Resume.State.FAILED, message, None
        fields = ["state", "last_error", "next_attempt_at", "updated_at"]
        if resumed_run is not None:
            row.resumed_run = resumed_run
            fields.append("resumed_run")
        row.save(update_fields=fields)
        audit(actor=SYSTEM, verb="resume.failed", obj=row, data={"error": message, "attempts": row.attempts})
        _push_state(row)


def _schedule_retry(resume: Resume, message: str) -> str:
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return "superseded"
        if row.attempts >= settings.INBOX_RESUME_MAX_ATTEMPTS:
            row.state, row.last_error, row.next_attempt_at = Resume.State.FAILED, message, None
            row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
            audit(
                actor=SYSTEM,
                verb="resume.failed",
                obj=row,
                data={"error": message, "attempts": row.attempts, "gaveUp": True},
            )
            _push_state(row)
            return "failed"
        delay = backoff_seconds(row.attempts)
        row.state, row.last_error = Resume.State.PENDING, message
        row.next_attempt_at = timezone.now() + timedelta(seconds=delay)
        row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
        audit(
            actor=SYSTEM,
            verb="resume.retry_scheduled",
            obj=row,
            data={"error": message, "attempts": row.attempts, "delaySeconds": round(delay, 3)},
        )
        _push_state(row)
        _queue_dispatch(row.pk, countdown=delay)
    return "retry scheduled"


def _mark_reemitted(record: RunRecord, interrupted: Run) -> None:
    """ag-ui-langgraph re-emits TOOL_CALL_START/ARGS/END with the original arguments in the resumed run.
    They are not new proposals: flag them, so nothing reads them as what was executed."""
    original = {call.get("id") for call in interrupted.tool_calls}
    for call in record.tool_calls:
        if call.get("id") in original:
            call["reemitted"] = True


def _finish_with_reply(resume: Resume, record: RunRecord) -> str:
    from inbox.ingest.services import run_ingest

    if record.thread_id and record.thread_id != resume.thread.thread_id:
        _finish_failed(resume, f"The agent answered on thread {record.thread_id!r}, not {resume.thread.thread_id!r}.")
        return "failed"
    # A bare RUN_ERROR names no thread or run: it answers the input we sent.
    record.thread_id = record.thread_id or resume.thread.thread_id
    record.run_id = record.run_id or resume.next_run_id
    _mark_reemitted(record, resume.run)
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return "superseded"
        # A failed earlier attempt may have stored a RUN_ERROR run under the same runId: this reply replaces it.
        Run.objects.filter(
            thread=row.thread, run_id=record.run_id, source=Run.Source.RESUME, outcome=Run.Outcome.ERROR
        ).delete()
        try:
            result = run_ingest(
                agent=row.agent, record=record, source=Run.Source.RESUME, actor=SYSTEM, run_input=row.input
            )
        except IngestError as error:
            row.state, row.last_error, row.next_attempt_at = (
                Resume.State.FAILED,
                f"The resumed run could not be stored: {error.message}",
                None,
            )
            row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
            audit(actor=SYSTEM, verb="resume.failed", obj=row, data={"error": row.last_error})
            _push_state(row)
            return "failed"
        resumed = result.run
        items = _record_tool_results(interrupted=row.run, resumed=resumed, record=record)
        record_resume(resume=row, resumed=resumed, record=record, items=items)
        now = timezone.now()
        row.resumed_run = resumed
        row.next_attempt_at = None
        if record.outcome == Run.Outcome.ERROR:
            row.state, row.last_error = Resume.State.FAILED, record.error_message or "RUN_ERROR without a message"
            verb, data = "resume.failed", {"error": row.last_error, "runError": True}
        else:
            row.state, row.last_error, row.delivered_at = Resume.State.DELIVERED, "", now
            verb, data = "resume.delivered", {"resumedRunId": resumed.run_id, "outcome": resumed.outcome}
        row.save(update_fields=["state", "last_error", "next_attempt_at", "delivered_at", "resumed_run", "updated_at"])
        audit(actor=SYSTEM, verb=verb, obj=row, data={**data, "attempts": row.attempts})
        _push_state(row)
    return row.state


def _record_tool_results(*, interrupted: Run, resumed: Run, record: RunRecord) -> list[InboxItem]:
    """TOOL_CALL_RESULT closes the audit trail of the item it answers: proposal (interrupted run) → decision
    and edits → result (resumed run). An item is answered by a result for the call it asks about
    (``linked_call_id``: the call its metadata names, e.g. ADK's original call) or, failing that, for its
    own ``toolCallId``."""
    by_call = {result["toolCallId"]: result for result in record.tool_results}
    now = timezone.now()
    items = list(interrupted.items.order_by("position", "pk"))
    for item in items:
        call_id = next((cid for cid in (item.linked_call_id, item.tool_call_id) if cid and cid in by_call), "")
        if not call_id:
            continue
        result = by_call[call_id]
        item.tool_result = {
            "content": result["content"],
            "messageId": result["messageId"],
            "runId": resumed.run_id,
            "toolCallId": call_id,
        }
        item.tool_result_at = now
        item.save(update_fields=["tool_result", "tool_result_at"])
        audit(
            actor=SYSTEM,
            verb="item.tool_result",
            obj=item,
            data={"toolCallId": call_id, "runId": resumed.run_id},
        )
        live.publish_on_commit(
            live.groups_for(agent_id=item.agent_id, item_id=item.pk, run_id=interrupted.pk),
            "item.tool_result",
            {"item": item.pk, "run": interrupted.pk, "toolCallId": call_id, "resumedRun": resumed.pk},
        )
    return items


def resume_requeue_stuck() -> int:
    """Beat: put back what a dead worker left in ``sending``, and re-queue ``pending`` rows whose task
    message never arrived. Returns how many dispatches were queued."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.INBOX_RESUME_STUCK_SECONDS)
    queued = 0
    for pk, attempts, claimed_at in Resume.objects.filter(
        state=Resume.State.SENDING, claimed_at__lt=cutoff
    ).values_list("pk", "attempts", "claimed_at"):
        with transaction.atomic():
            row = (
                Resume.objects.select_for_update()
                .filter(pk=pk, state=Resume.State.SENDING, attempts=attempts, claimed_at=claimed_at)
                .first()
            )
            if row is None:
                continue
            note = f"attempt {attempts} was claimed at {claimed_at.isoformat()} and never finished (worker lost)"
            if attempts >= settings.INBOX_RESUME_MAX_ATTEMPTS:
                row.state, row.last_error, row.next_attempt_at = Resume.State.FAILED, note, None
                row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
                audit(actor=SYSTEM, verb="resume.failed", obj=row, data={"error": note, "attempts": attempts})
            else:
                row.state, row.last_error, row.next_attempt_at = Resume.State.PENDING, note, now
                row.save(update_fields=["state", "last_error", "next_attempt_at", "updated_at"])
                audit(actor=SYSTEM, verb="resume.requeued", obj=row, data={"note": note, "attempts": attempts})
                _queue_dispatch(row.pk)
                queued += 1
            _push_state(row)
    # A pending row whose dispatch should have run a while ago lost its task message (broker restart,
    # a commit hook that could not reach the broker): queue it again. A duplicate is harmless.
    overdue = Resume.objects.filter(state=Resume.State.PENDING).filter(
        Q(next_attempt_at__lt=cutoff) | Q(next_attempt_at__isnull=True, updated_at__lt=cutoff)
    )
    for pk in overdue.values_list("pk", flat=True):
        with transaction.atomic():
            _queue_dispatch(pk)
        queued += 1
    return queued


@transaction.atomic
def resume_retry(*, resume: Resume, user: Any) -> Resume:
    """An operator sends a failed resume again: same input, same runId (spec rule 5)."""
    row = Resume.objects.select_for_update().get(pk=resume.pk)
    if row.state != Resume.State.FAILED:
        raise ResumeRetryRefused(
            409, "not_failed", f"Only a failed resume can be retried; this one is {row.state}.", state=row.state
        )
    previous = {"attempts": row.attempts, "lastError": row.last_error}
    row.state, row.attempts, row.next_attempt_at = Resume.State.PENDING, 0, timezone.now()
    row.save(update_fields=["state", "attempts", "next_attempt_at", "updated_at"])
    audit(actor=Actor.for_user(user), verb="resume.retried", obj=row, data=previous)
    _push_state(row)
    _queue_dispatch(row.pk)
    return row
