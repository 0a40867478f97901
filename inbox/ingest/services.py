"""Write paths of the inbox. Each service is keyword-only, does its writes in one transaction, records
its AuditEvents there, and queues Celery tasks and live pushes with ``transaction.on_commit``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import Agent
from inbox.agui.reader import IngestError, RunRecord, proposal_for
from inbox.audit.record import Actor, audit_event, audit_record
from inbox.conformance.recorder import record_run
from inbox.expiry.services import SIBLING_NOTE, expire_items, expire_runs
from inbox.ingest.signals import items_superseded, run_ingested
from inbox.live import push as live
from inbox.models import AuditEvent, InboxItem, ItemSearchText, Run, Thread


@dataclass(frozen=True)
class IngestResult:
    """A stored run: whether this call created it, and its items in position order (those just created, or
    the stored ones when the same run was posted again)."""

    run: Run
    created: bool
    items: tuple[InboxItem, ...]


def _locked_thread(*, agent: Agent, thread_id: str) -> Thread:
    """The thread row, created if new and locked either way: the lock serialises every write on one thread, so
    two runs posted at once see each other's items. One upsert, which locks the row it inserts or touches (on
    SQLite the IMMEDIATE transaction already holds the database's write lock)."""
    (thread,) = Thread.objects.bulk_create(
        [Thread(agent=agent, thread_id=thread_id)],
        update_conflicts=True,
        unique_fields=["agent", "thread_id"],
        update_fields=["updated_at"],
    )
    return thread


def expire_open_items(*, items_qs, now, note: str, actor: Actor | None = None) -> list[int]:
    """Close the given open items as expired, set-based, with one AuditEvent each. Returns their ids.
    (One UPDATE ... RETURNING; see ``inbox.expiry.expire_items``.)"""

    return [row[0] for row in expire_items(items_qs=items_qs, now=now, note=note, actor=actor)]


def run_ingest(
    *,
    agent: Agent,
    record: RunRecord,
    source: str = Run.Source.INGEST,
    actor: Actor | None = None,
    run_input: dict | None = None,
) -> IngestResult:
    """Store one run as the inbox saw it, and an InboxItem per interrupt.

    Idempotent: the same run (agent, threadId, runId) posted again with the same content returns the
    stored run; with different content it is refused (409). Concurrent copies race on the unique
    constraint and the loser reads the winner's row.
    """
    for _ in range(3):
        try:
            return _run_ingest_once(agent=agent, record=record, source=source, actor=actor, run_input=run_input)
        except IntegrityError:
            existing = Run.objects.filter(
                thread__agent=agent, thread__thread_id=record.thread_id, run_id=record.run_id
            ).first()
            if existing is not None:
                return _replay(existing, record)
    raise IngestError(409, "conflict", "The run could not be stored because of concurrent writes; retry.")


def _replay(existing: Run, record: RunRecord) -> IngestResult:
    if existing.content_hash and existing.content_hash == record.content_hash:
        return IngestResult(existing, created=False, items=tuple(existing.items.order_by("position")))
    raise IngestError(
        409,
        "run_conflict",
        f"Run {record.run_id!r} on thread {record.thread_id!r} was already posted with different content.",
    )


