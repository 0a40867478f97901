"""Write paths of the inbox. Each service is keyword-only, does its writes in one transaction, records
its AuditEvents there, and queues Celery tasks and live pushes with ``transaction.on_commit``."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agents.models import Agent
from inbox.audit.record import Actor, audit_event, audit_record
from inbox.conformance.recorder import observe_run, record_run, unwritten
from inbox.core.instances import build
from inbox.core.sql import Reserved, SqlValue, first_pk, insert_all, insert_unless_exists, reserve_ids_sql
from inbox.expiry.services import SIBLING_NOTE, expire_items, expire_runs
from inbox.ingest.parser import IngestError, RunRecord, proposal_for
from inbox.ingest.signals import run_ingested
from inbox.live import push as live
from inbox.models import AuditEvent, InboxItem, ItemSearchText, Run, Thread
from inbox.policies.services import apply_policies_at_ingest, policies_for_agent


@dataclass
class IngestResult:
    run: Run
    created: bool


@dataclass
class ReservedIds:
    """Ids taken for a new run and its items before they are written (PostgreSQL: ``insert_all``)."""

    run: int
    items: list[int]


def _locked_thread(
    *, agent: Agent, thread_id: str, now: datetime, interrupts: int
) -> tuple[Thread, bool, ReservedIds | None]:
    """The thread row, created if new and locked either way, and whether this call created it. The lock
    serialises every write on one thread, so two runs posted at once see each other's items. One statement
    (an upsert that touches the row, which takes its lock) instead of an insert, a savepoint and a
    SELECT ... FOR UPDATE. On PostgreSQL the upsert also says whether it inserted (``xmax = 0``): a new
    thread has no runs and no open items, so the caller skips looking for them; and it takes the ids of the
    run and its ``interrupts`` items, so that they are written together in one round trip."""
    if connection.vendor == "postgresql":
        quote = connection.ops.quote_name
        run_ids, run_params = reserve_ids_sql(Run, 1)
        item_ids, item_params = reserve_ids_sql(InboxItem, interrupts)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {quote(Thread._meta.db_table)} (agent_id, thread_id, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (agent_id, thread_id) DO UPDATE SET updated_at = "
                f"EXCLUDED.updated_at RETURNING id, created_at, (xmax = 0), {run_ids}, {item_ids}",
                [agent.pk, thread_id, now, now, *run_params, *item_params],
            )
            pk, created_at, inserted, (run_pk,), item_pks = cursor.fetchone()
        thread = Thread(pk=pk, agent=agent, thread_id=thread_id, created_at=created_at, updated_at=now)
        thread._state.adding, thread._state.db = False, "default"
        return thread, inserted, ReservedIds(run=run_pk, items=item_pks)
    thread = Thread.objects.bulk_create(
        [Thread(agent=agent, thread_id=thread_id)],
        update_conflicts=True,
        unique_fields=["agent", "thread_id"],
        update_fields=["updated_at"],
    )[0]
    if thread.pk is None:  # a backend that cannot return ids from an upsert
        thread = Thread.objects.select_for_update().get(agent=agent, thread_id=thread_id)
    thread.agent = agent
    return thread, False, None


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
    thread_key = (agent.pk, record.thread_id)
    for _ in range(3):
        try:
            if _may_write_at_once(agent=agent, source=source) and thread_key not in _known_threads:
                stored = _ingest_on_new_thread(
                    agent=agent, record=record, source=source, actor=actor, run_input=run_input
                )
                if stored is not None:
                    _know_thread(thread_key)
                    return stored
            stored = _run_ingest_once(agent=agent, record=record, source=source, actor=actor, run_input=run_input)
            _know_thread(thread_key)
            return stored
        except IntegrityError:
            existing = Run.objects.filter(
                thread__agent=agent, thread__thread_id=record.thread_id, run_id=record.run_id
            ).first()
            if existing is not None:
                return _replay(existing, record)
    raise IngestError(409, "conflict", "The run could not be stored because of concurrent writes; retry.")


# Threads this process stored a run on, the most recent last (at most KNOWN_THREADS): a further run on one of
# them goes straight to the transaction, where the one statement (``_ingest_on_new_thread``) would have been
# built and sent only to write nothing, the thread being there. Only a hint of which path to try first: a
# thread another process made is still tried as new, and one deleted since is upserted by the transaction.
KNOWN_THREADS = 2048
_known_threads: OrderedDict[tuple[int, str], None] = OrderedDict()
_known_lock = threading.Lock()


def _know_thread(key: tuple[int, str]) -> None:
    with _known_lock:
        _known_threads[key] = None
        _known_threads.move_to_end(key)
        if len(_known_threads) > KNOWN_THREADS:
            _known_threads.popitem(last=False)


def forget_known_threads() -> None:
    """Tests: a flushed database may give another test's agent and thread the same ids."""
    with _known_lock:
        _known_threads.clear()


