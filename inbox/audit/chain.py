"""The audit log's hash chain: sealing new events in order, walking the chain to verify it, and purging old events
behind a signed checkpoint. docs/audit.md says what each guarantees."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from inbox.models import AuditChain, AuditCheckpoint, AuditEvent, AuditSeal, AuditVerification

GENESIS = "0" * 64
# The references an event may lose when what they point at is deleted; a seal keeps them as they were.
REFS = ("actor_user_id", "actor_agent_id", "agent_id", "thread_id")
CONTENT = ("id", "actor_type", "actor_label", "verb", "object_type", "object_id", "data", "created_at")
SEAL_BATCH = 5000
VERIFY_BATCH = 5000


def sign(text: str) -> str:
    """HMAC-SHA256 of ``text`` with ``INBOX_AUDIT_SIGNING_KEY``, hex."""
    return hmac.new(settings.INBOX_AUDIT_SIGNING_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def signed(seq: int, hash_: str) -> str:
    return sign(f"audit-chain:{seq}:{hash_}")


def canonical(event: dict[str, Any], *, seq: int, refs: dict[str, Any]) -> str:
    """The event as the chain hashes it: its content, its sealed references and its place, as sorted JSON."""
    created = event["created_at"].astimezone(UTC).isoformat(timespec="microseconds")
    body = {name: event[name] for name in CONTENT} | {"created_at": created, "seq": seq, "refs": refs}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def link(prev: str, event: dict[str, Any], *, seq: int, refs: dict[str, Any]) -> str:
    return hashlib.sha256(f"{prev}\n{canonical(event, seq=seq, refs=refs)}".encode()).hexdigest()


def _event_values() -> Any:
    return AuditEvent.objects.values(*CONTENT, *REFS)


def _chain_for_update() -> AuditChain:
    chain = AuditChain.objects.select_for_update().order_by("pk").first()
    if chain is None:
        chain = AuditChain.objects.create(head_seq=0, head_hash=GENESIS, head_signature=signed(0, GENESIS))
    return chain


def _lock_out_writers() -> None:
    """On PostgreSQL, inside a transaction: wait until every transaction writing audit events has committed, and
    keep new ones out until this one ends. SQLite's IMMEDIATE transactions already exclude every other writer."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '200ms'")
        cursor.execute(f"LOCK TABLE {AuditEvent._meta.db_table} IN SHARE MODE")


def _committed_bound() -> int:
    """An event id at or below which every event has committed (none can commit there later): the newest id seen
    once no writer is left. New writers wait only for this one statement."""
    with transaction.atomic():
        _lock_out_writers()
        return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def seal_pending(*, batch: int = SEAL_BATCH) -> int:
    """Seal every committed event not yet in the chain, in id order, a batch per transaction. Returns how many
    were sealed; a pass that cannot see the writers finish within 200 ms leaves the rest to the next one."""
    try:
        bound = _committed_bound()
    except OperationalError:  # lock_timeout: a long writer holds the log; the next beat tick seals
        return 0
    sealed = 0
    while True:
        count = _seal_batch(bound, batch)
        sealed += count
        if count < batch:
            return sealed


def _seal_batch(bound: int, batch: int) -> int:
    with transaction.atomic():
        chain = _chain_for_update()  # one sealer at a time
        if chain.sealed_through >= bound:
            return 0
        unsealed = ~Exists(AuditSeal.objects.filter(event_id=OuterRef("pk")))
        events = list(
            _event_values().filter(unsealed, id__gt=chain.sealed_through, id__lte=bound).order_by("id")[:batch]
        )
        prev, seq, now = chain.head_hash, chain.head_seq, timezone.now()
        seals = []
        for event in events:
            seq += 1
            refs = {name: event[name] for name in REFS}
            prev = link(prev, event, seq=seq, refs=refs)
            seals.append(AuditSeal(seq=seq, event_id=event["id"], hash=prev, refs=refs, sealed_at=now))
        AuditSeal.objects.bulk_create(seals)
        chain.head_seq, chain.head_hash, chain.head_signature = seq, prev, signed(seq, prev)
        chain.sealed_through = events[-1]["id"] if len(events) == batch else bound
        chain.updated_at = now
        chain.save()
        return len(events)


@dataclass
class Verdict:
    ok: bool
    events_checked: int
    through_seq: int
    seconds: float
    problem: str = ""
    event_id: int | None = None


class ChainBroken(Exception):
    def __init__(self, problem: str, event_id: int | None) -> None:
        super().__init__(problem)
        self.problem, self.event_id = problem, event_id


def _seal_batches(after: int, through: int) -> Iterator[list[AuditSeal]]:
    while True:
        seals = list(AuditSeal.objects.filter(seq__gt=after, seq__lte=through).order_by("seq")[:VERIFY_BATCH])
        if not seals:
            return
        yield seals
        after = seals[-1].seq


def _events_of(seals: list[AuditSeal]) -> dict[int, dict[str, Any]]:
    """The events of a batch of seals by id: a range read when they were sealed close together, as they are."""
    ids = [seal.event_id for seal in seals]
    low, high = min(ids), max(ids)
    rows = (
        _event_values().filter(id__in=ids)
        if high - low > 4 * len(ids)
        else _event_values().filter(id__range=(low, high))
    )
    return {row["id"]: row for row in rows}