@transaction.atomic
def _run_ingest_once(
    *, agent: Agent, record: RunRecord, source: str, actor: Actor | None, run_input: dict | None
) -> IngestResult:
    actor = actor or Actor.for_agent(agent)
    now = timezone.now()
    thread = _locked_thread(agent=agent, thread_id=record.thread_id)
    existing = Run.objects.filter(thread=thread, run_id=record.run_id).first()
    if existing is not None:
        return _replay(existing, record)

    superseded: list[InboxItem] = []
    interrupt_ids = [interrupt.id for interrupt in record.interrupts]
    # One read of the thread's items that bear on this run: the open ones (they block or are superseded) and
    # those of earlier runs with one of this run's interrupt ids (reused ids, for the conformance report).
    if record.outcome != Run.Outcome.ERROR or interrupt_ids:
        related = list(
            InboxItem.objects.filter(
                Q(status=InboxItem.Status.OPEN) | Q(interrupt_id__in=interrupt_ids), thread=thread
            ).values("pk", "interrupt_id", "run__run_id", "expires_at", "status")
        )
    else:
        related = []
    reused_ids = {item["interrupt_id"] for item in related if item["interrupt_id"] in interrupt_ids}
    if record.outcome != Run.Outcome.ERROR:
        open_items = [item for item in related if item["status"] == InboxItem.Status.OPEN]
        # An item past its expiresAt is stale even if the sweep has not run yet; it does not block.
        stale = [item["pk"] for item in open_items if item["expires_at"] <= now]
        if stale:
            expire_open_items(
                items_qs=InboxItem.objects.filter(pk__in=stale),
                now=now,
                note="expired before a new run arrived on its thread",
            )
            _expire_run_resumes(thread=thread, now=now)
        blocking = [dict(item) for item in open_items if item["expires_at"] > now]
        if blocking and record.outcome != Run.Outcome.INTERRUPT:
            # The agent finished a run on the thread without a resume answering them (rule 4): it no longer
            # waits for these answers. They close as superseded (never sent) and their approvers are told.
            open_ids = [item["pk"] for item in open_items if item["expires_at"] > now]
            superseded = _supersede(item_ids=open_ids, record=record, now=now, actor=actor)
        elif blocking:
            raise IngestError(
                409,
                "thread_has_open_interrupts",
                f"Thread {record.thread_id!r} still has {len(blocking)} open interrupt(s); a new interrupted "
                "run is refused until they are decided (AG-UI interrupts rule 4).",
            ).with_open_items(blocking)

    run, items = _new_run_and_items(
        agent=agent, record=record, thread=thread, now=now, source=source, run_input=run_input
    )
    run.save(force_insert=True)
    InboxItem.objects.bulk_create(items)  # sets primary keys on PostgreSQL and SQLite 3.35+, which we require
    ItemSearchText.objects.bulk_create(
        [
            ItemSearchText(
                item=item,
                agent=agent,
                text=ItemSearchText.text_of(item, thread.thread_id),
                tool_call_id=item.tool_call_id,
            )
            for item in items
        ]
    )
    audit_record(*_audit_events(run=run, items=items, thread=thread, actor=actor, source=source))
    record_run(run=run, record=record, items=items, reused_ids=reused_ids, superseded=superseded)
    # Only list pages can be listening: the new items' and run's own pages cannot be open yet.
    groups = live.groups_for(agent_id=agent.pk)
    live.publish_many_on_commit(
        [
            (groups, "item.created", {"item": item.pk, "run": run.pk, "status": item.status, "reason": item.reason})
            for item in items
        ]
    )
    # The receivers (the agent's auto-decision policies, then the announcement) run in this transaction.
    run_ingested.send(sender=Run, run=run, items=items)
    return IngestResult(run, created=True, items=tuple(sorted(items, key=lambda item: item.position)))


SUPERSEDED_NOTE = (
    "the agent finished run {run_id} on this thread ({outcome}) without a resume answering this interrupt: "
    "it no longer waits for the answer, so nothing is sent (AG-UI interrupts, rule 4)"
)


def _supersede(*, item_ids: list[int], record: RunRecord, now: datetime, actor: Actor) -> list[InboxItem]:
    """Close the open items as superseded: status expired (a resume is never sent for them), outcome
    superseded, one AuditEvent each, ``item.expired`` pushed to open pages, and their approvers told by mail
    after the commit (the ``items_superseded`` signal). Returns the items closed. The caller holds the thread's lock;
    the items' own locks keep a decision in flight from closing one twice."""
    items = list(
        InboxItem.objects.select_for_update()
        .filter(pk__in=item_ids, status=InboxItem.Status.OPEN)
        .order_by("run_id", "position")
    )
    if not items:
        return []
    note = SUPERSEDED_NOTE.format(run_id=record.run_id, outcome=record.outcome)
    for item in items:
        item.status, item.outcome = InboxItem.Status.EXPIRED, InboxItem.Outcome.SUPERSEDED
        item.status_note, item.decided_at = note, now
    InboxItem.objects.bulk_update(items, ["status", "outcome", "status_note", "decided_at"])
    audit_record(
        *[
            audit_event(
                actor=actor,
                verb="item.superseded",
                obj=item,
                data={"interruptId": item.interrupt_id, "byRunId": record.run_id, "outcome": record.outcome},
            )
            for item in items
        ]
    )
    live.publish_many_on_commit(
        [
            (
                live.groups_for(agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id),
                "item.expired",
                {
                    "item": item.pk,
                    "run": item.run_id,
                    "status": item.status,
                    "outcome": item.outcome,
                    "note": note,
                },
            )
            for item in items
        ]
    )
    items_superseded.send(sender=InboxItem, item_ids=[item.pk for item in items])
    return items


