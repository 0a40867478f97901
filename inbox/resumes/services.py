"""The outbox: a run's ``Resume`` row, ``pending → sending → delivered | accepted | failed | expired``.

``resume_create_if_complete`` fixes the whole input when the run's last item is decided (held while a decision
can be undone), ``resume_withdraw`` takes it back on an undo, ``resume_dispatch`` claims the row under a lease,
sends it and files the reply, ``resume_requeue_stuck`` (beat) and ``resume_retry`` send it again. The rules of
each step (fencing, retries, one copy at a time): docs/resumes.md."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from inbox import access
from inbox.agui.reader import IngestError, RunRecord, read_run
from inbox.audit.record import Actor, audit
from inbox.conformance.recorder import (
    record_call_error,
    record_cut,
    record_ingest_error,
    record_partial_results,
    record_resume,
)
from inbox.core import queue
from inbox.core.db import release_connections
from inbox.core.errors import ApplicationError
from inbox.core.queue import send_marked, waiting
from inbox.ingest.services import run_ingest
from inbox.live import push as live
from inbox.models import AuditEvent, Decision, InboxItem, Resume, Run
from inbox.resumes.input import build_resume_input, new_run_id
from inbox.resumes.reply import mark_reemitted, record_tool_results, reported_results
from inbox.resumes.signals import resume_failed
from inbox.resumes.states import broke_protocol_note
from inbox.resumes.tasks import dispatch_resume

log = logging.getLogger(__name__)


SYSTEM = Actor.system("resume")


class ResumeRetryRefused(ApplicationError):
    """409 ``not_failed``: only a failed resume can be sent again (``state`` says what it is)."""


class ResumeWithdrawRefused(ApplicationError):
    """409 ``too_late``: a worker already claimed the resume, so the answer is (being) sent."""


def _push_state(resume: Resume) -> None:
    live.publish_on_commit(
        live.groups_for(agent_id=resume.agent_id, run_id=resume.run_id, team_ids=access.routed_teams(resume.run_id)),
        "resume.state",
        resume.live_state(),
    )


def _move(
    row: Resume,
    state: str,
    note: str,
    *,
    verb: str,
    data: dict[str, Any],
    next_attempt_at: datetime | None = None,
    also: tuple[str, ...] = (),
) -> None:
    """One transition of a locked row: its state and note, no lease, the audit event and the live push."""
    row.state, row.last_error, row.next_attempt_at, row.lease_until = state, note, next_attempt_at, None
    row.save(update_fields=["state", "last_error", "next_attempt_at", "lease_until", "updated_at", *also])
    audit(actor=SYSTEM, verb=verb, obj=row, data=data)
    _push_state(row)
    if state == Resume.State.FAILED:
        # Failed for good (only a person retries it): tell the people who decided that their answer is stuck.
        resume_failed.send(sender=Resume, resume=row)


def dispatch_mark(resume_id: int) -> str:
    """The mark a resume's dispatch message is recorded under while it waits in the broker (``inbox.core.queue``)."""
    return f"resume:{resume_id}"