def _check_seal(seal: AuditSeal, event: dict[str, Any] | None, *, prev: str, expected_seq: int) -> None:
    if seal.seq != expected_seq:
        raise ChainBroken(
            f"Seal {expected_seq} is missing: the chain jumps to seal {seal.seq} (audit event {seal.event_id}); "
            "events were deleted or the chain was cut.",
            seal.event_id,
        )
    if event is None:
        raise ChainBroken(f"Audit event {seal.event_id} (seal {seal.seq}) was deleted.", seal.event_id)
    for name in REFS:
        if event[name] is not None and event[name] != seal.refs.get(name):
            raise ChainBroken(f"Audit event {seal.event_id} was edited: {name} changed.", seal.event_id)
    if link(prev, event, seq=seal.seq, refs=seal.refs) != seal.hash:
        raise ChainBroken(
            f"Audit event {seal.event_id} (seal {seal.seq}) does not match its seal: it was edited, moved, or "
            "inserted in place of another.",
            seal.event_id,
        )


def _start() -> tuple[int, str]:
    """Where the walk starts: after the newest purge checkpoint (its signature checked), else at the beginning."""
    checkpoint = AuditCheckpoint.objects.order_by("-seq").first()
    if checkpoint is None:
        return 0, GENESIS
    if not hmac.compare_digest(checkpoint.signature, signed(checkpoint.seq, checkpoint.hash)):
        raise ChainBroken(f"The purge checkpoint at seal {checkpoint.seq} is not signed with this key.", None)
    return checkpoint.seq, checkpoint.hash


def _check_head(chain: AuditChain | None, seq: int, prev: str) -> None:
    if chain is None:
        return
    if not hmac.compare_digest(chain.head_signature, signed(chain.head_seq, chain.head_hash)):
        raise ChainBroken("The chain's head is not signed with this key: it was edited.", None)
    if seq < chain.head_seq:
        raise ChainBroken(
            f"The chain ends at seal {seq}, but its signed head is seal {chain.head_seq}: the last "
            f"{chain.head_seq - seq} events were deleted.",
            None,
        )
    if seq == chain.head_seq and prev != chain.head_hash:
        raise ChainBroken(f"Seal {seq} does not match the chain's signed head.", None)


def _check_unsealed(chain: AuditChain | None) -> None:
    """Every event at or below ``sealed_through`` is in the chain: one that is not was written behind its back."""
    if chain is None:
        return
    unsealed = ~Exists(AuditSeal.objects.filter(event_id=OuterRef("pk")))
    stray = AuditEvent.objects.filter(unsealed, id__lte=chain.sealed_through).order_by("id").first()
    if stray is not None:
        raise ChainBroken(f"Audit event {stray.pk} was inserted into the sealed log behind the inbox's back.", stray.pk)


def verify(*, progress: Callable[[int, float], None] | None = None) -> Verdict:
    """Walk the whole chain in seal order, a batch of rows at a time (memory does not grow with the log), and
    report the first event that was edited, deleted, inserted or reordered. The outcome is recorded."""
    run = AuditVerification.objects.create()
    started = time.monotonic()
    checked, seq = 0, 0
    try:
        chain = AuditChain.objects.order_by("pk").first()  # the head as of now: later seals are the next walk's
        seq, prev = _start()
        for seals in _seal_batches(seq, chain.head_seq if chain is not None else 0):
            events = _events_of(seals)
            for seal in seals:
                _check_seal(seal, events.get(seal.event_id), prev=prev, expected_seq=seq + 1)
                seq, prev = seal.seq, seal.hash
            checked += len(seals)
            if progress is not None:
                progress(checked, time.monotonic() - started)
        _check_head(chain, seq, prev)
        _check_unsealed(chain)
        verdict = Verdict(True, checked, seq, time.monotonic() - started)
    except ChainBroken as broken:
        verdict = Verdict(False, checked, seq, time.monotonic() - started, broken.problem, broken.event_id)
    AuditVerification.objects.filter(pk=run.pk).update(
        finished_at=timezone.now(),
        events_checked=verdict.events_checked,
        through_seq=verdict.through_seq,
        ok=verdict.ok,
        problem=verdict.problem,
        event_id=verdict.event_id,
    )
    return verdict


def purge(*, before: datetime) -> AuditCheckpoint | None:
    """Delete the events sealed before the first one created at or after ``before`` (and their seals), and keep
    the last deleted seal's hash as a signed checkpoint the chain goes on from. None when nothing is old enough."""
    with transaction.atomic():
        chain = _chain_for_update()
        kept = AuditSeal.objects.filter(
            event_id__in=AuditEvent.objects.filter(created_at__gte=before).values("id")
        ).order_by("seq")
        first_kept = kept.values_list("seq", flat=True).first()
        cut = (first_kept - 1) if first_kept is not None else chain.head_seq
        start = AuditCheckpoint.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
        if cut <= start:
            return None
        last = AuditSeal.objects.get(seq=cut)
        doomed = AuditSeal.objects.filter(seq__lte=cut)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # the append-only triggers let this transaction delete
                cursor.execute("SET LOCAL inbox.audit_purge = 'on'")
        purged, _ = AuditEvent.objects.filter(id__in=doomed.values("event_id")).delete()
        doomed.delete()
        return AuditCheckpoint.objects.create(
            seq=cut, hash=last.hash, signature=signed(cut, last.hash), events_purged=purged, purged_before=before
        )
