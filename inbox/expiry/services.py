"""Expiry: closing what has gone stale.

``expire_items`` and ``expire_runs`` close items past ``expiresAt`` and the runs that can no longer be resumed
because of it; they run at decide and send time (the guards), when a new run arrives on the thread, and in
``expire_sweep`` (beat, set-based; a sweep that finds nothing costs one query). The rules: docs/deciding.md."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, F, QuerySet, TextField, Value, When
from django.db.models.functions import Concat
from django.utils import timezone

from inbox import access
from inbox.audit.record import Actor, audit_event, audit_insert_sql
from inbox.core.sql import Row, _update_sql, id_set
from inbox.live import push as live
from inbox.models import AuditEvent, InboxItem, Resume, Run

log = logging.getLogger(__name__)


STALE_NOTE = "expiresAt passed before it was decided"


SIBLING_NOTE = "another interrupt of the same run expired, so the run can no longer be resumed"


RESUME_NOTE = "not sent: an interrupt of the run expired before the resume could be sent"


# A resume that went out at least once (``last_sent_at``) and is waiting for a retry was sent: say so.
RESUME_SENT_NOTE = (
    "not delivered: an interrupt of the run expired before the agent's reply to the resume arrived "
    "(it was sent, at last_sent_at)"
)


AUDIT_BATCH = 2000  # resume and reminder AuditEvents (few) go through bulk_create in batches of this


# Above this many items in one go, pages get one ``items.expired`` summary per audience instead of an
# ``item.expired`` per item (a large sweep must not turn into a channel-layer message per item and audience).
LIVE_PER_ITEM_LIMIT = 200


# How far back the sweep looks for decided items whose expiresAt passed while a sibling was still open.
LAPSED_WINDOW = timedelta(hours=1)


def expire_items(*, items_qs: QuerySet[InboxItem], now: datetime, note: str, actor: Actor | None = None) -> list[Row]:
    """Close the open items among ``items_qs`` as expired, record one AuditEvent each, and push
    ``item.expired`` after commit. Call inside a transaction. Returns the closed rows as
    ``(id, agent_id, thread_id, run_id)``.

    On PostgreSQL the update and the audit rows are one statement (a data-modifying CTE), so the audit
    insert reads the updated rows directly instead of looking 100k ids up again; elsewhere, two."""
    actor = actor or Actor.system("expiry")
    update_sql, update_params = _update_sql(
        items_qs.filter(status=InboxItem.Status.OPEN),
        values={
            "status": InboxItem.Status.EXPIRED,
            "outcome": InboxItem.Outcome.EXPIRED,
            "status_note": note,
            "decided_at": now,
        },
        guard={"status": InboxItem.Status.OPEN},
        returning=["id", "agent_id", "thread_id", "run_id"],
    )
    if connection.vendor == "postgresql":
        audit_sql, audit_params = audit_insert_sql(
            source="updated", verb="item.expired", data={"note": note}, actor=actor, now=now
        )
        sql = f"WITH updated AS ({update_sql}), logged AS ({audit_sql}) SELECT * FROM updated"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*update_params, *audit_params])
            rows = cursor.fetchall()
    else:
        with connection.cursor() as cursor:
            cursor.execute(update_sql, update_params)
            rows = cursor.fetchall()
        if rows:
            ids = id_set(row[0] for row in rows)
            quote = connection.ops.quote_name
            source = f"{quote(InboxItem._meta.db_table)} WHERE {quote('id')} IN ({ids.sql})"
            audit_sql, audit_params = audit_insert_sql(
                source=source, verb="item.expired", data={"note": note}, actor=actor, now=now
            )
            with connection.cursor() as cursor:
                cursor.execute(audit_sql, [*audit_params, *ids.params])
    if not rows:
        return []
    _publish_expired(rows, note=note)
    return rows


def _publish_expired(rows: list[Row], *, note: str) -> None:
    if len(rows) <= LIVE_PER_ITEM_LIMIT:
        live.publish_many_on_commit(
            [
                (
                    live.groups_for(agent_id=agent_id, item_id=pk, run_id=run_id),
                    "item.expired",
                    {"item": pk, "run": run_id, "status": InboxItem.Status.EXPIRED, "note": note},
                )
                for pk, agent_id, _thread_id, run_id in rows
            ]
        )
        return
    by_agent: dict[int, int] = {}
    for _pk, agent_id, *_rest in rows:
        by_agent[agent_id] = by_agent.get(agent_id, 0) + 1
    messages = [
        ([live.agent_group(agent_id)], "items.expired", {"count": count, "note": note})
        for agent_id, count in by_agent.items()
    ]
    messages.append(([live.STAFF_GROUP], "items.expired", {"count": len(rows), "note": note}))
    live.publish_many_on_commit(messages)


def expire_runs(*, run_ids: Iterable[int], now: datetime, actor: Actor | None = None) -> int:
    """The runs lost an item to expiry, so they can no longer be resumed (spec rule 7): close their other
    open items as expired with that reason, and expire their pending or failed resume. Call inside a
    transaction. Returns how many open items it closed."""
    run_ids = sorted(set(run_ids))
    if not run_ids:
        return 0
    actor = actor or Actor.system("expiry")
    runs = id_set(run_ids)
    siblings = expire_items(items_qs=InboxItem.objects.filter(run_id__in=runs), now=now, note=SIBLING_NOTE, actor=actor)
    resumable = [Resume.State.PENDING, Resume.State.FAILED]
    resumes = list(
        Resume.objects.select_for_update().filter(run_id__in=runs, state__in=resumable).values_list("pk", flat=True)
    )
    if not resumes:
        return len(siblings)
    Resume.objects.filter(pk__in=resumes, state__in=resumable).update(
        state=Resume.State.EXPIRED,
        # A failed resume keeps its error after the explanation.
        last_error=Case(
            When(
                state=Resume.State.FAILED,
                last_sent_at__isnull=False,
                then=Concat(Value(RESUME_SENT_NOTE + "; it had failed: "), F("last_error"), output_field=TextField()),
            ),
            When(
                state=Resume.State.FAILED,
                then=Concat(Value(RESUME_NOTE + "; it had failed: "), F("last_error"), output_field=TextField()),
            ),
            When(last_sent_at__isnull=False, then=Value(RESUME_SENT_NOTE)),
            default=Value(RESUME_NOTE),
            output_field=TextField(),
        ),
        next_attempt_at=None,
        updated_at=now,
    )
    expired = list(Resume.objects.filter(pk__in=resumes, state=Resume.State.EXPIRED))
    AuditEvent.objects.bulk_create(
        [
            audit_event(
                actor=actor, verb="resume.expired", obj=resume, data={"note": resume.last_error}, created_at=now
            )
            for resume in expired
        ],
        batch_size=AUDIT_BATCH,
    )
    live.publish_many_on_commit(
        [
            (
                live.groups_for(
                    agent_id=resume.agent_id, run_id=resume.run_id, team_ids=access.routed_teams(resume.run_id)
                ),
                "resume.state",
                resume.live_state(),
            )
            for resume in expired
        ]
    )
    return len(siblings)


def _stale_items(now: datetime) -> QuerySet[InboxItem]:
    return InboxItem.objects.filter(status=InboxItem.Status.OPEN, expires_at__lte=now)


def _open_siblings_of_lapsed(now: datetime) -> QuerySet[InboxItem]:
    """Open items of a run in which an item already decided has just passed its expiresAt: the run is
    resumed as a whole and never past any interrupt's expiresAt, so the open ones can no longer help.
    Only decided items that lapsed within ``LAPSED_WINDOW`` are looked at, so the check stays an index
    range scan; older cases are caught by the guards at decision and send time."""
    lapsed = InboxItem.objects.filter(
        status__in=InboxItem.DECIDED,
        expires_at__gt=now - LAPSED_WINDOW,
        expires_at__lte=now,
    )
    return InboxItem.objects.filter(status=InboxItem.Status.OPEN, run_id__in=lapsed.values("run_id"))


def _stale_resumes(now: datetime) -> QuerySet[Resume]:
    """Resumes still waiting to be sent (or retried) whose run has an item past expiresAt: every item is
    decided, but the resume must not be sent any more."""
    return Resume.objects.filter(state__in=[Resume.State.PENDING, Resume.State.FAILED], run__items__expires_at__lte=now)


def run_is_past_expiry(*, run_id: int, now: datetime) -> bool:
    """True when an item of the run, decided or not, is past its expiresAt: the run can no longer be
    resumed (one resume answers every interrupt, and none may be answered late). For the decision guard."""
    return InboxItem.objects.filter(run_id=run_id, expires_at__lte=now).exists()


def anything_stale(now: datetime) -> bool:
    """One query, three index range scans glued with UNION ALL and stopped at the first row: open items
    past expiresAt (the partial index on open items' expires_at), open siblings of recently lapsed decided items,
    and resumes waiting to be sent whose run has an item past expiresAt."""
    parts = [_stale_items(now), _open_siblings_of_lapsed(now), _stale_resumes(now)]
    first, *rest = [part.order_by().values_list("pk") for part in parts]
    return first.union(*rest, all=True).exists()


def expire_sweep(*, now: datetime | None = None) -> int:
    """Beat task body: close every open item past its expiresAt, and the runs that can no longer be
    resumed because of it. Returns how many items expired (stale ones and their siblings)."""
    now = now or timezone.now()
    if not anything_stale(now):
        return 0
    with transaction.atomic():
        rows = expire_items(items_qs=_stale_items(now), now=now, note=STALE_NOTE)
        run_ids = {row[3] for row in rows}
        run_ids.update(_open_siblings_of_lapsed(now).values_list("run_id", flat=True))
        run_ids.update(_stale_resumes(now).values_list("run_id", flat=True))
        siblings = expire_runs(run_ids=run_ids, now=now)
    log.info("expiry sweep closed %d stale item(s) and %d sibling(s)", len(rows), siblings)
    return len(rows) + siblings


_UNREAD: Any = object()


def run_expiry_summary(run: Run, *, items: list[InboxItem] | None = None, resume: Any = _UNREAD) -> str | None:
    """A plain sentence for the run page: why this run can no longer be resumed, or None. ``items`` (all of
    the run's) and ``resume`` (the run's, or None) spare the queries when the page has read them already."""
    items = sorted(run.items.all() if items is None else items, key=lambda item: (item.expires_at, item.position))
    expired = [item for item in items if item.status == InboxItem.Status.EXPIRED]
    if resume is _UNREAD:
        resume = Resume.objects.filter(run=run).first()
    resume_expired = resume is not None and resume.state == Resume.State.EXPIRED
    if not expired and not resume_expired:
        return None
    first = next((item for item in expired if item.status_note != SIBLING_NOTE), None) or (expired or items)[0]
    why = f" {first.status_note}." if first.status_note and first.status == InboxItem.Status.EXPIRED else ""
    others = len(expired) - (1 if first in expired else 0)
    closed = f" {others} other interrupt(s) of this run were closed as expired with it." if others else ""
    if resume_expired and resume.last_sent_at is not None:
        sent = f"The resume was sent to the agent at {resume.last_sent_at.isoformat()}: {resume.last_error}."
    elif resume_expired:
        sent = f"The resume was not sent to the agent: {resume.last_error}."
    else:
        sent = "No resume was sent to the agent: it must never receive an answer past expiresAt."
    return (
        f"This run can no longer be resumed: interrupt {first.interrupt_id} expired at "
        f"{first.expires_at.isoformat()}.{why}{closed} {sent} The thread accepts new runs."
    )