def _replay(existing: Run, record: RunRecord) -> IngestResult:
    if existing.content_hash and existing.content_hash == record.content_hash:
        return IngestResult(existing, created=False)
    raise IngestError(
        409,
        "run_conflict",
        f"Run {record.run_id!r} on thread {record.thread_id!r} was already posted with different content.",
    )


def _may_write_at_once(*, agent: Agent, source: str) -> bool:
    """Whether a run may first be tried as the first of a new thread, in one statement of its own
    (``_ingest_on_new_thread``): on PostgreSQL, outside a caller's transaction, for an agent with no
    auto-decision policies (they write after the items are in), and not for a resume's reply (its thread
    always exists)."""
    return (
        connection.vendor == "postgresql"
        and not connection.in_atomic_block
        and source != Run.Source.RESUME
        and not policies_for_agent(agent)
    )


def _ingest_on_new_thread(
    *, agent: Agent, record: RunRecord, source: str, actor: Actor | None, run_input: dict | None
) -> IngestResult | None:
    """Store a run that opens a new thread in one round trip: the thread, the run, its items, their search
    rows and the audit rows in one statement, which is its own transaction (``insert_unless_exists``). None,
    with nothing written, when the thread exists: its open items and earlier runs must be checked under its
    lock, which ``_run_ingest_once`` does. Also None when the run has conformance observations to write
    (``inbox.conformance.recorder.unwritten``), which that path writes in its transaction.

    A new thread has no runs and no open items, so none of ``_run_ingest_once``'s checks can refuse the run;
    what it writes, and what happens after the commit, are the same (``_new_run_and_items``, ``_search_and_audit``,
    ``_after_store``)."""
    actor = actor or Actor.for_agent(agent)
    now = timezone.now()
    # An id the statement computes (also for the foreign keys below).
    thread = build(Thread, pk=first_pk(Thread), agent=agent, thread_id=record.thread_id, created_at=now, updated_at=now)
    runs, item_ids = Reserved("runs", Run, 1), Reserved("items", InboxItem, len(record.interrupts))
    run, items = _new_run_and_items(
        agent=agent,
        record=record,
        thread=thread,
        now=now,
        source=source,
        run_input=run_input,
        run_pk=runs.ids[0],
        item_pks=item_ids.ids,
    )
    if unwritten(agent_id=agent.pk, observations=observe_run(run=run, record=record, items=items, new_thread=True)):
        return None
    search, events = _search_and_audit(run=run, items=items, thread=thread, actor=actor, source=source)
    if not insert_unless_exists(thread, ["agent", "thread_id"], [run], items, search, events, reserve=[runs, item_ids]):
        return None
    return _after_store(agent=agent, run=run, items=items)


@transaction.atomic
def _run_ingest_once(
    *, agent: Agent, record: RunRecord, source: str, actor: Actor | None, run_input: dict | None
) -> IngestResult:
    actor = actor or Actor.for_agent(agent)
    now = timezone.now()
    thread, new_thread, reserved = _locked_thread(
        agent=agent, thread_id=record.thread_id, now=now, interrupts=len(record.interrupts)
    )
    existing = None if new_thread else Run.objects.filter(thread=thread, run_id=record.run_id).first()
    if existing is not None:
        return _replay(existing, record)

    if record.outcome == Run.Outcome.INTERRUPT and not new_thread:
        open_items = list(
            InboxItem.objects.filter(thread=thread, status=InboxItem.Status.OPEN).values(
                "pk", "interrupt_id", "run__run_id", "expires_at"
            )
        )
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
        if blocking:
            raise IngestError(
                409,
                "thread_has_open_interrupts",
                f"Thread {record.thread_id!r} still has {len(blocking)} open interrupt(s); a new interrupted "
                "run is refused until they are decided (AG-UI interrupts rule 4).",
            ).with_open_items(blocking)

    run, items = _new_run_and_items(
        agent=agent,
        record=record,
        thread=thread,
        now=now,
        source=source,
        run_input=run_input,
        run_pk=reserved.run if reserved else None,
        item_pks=reserved.items if reserved else None,
    )
    if reserved is None:  # the database numbers the rows as they are written
        run.save(force_insert=True)
        InboxItem.objects.bulk_create(items)  # sets primary keys on SQLite 3.35+, which we require
    search, events = _search_and_audit(run=run, items=items, thread=thread, actor=actor, source=source)
    record_run(run=run, record=record, items=items, new_thread=new_thread)
    if reserved is not None:
        # One round trip for the four tables, which also commits when nothing of this transaction is left to
        # write: only the agent's auto-decision policies write after the items are in (in _after_store); the
        # pushes and the run_ingested receivers only queue work for after the commit.
        insert_all([run], items, search, events, commit=not policies_for_agent(agent))
    else:
        ItemSearchText.objects.bulk_create(search)
        audit_record(*events)
    return _after_store(agent=agent, run=run, items=items)