def _new_run_and_items(
    *,
    agent: Agent,
    record: RunRecord,
    thread: Thread,
    now: datetime,
    source: str,
    run_input: dict | None,
) -> tuple[Run, list[InboxItem]]:
    """The run and its items, unsaved."""
    expiries = [now + agent.default_ttl if i.expires_at is None else i.expires_at for i in record.interrupts]
    run = Run(
        agent=agent,
        thread=thread,
        run_id=record.run_id,
        parent_run_id=record.parent_run_id,
        source=source,
        outcome=record.outcome,
        outcome_omitted=record.outcome_omitted,
        result=record.result,
        error_message=record.error_message,
        state_snapshot=record.state_snapshot,
        messages_snapshot=record.messages_snapshot,
        tool_calls=record.tool_calls,
        tool_results=record.tool_results,
        pending_tool_call_ids=record.pending_tool_call_ids,
        events=record.events,
        input=run_input if run_input is not None else record.started_input,
        requested_by=record.requested_by,
        content_hash=record.content_hash,
        # Announced to the team by inbox.notifications when it has something open; otherwise nothing to say.
        notified_at=None if expiries and all(expires_at > now for expires_at in expiries) else now,
        created_at=now,
    )
    items = []
    # One interrupt already past its expiresAt means the run can never be resumed (one resume answers them
    # all, and none late): its siblings are closed at once with that reason instead of taking answers in vain.
    dead_run = any(expires_at <= now for expires_at in expiries)
    for interrupt, expires_at in zip(record.interrupts, expiries, strict=True):
        defaulted = interrupt.expires_at is None
        past = expires_at <= now
        note = "expiresAt was already past when the run was posted" if past else SIBLING_NOTE
        items.append(
            InboxItem(
                agent=agent,
                thread=thread,
                run=run,
                position=interrupt.position,
                interrupt_id=interrupt.id,
                reason=interrupt.reason,
                message=interrupt.message,
                tool_call_id=interrupt.tool_call_id,
                response_schema=interrupt.response_schema,
                response_schema_text=(
                    json.dumps(interrupt.response_schema, ensure_ascii=False)
                    if interrupt.response_schema is not None
                    else ""
                ),
                expires_at=expires_at,
                expires_at_defaulted=defaulted,
                metadata=interrupt.metadata,
                raw=interrupt.raw,
                tool_call=proposal_for(interrupt, run.tool_calls),
                status=InboxItem.Status.EXPIRED if dead_run else InboxItem.Status.OPEN,
                outcome=InboxItem.Outcome.EXPIRED if dead_run else "",
                status_note=note if dead_run else "",
                decided_at=now if dead_run else None,
                created_at=now,
            )
        )
    return run, items


def _audit_events(*, run: Run, items: list[InboxItem], thread: Thread, actor: Actor, source: str) -> list[AuditEvent]:
    """The audit rows of the run and its items (both saved)."""
    events = [
        audit_event(
            actor=actor,
            verb="run.ingested",
            obj=run,
            data={
                "runId": run.run_id,
                "threadId": thread.thread_id,
                "outcome": run.outcome,
                "source": source,
                "interrupts": len(items),
            },
        )
    ]
    for item in items:
        events.append(
            audit_event(
                actor=actor,
                verb="item.created" if item.status == InboxItem.Status.OPEN else "item.created_expired",
                obj=item,
                data={
                    "interruptId": item.interrupt_id,
                    "reason": item.reason,
                    "expiresAt": item.expires_at.isoformat(),
                },
            )
        )
    return events


def _expire_run_resumes(*, thread: Thread, now) -> None:
    """Runs on this thread that lost an item to expiry can no longer be resumed (spec rule 7)."""

    stale_runs = Run.objects.filter(thread=thread, items__status=InboxItem.Status.EXPIRED).distinct()
    expire_runs(run_ids=stale_runs.values_list("pk", flat=True), now=now)