def _queue_dispatch(resume_id: int, *, countdown: float | None = None) -> None:

    def send() -> None:
        try:
            send_marked(dispatch_resume.name, [resume_id], mark=dispatch_mark(resume_id), countdown=countdown)
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
    now = timezone.now()
    # Held while any decision of the batch can be undone (its decider's window), so an undo sends nothing.
    held_until = Decision.objects.filter(item__run=run, withdrawn_at__isnull=True, undo_until__gt=now).aggregate(
        until=Max("undo_until")
    )["until"]
    resume = Resume.objects.create(
        run=run,
        thread=run.thread,
        agent=run.agent,
        next_run_id=next_run_id,
        input=build_resume_input(run=run, items=items, next_run_id=next_run_id),
        state=Resume.State.PENDING,
        created_at=now,
        next_attempt_at=held_until or now,
        retry_until=now + timedelta(seconds=settings.INBOX_RESUME_RETRY_WINDOW_SECONDS),
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
    _queue_dispatch(resume.pk, countdown=(held_until - now).total_seconds() if held_until else None)
    return resume


def resume_withdraw(*, run: Run, user: Any, note: str) -> Resume | None:
    """Take back the run's unsent resume (an undo): call inside the undo's transaction with the run locked. The row
    is deleted, so no queued or re-queued dispatch finds it; the audit log keeps what it was. Refused with 409
    ``too_late`` once an attempt claimed it: the claim is a conditional update of this row, so whichever of the
    two takes the row first wins, and the other sees it. Returns the withdrawn row (None: the run had none)."""
    row = Resume.objects.select_for_update().filter(run=run).first()
    if row is None:
        return None
    if row.state != Resume.State.PENDING or row.attempts or row.last_sent_at is not None:
        raise ResumeWithdrawRefused(
            409,
            "too_late",
            "Already sent — too late to undo: the answer has gone to the agent"
            + (" (it is being sent now)." if row.state == Resume.State.SENDING else "."),
            state=row.state,
        )
    data = {"runId": run.run_id, "nextRunId": row.next_run_id, "note": note}
    audit(actor=Actor.for_user(user), verb="resume.withdrawn", obj=row, data=data)
    row.delete()
    return row


def backoff_seconds(attempts: int) -> float:
    """The resumes' backoff (``inbox.core.queue.backoff_seconds`` with ``INBOX_RESUME_BACKOFF_*``)."""
    return queue.backoff_seconds(
        attempts, base=settings.INBOX_RESUME_BACKOFF_BASE, cap=settings.INBOX_RESUME_BACKOFF_CAP
    )


def _lease_end(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.INBOX_RESUME_LEASE_SECONDS)


def _claim(resume_id: int, now: datetime) -> Resume | None:
    claimed = (
        Resume.objects.filter(pk=resume_id, state=Resume.State.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(
            state=Resume.State.SENDING,
            claimed_at=now,
            lease_until=_lease_end(now),
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )
    if claimed != 1:
        return None
    return Resume.objects.select_related("agent", "thread", "run").get(pk=resume_id)


def _held(resume: Resume):
    """This attempt's claim: the row while it is still ``sending`` under the same attempt number."""
    return Resume.objects.filter(pk=resume.pk, state=Resume.State.SENDING, attempts=resume.attempts)


def _lock_run(run_id: int) -> None:
    """Lock the resume's run before the resume itself: the order deciding and undoing take them in (the run, its
    items, then its resume; ``inbox.decisions.services``). A finishing attempt that took the resume first and then
    filed tool results on the items, or locked the run through a join, deadlocked with an undo holding the run and
    asking for the resume; in this order the later of the two waits for the earlier."""
    list(Run.objects.select_for_update().filter(pk=run_id).values_list("pk", flat=True))


def _mine(resume: Resume):
    """The row, locked (after its run: ``_lock_run``), if this worker's claim still holds."""
    _lock_run(resume.run_id)
    return _held(resume).select_for_update(of=("self",)).first()


class LeaseKeeper:
    """Renews an attempt's lease from a thread of the sending worker while it waits for the agent.

    The lease is what tells a live worker from a dead one: a SIGKILLed worker stops renewing and beat
    requeues the row once ``lease_until`` passes; a worker reading a slow agent keeps it. A renewal that
    finds the claim gone (the row was requeued while the database was unreachable, or completed by an
    older attempt's reply) sets ``lost``; the reply is still read and judged by the fencing rules."""

    def __init__(self, resume: Resume) -> None:
        self.resume = resume
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"resume-lease-{resume.pk}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=settings.INBOX_RESUME_LEASE_RENEW_SECONDS + 30)

    def _run(self) -> None:
        try:
            while not self._stop.wait(settings.INBOX_RESUME_LEASE_RENEW_SECONDS):
                try:
                    now = timezone.now()
                    renewed = _held(self.resume).update(lease_until=_lease_end(now), updated_at=now)
                    connection.close()  # not kept open between renewals, while the agent answers
                    if not renewed:
                        self.lost = True
                        log.warning("resume %s attempt %s lost its lease", self.resume.pk, self.resume.attempts)
                        return
                except DatabaseError:
                    log.warning("could not renew the lease of resume %s; trying again", self.resume.pk, exc_info=True)
                    connection.close()
        finally:
            connection.close()  # this thread's own connection


def _earliest_expiry(resume: Resume) -> InboxItem | None:
    return resume.run.items.exclude(expires_at__isnull=True).order_by("expires_at", "position").first()


def _stale_items(resume: Resume, now: datetime) -> list[InboxItem]:
    """Items that are expired, or expire within the safety margin of a send starting ``now``."""
    horizon = now + timedelta(seconds=settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS)
    return [
        item
        for item in resume.run.items.order_by("position", "pk")
        if item.status == InboxItem.Status.EXPIRED or (item.expires_at is not None and item.expires_at <= horizon)
    ]


def resume_dispatch(*, resume_id: int) -> str:
    """Claim, check, send, read. Safe to run twice: only the worker whose conditional update moved the
    row from pending to sending does anything."""
    now = timezone.now()
    resume = _claim(resume_id, now)
    if resume is None:
        # Early (a countdown that fired before the row's due time, by another clock): queue it again for then.
        due = (
            Resume.objects.filter(pk=resume_id, state=Resume.State.PENDING, next_attempt_at__gt=now)
            .values_list("next_attempt_at", flat=True)
            .first()
        )
        if due is not None and not _waiting([resume_id], unknown=set()):  # unless another message of it waits
            _queue_dispatch(resume_id, countdown=(due - now).total_seconds())
        return "not claimed"
    try:
        return _send_claimed(resume)
    except (OperationalError, InterfaceError):
        # The database went away mid-way: the lease lapses and beat requeues the row once it is back.
        raise
    except Exception as exc:
        # Anything else (the reply made storing it fail: a NUL that PostgreSQL rejects, a bug) must not
        # leave the row in ``sending`` until its lease lapses: it fails with the real reason, retryable.
        log.exception("resume %s attempt %s crashed", resume.pk, resume.attempts)
        _finish_failed(resume, f"The inbox could not process the agent's reply: {type(exc).__name__}: {exc}")
        return "failed"


def _send_claimed(resume: Resume) -> str:
    from agents.client import AgentCallError, run_agent

    # The expiry check uses the time after the claim, plus a margin for the transfer.
    now = timezone.now()
    stale = _stale_items(resume, now)
    if stale:
        _finish_expired(resume, stale, now)
        return "expired"
    # Record the send under this claim: if the claim is gone, nothing is sent.
    if not _held(resume).update(last_sent_at=now, lease_until=_lease_end(now), updated_at=now):
        return "superseded"
    log.info("sending resume %s (attempt %s) to %s", resume.pk, resume.attempts, resume.agent.endpoint_url)
    failure: AgentCallError | None = None
    release_connections()  # nothing of the database is held while the agent answers
    with LeaseKeeper(resume):  # renewed only while waiting for the agent; outcomes are written after
        try:
            raw_events = run_agent(agent=resume.agent, run_input=resume.input)
        except AgentCallError as error:
            failure = error
    where = f"reply to resume {resume.pk} (attempt {resume.attempts})"
    if failure is not None:
        record_call_error(agent_id=resume.agent_id, error=failure, run_id=resume.next_run_id, where=where)
        if failure.accepted and failure.kind in ("timeout", "deadline", "over_limits"):
            # It took the input and was still at it when the read stopped (or sent more than the inbox reads):
            # delivered, result unknown; never resent. The results it reported before the cut are kept.
            return _finish_accepted(resume, failure.message, partial=failure.events)
        if failure.accepted and failure.kind == "invalid_event":
            # It took the input and answered, then sent an event that is not AG-UI: delivered, the reply broke the
            # protocol. Sending it again could run it twice.
            return _finish_broken_reply(resume, failure.message, raw_events=failure.events)
        # The agent answered 200 with an event stream: it took the input, whatever became of the reply.
        accepted: dict[str, bool] = {"accepted": True} if failure.accepted else {}
        if failure.retryable:
            return _schedule_retry(resume, failure.message, partial=failure.events, **accepted)
        message = failure.message
        if failure.kind == "timeout":  # silent from the start: it may be working on this copy
            message += (
                " It is not sent again by itself (that would be a second copy): retry it by hand once the agent"
                " is known not to have acted on it."
            )
            accepted["unanswered"] = True  # sent whole: a RUN_ERROR to a retry may mean it acted on this copy
        _finish_failed(resume, message, resumed_run=None, **accepted)
        return "failed"
    try:
        record = read_run(raw_events, "events", allow_error=True)
    except IngestError as error:
        # Answered whole (200, an event stream ended by its terminal event): the agent had the input and acted
        # on it; only its reply is unusable. Delivered, with the results it reported.
        record_ingest_error(agent_id=resume.agent_id, error=error, raw_events=raw_events, where=where)
        return _finish_broken_reply(resume, error.message, raw_events=raw_events)
    return _finish_with_reply(resume, record)


def _file_partial(row: Resume, raw_events: list[Any], run_id: str) -> int:
    """File the TOOL_CALL_RESULTs of a reply that was cut or broke the protocol against the items they answer,
    and note in the report where they went; returns how many items got one."""
    results = reported_results(raw_events)
    if not results:
        return 0
    items = record_tool_results(interrupted=row.run, resumed_run_id=run_id, results=results, actor=SYSTEM)
    record_partial_results(resume=row, items=items, results=results, run_id=run_id)
    return sum(1 for item in items if item.tool_result and item.tool_result.get("runId") == run_id)


def _finish_broken_reply(resume: Resume, reason: str, *, raw_events: list[Any], run_id: str = "") -> str:
    """The agent took the input and answered, but its reply broke the protocol (another thread, an event the SDK
    rejects, a run the inbox refuses): delivered, the reason noted and every result it reported filed. Final: a
    person told "did not reach the agent" might send it again and have it run twice."""
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return "superseded"
        row.delivered_at = timezone.now()
        filed = _file_partial(row, raw_events, run_id or row.next_run_id)
        note = broke_protocol_note(reason, filed)
        data = {"note": note, "attempts": row.attempts, "replyBrokeProtocol": True, "resultsFiled": filed}
        data["deliveredByAttempt"] = resume.attempts
        _move(row, Resume.State.DELIVERED, note, verb="resume.delivered", data=data, also=("delivered_at",))
    return "delivered"


def _finish_expired(resume: Resume, stale: list[InboxItem], now: datetime) -> None:
    margin = settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS
    first = stale[0]
    when = first.expires_at.isoformat() if first.expires_at else "already"
    note = (
        f"attempt {resume.attempts} not sent: interrupt(s) {', '.join(item.interrupt_id for item in stale)} "
        f"expire(d) at {when}, within the {margin:g} s safety margin of {now.isoformat()}"
    )
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return
        if row.last_sent_at is not None:
            note += f"; an earlier attempt was sent at {row.last_sent_at.isoformat()} and no reply to it was received"
        else:
            note += "; the resume was never sent"
        data = {"note": note, "attempts": row.attempts, "everSent": row.last_sent_at is not None}
        _move(row, Resume.State.EXPIRED, note, verb="resume.expired", data=data)


def _finish_accepted(resume: Resume, message: str, *, partial: Sequence[Any] = ()) -> str:
    """The agent took the input (2xx, its reply began) and the reply was cut by the read timeout, the stream
    deadline or the inbox's caps: delivered, result unknown (the results it reported before the cut are filed).
    Final: a second copy would run it twice."""
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return "superseded"
        row.delivered_at = timezone.now()
        filed = _file_partial(row, list(partial), row.next_run_id)
        kept = f" The {filed} tool result(s) it reported before the cut are filed." if filed else ""
        note = f"{message} The agent has the answer; what it did with it is not known.{kept} It is not sent again."
        data = {"note": note, "attempts": row.attempts, "resultUnknown": True, "resultsFiled": filed}
        _move(row, Resume.State.ACCEPTED, note, verb="resume.accepted", data=data, also=("delivered_at",))
    return "accepted"


def _finish_failed(resume: Resume, message: str, *, resumed_run: Run | None = None, **extra: Any) -> None:
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return
        if resumed_run is not None:
            row.resumed_run = resumed_run
        data = {"error": message, "attempts": row.attempts, **extra}
        also = ("resumed_run",) if resumed_run is not None else ()
        _move(row, Resume.State.FAILED, message, verb="resume.failed", data=data, also=also)


def retry_deadline(resume: Resume) -> tuple[datetime, str]:
    """When transport retries stop, and why: the retry window, or the earliest expiresAt less the margin."""
    window_end = resume.retry_until or resume.created_at + timedelta(seconds=settings.INBOX_RESUME_RETRY_WINDOW_SECONDS)
    deadline, why = window_end, f"the retry window ended at {window_end.isoformat()}"
    first = _earliest_expiry(resume)
    if first is not None:
        cutoff = first.expires_at - timedelta(seconds=settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS)
        if cutoff < deadline:
            deadline, why = cutoff, f"interrupt {first.interrupt_id} expires at {first.expires_at.isoformat()}"
    return deadline, why


def _schedule_retry(resume: Resume, message: str, *, partial: Sequence[Any] = (), **extra: Any) -> str:
    """Send again later (or give up past the deadline). ``partial``: the events of a reply cut part-way; the tool
    results among them are filed now, so what the agent reported is kept whatever the next attempt brings."""
    with transaction.atomic():
        row = _mine(resume)
        if row is None:
            return "superseded"
        filed = _file_partial(row, list(partial), row.next_run_id)
        if filed:
            message += f" The {filed} tool result(s) it reported before the cut are filed."
            extra["resultsFiled"] = filed
        now = timezone.now()
        delay = backoff_seconds(row.attempts)
        deadline, why = retry_deadline(row)
        if now + timedelta(seconds=delay) >= deadline:
            note = f"{message} (gave up after {row.attempts} attempt(s): {why})"
            data = {"error": note, "attempts": row.attempts, "gaveUp": True, **extra}
            _move(row, Resume.State.FAILED, note, verb="resume.failed", data=data)
            return "failed"
        data = {"error": message, "attempts": row.attempts, "delaySeconds": round(delay, 3), **extra}
        due = now + timedelta(seconds=delay)
        _move(row, Resume.State.PENDING, message, verb="resume.retry_scheduled", data=data, next_attempt_at=due)
        _queue_dispatch(row.pk, countdown=delay)
    return "retry scheduled"


def _finish_with_reply(resume: Resume, record: RunRecord) -> str:
    if record.thread_id and record.thread_id != resume.thread.thread_id:
        message = f"The agent answered on thread {record.thread_id!r}, not {resume.thread.thread_id!r}."
        index = next(
            (
                i
                for i, event in enumerate(record.events)
                if event.get("threadId") not in (None, resume.thread.thread_id)
            ),
            None,
        )
        where = f"reply to resume {resume.pk} (attempt {resume.attempts})"
        record_cut(
            agent_id=resume.agent_id,
            variant="other_thread",
            message=message,
            run_id=record.run_id,
            event_index=index,
            where=where,
        )
        return _finish_broken_reply(resume, message, raw_events=record.events, run_id=record.run_id)
    # A bare RUN_ERROR names no thread or run: it answers the input we sent.
    record.thread_id = record.thread_id or resume.thread.thread_id
    record.run_id = record.run_id or resume.next_run_id
    mark_reemitted(record, resume.run)
    succeeded = record.outcome != Run.Outcome.ERROR
    with transaction.atomic():
        if succeeded:
            # Whichever attempt carried it, a successful reply is the resumed run (same runId): it completes
            # the row unless an earlier reply already did. A RUN_ERROR counts only for the current claim.
            _lock_run(resume.run_id)
            row = (
                Resume.objects.select_for_update(of=("self",))
                .filter(pk=resume.pk)
                .exclude(state=Resume.State.DELIVERED)
                .select_related("run", "thread", "agent")
                .first()
            )
            late = row is not None and (row.state != Resume.State.SENDING or row.attempts != resume.attempts)
            if late:
                log.info("resume %s: the reply to attempt %s came after its lease moved on", resume.pk, resume.attempts)
        else:
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
            if error.code != "thread_has_open_interrupts":  # another run's items, not this reply's doing
                record_ingest_error(agent_id=row.agent_id, error=error, where=f"resumed run {record.run_id}")
            note = f"The resumed run could not be stored: {error.message}"
            _move(row, Resume.State.FAILED, note, verb="resume.failed", data={"error": note})
            return "failed"
        resumed = result.run
        items = record_tool_results(
            interrupted=row.run,
            resumed_run_id=resumed.run_id,
            results=record.tool_results,
            actor=SYSTEM,
            resumed=resumed,
        )
        record_resume(resume=row, resumed=resumed, record=record, items=items)
        row.resumed_run = resumed
        also = ("resumed_run", "delivered_at")
        if succeeded:
            row.delivered_at = timezone.now()
            data = {"resumedRunId": resumed.run_id, "outcome": resumed.outcome, "attempts": row.attempts}
            data["deliveredByAttempt"] = resume.attempts
            if late:
                data["afterLeaseLost"] = True
            _move(row, Resume.State.DELIVERED, "", verb="resume.delivered", data=data, also=also)
        elif (earlier := _taken_attempt(row)) is not None:
            # A resend refused with RUN_ERROR after an earlier copy the agent may have acted on (its reply cut after
            # the 200, or no answer at all): the spec's answer to an interrupt the agent no longer holds, because
            # it acted on that copy. Delivered, result unknown (``accepted``), not a failure to tell people about.
            row.delivered_at = timezone.now()
            note = (
                f"Delivered by attempt {earlier}, result unknown: the agent refused the resend with RUN_ERROR, as the "
                f"spec asks for an interrupt it no longer holds: {record.error_message or '(no message)'}. What it "
                "did with the earlier copy is not known here."
            )
            data = {"note": note, "resumedRunId": resumed.run_id, "attempts": row.attempts}
            data |= {"deliveredByAttempt": earlier, "replayRefused": True, "resultUnknown": True}
            _move(row, Resume.State.ACCEPTED, note, verb="resume.accepted", data=data, also=also)
        else:
            sent = f" to the resume sent at {row.last_sent_at.isoformat()}" if row.last_sent_at else ""
            note = f"The agent answered RUN_ERROR{sent}: {record.error_message or '(no message)'}"
            data = {"error": note, "runError": True, "attempts": row.attempts}
            _move(row, Resume.State.FAILED, note, verb="resume.failed", data=data, also=also)
    return row.state


def _taken_attempt(row: Resume) -> int | None:
    """The earlier attempt of this resume the agent may have acted on without the inbox receiving its reply, if
    any: one it answered 200 with an event stream (``accepted`` in the audit of its retry or failure), or one
    sent whole that it never answered (``unanswered``: the read timeout, then a person's retry)."""
    event = (
        AuditEvent.objects.filter(
            object_type=Resume._meta.model_name,
            object_id=str(row.pk),
            verb__in=["resume.retry_scheduled", "resume.failed"],
        )
        .filter(Q(data__accepted=True) | Q(data__unanswered=True))
        .order_by("pk")
        .first()
    )
    if event is None:
        return None
    attempts = (event.data or {}).get("attempts")
    return attempts if isinstance(attempts, int) else 0


def resume_requeue_stuck() -> int:
    """Beat: put back rows whose lease expired (their worker died or hangs), and re-queue ``pending`` rows
    whose task message never arrived. Returns how many dispatches were queued."""
    now = timezone.now()
    queued = 0
    lapsed = Resume.objects.filter(state=Resume.State.SENDING).filter(
        Q(lease_until__lt=now) | Q(lease_until__isnull=True, claimed_at__lt=now - timedelta(seconds=60))
    )
    for pk, attempts, run_id in lapsed.values_list("pk", "attempts", "run_id"):
        with transaction.atomic():
            _lock_run(run_id)
            row = (
                Resume.objects.select_for_update(of=("self",))
                .filter(pk=pk, state=Resume.State.SENDING, attempts=attempts)
                .filter(Q(lease_until__lt=now) | Q(lease_until__isnull=True))
                .select_related("run")
                .first()
            )
            if row is None:
                continue
            held = row.lease_until.isoformat() if row.lease_until else "its claim"
            note = f"attempt {attempts} stopped renewing its lease (held until {held}): worker lost"
            deadline, why = retry_deadline(row)
            if now >= deadline:
                note += f"; no further attempt: {why}"
                _move(row, Resume.State.FAILED, note, verb="resume.failed", data={"error": note, "attempts": attempts})
            else:
                data = {"note": note, "attempts": attempts}
                _move(row, Resume.State.PENDING, note, verb="resume.requeued", data=data, next_attempt_at=now)
                _queue_dispatch(row.pk)
                queued += 1
    # A pending row whose dispatch should have run a while ago and has no message left in the broker lost it
    # (Redis restarted empty, a commit hook that could not reach the broker, a worker that died holding it for its
    # countdown): queue it again, and note when, so a row is re-queued at most once per grace period. A row whose
    # message is still waiting in a long queue is left alone: the backlog never feeds itself.
    cutoff = now - timedelta(seconds=settings.INBOX_RESUME_REQUEUE_GRACE_SECONDS)
    overdue = list(
        Resume.objects.filter(state=Resume.State.PENDING)
        .filter(Q(next_attempt_at__lt=cutoff) | Q(next_attempt_at__isnull=True, updated_at__lt=cutoff))
        .values_list("pk", "next_attempt_at")
    )
    try:
        still_queued = _waiting([pk for pk, _ in overdue])
    except Exception:  # noqa: BLE001 - Redis is unreachable: nothing can be queued now; the next sweep tries again
        log.warning("the broker cannot be read: %d overdue resume(s) left for the next sweep", len(overdue))
        return queued
    for pk, due in overdue:
        if pk in still_queued:
            continue
        with transaction.atomic():
            if Resume.objects.filter(pk=pk, state=Resume.State.PENDING, next_attempt_at=due).update(
                next_attempt_at=now
            ):
                _queue_dispatch(pk)
                queued += 1
    return queued


def _waiting(resume_ids: list[int], *, unknown: set[int] | None = None) -> set[int]:
    """The resumes among ``resume_ids`` whose dispatch message is in the broker, not yet received by a worker.
    When Redis cannot be read: ``unknown`` if given, else the error."""
    marks = {dispatch_mark(pk): pk for pk in resume_ids}
    try:
        return {marks[mark] for mark in waiting(marks)}
    except Exception:
        if unknown is None:
            raise
        return unknown


@transaction.atomic
def resume_retry(*, resume: Resume, user: Any) -> Resume:
    """An operator sends a failed resume again: same input, same runId (spec rule 5)."""
    _lock_run(resume.run_id)
    row = Resume.objects.select_for_update(of=("self",)).get(pk=resume.pk)
    if row.state != Resume.State.FAILED:
        raise ResumeRetryRefused(
            409, "not_failed", f"Only a failed resume can be retried; this one is {row.state}.", state=row.state
        )
    previous = {"attempts": row.attempts, "lastError": row.last_error}
    # ``attempts`` keeps counting: it is the claim's fencing token, so a reply to an attempt from before
    # the retry can never be mistaken for one of the new attempts.
    now = timezone.now()
    row.state, row.next_attempt_at = Resume.State.PENDING, now
    row.retry_until = now + timedelta(seconds=settings.INBOX_RESUME_RETRY_WINDOW_SECONDS)
    row.save(update_fields=["state", "next_attempt_at", "retry_until", "updated_at"])
    audit(actor=Actor.for_user(user), verb="resume.retried", obj=row, data=previous)
    _push_state(row)
    _queue_dispatch(row.pk)
    return row