def _new_run_and_items(
    *,
    agent: Agent,
    record: RunRecord,
    thread: Thread,
    now: datetime,
    source: str,
    run_input: dict | None,
    run_pk: int | SqlValue | None,
    item_pks: Sequence[int | SqlValue] | None,
) -> tuple[Run, list[InboxItem]]:
    """The run and its items, unsaved, with the given primary keys (None: the database numbers them)."""
    expiries = [now + agent.default_ttl if i.expires_at is None else i.expires_at for i in record.interrupts]
    run = build(
        Run,
        pk=run_pk,
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
        events=record.events,
        input=run_input if run_input is not None else record.started_input,
        requested_by=record.requested_by,
        content_hash=record.content_hash,
        # Announced to the team by inbox.notifications when it has something open; otherwise nothing to say.
        notified_at=None if expiries and all(expires_at > now for expires_at in expiries) else now,
        created_at=now,
    )
    pks = iter(item_pks or [])
    items = []
    # One interrupt already past its expiresAt means the run can never be resumed (one resume answers them
    # all, and none late): its siblings are closed at once with that reason instead of taking answers in vain.
    dead_run = any(expires_at <= now for expires_at in expiries)
    for interrupt, expires_at in zip(record.interrupts, expiries, strict=True):
        defaulted = interrupt.expires_at is None
        past = expires_at <= now
        note = "expiresAt was already past when the run was posted" if past else SIBLING_NOTE
        items.append(
            build(
                InboxItem,
                pk=next(pks, None),
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


def _search_and_audit(
    *, run: Run, items: list[InboxItem], thread: Thread, actor: Actor, source: str
) -> tuple[list[ItemSearchText], list[AuditEvent]]:
    """The items' search rows and the audit rows of the run and its items (the run and items have their
    primary keys, or the ``SqlValue`` the statement that writes them computes)."""
    agent = run.agent
    search = [
        build(
            ItemSearchText,
            item=item,
            agent=agent,
            text=ItemSearchText.text_of(item, thread.thread_id),
            tool_call_id=item.tool_call_id,
        )
        for item in items
    ]
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
    return search, events


def _after_store(*, agent: Agent, run: Run, items: list[InboxItem]) -> IngestResult:
    """What follows a stored run, in its transaction or after its statement: the pushes (after the commit),
    the agent's auto-decision policies, ``run_ingested``."""
    # Only list pages can be listening: the new items' and run's own pages cannot be open yet.
    groups = live.groups_for(agent_id=agent.pk)
    live.publish_many_on_commit(
        [
            (groups, "item.created", {"item": item.pk, "run": run.pk, "status": item.status, "reason": item.reason})
            for item in items
        ]
    )
    # Auto-decision policies (inbox.policies), after the contract checks and in this same transaction.
    apply_policies_at_ingest(run=run, items=items)
    _after_ingest(run=run, items=items)
    # The caller serializes the run with its items: hand them over instead of querying them again.
    run.ingested_items = items  # type: ignore[attr-defined]  # read by inbox.listing.serializers
    return IngestResult(run, created=True)


def _after_ingest(*, run: Run, items: list[InboxItem]) -> None:
    """Tell the rest of the product (notifications, …) about a newly stored run: ``run_ingested``."""
    run_ingested.send(sender=Run, run=run, items=items)


def _expire_run_resumes(*, thread: Thread, now) -> None:
    """Runs on this thread that lost an item to expiry can no longer be resumed (spec rule 7)."""

    stale_runs = Run.objects.filter(thread=thread, items__status=InboxItem.Status.EXPIRED).distinct()
    expire_runs(run_ids=stale_runs.values_list("pk", flat=True), now=now)
