"""An item's provenance as the audit log holds it: its run's, its own and its resume's events, each with its place
in the hash chain, what the last verification of the chain said about them, and who was shown the item when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from inbox.models import AuditEvent, AuditSeal, AuditVerification, InboxItem, ItemSeen, Resume

MAX_EVENTS = 200


@dataclass(frozen=True)
class ChainMark:
    """Whether the item's events are sealed, and whether the last ``audit_verify`` walked past them unbroken."""

    events: int
    sealed: int
    last_seal: int | None
    verified_at: datetime | None
    verified_through: int
    verification_ok: bool | None
    problem: str

    @property
    def verified(self) -> bool:
        return (
            self.events > 0
            and self.sealed == self.events
            and bool(self.verification_ok)
            and self.last_seal is not None
            and self.last_seal <= self.verified_through
        )

    @property
    def words(self) -> str:
        if self.events == 0:
            return "No audit events."
        if self.verification_ok is False:
            return f"The last verification found the audit log altered: {self.problem}"
        if self.sealed < self.events:
            return f"{self.events - self.sealed} of {self.events} events not sealed yet (sealed within seconds)."
        if self.verified:
            return f"Sealed in the audit chain and verified through seal {self.verified_through}."
        return f"Sealed in the audit chain (through seal {self.last_seal}); not verified since."


@dataclass(frozen=True)
class Provenance:
    events: list[dict[str, Any]]
    chain: ChainMark
    seen: list[dict[str, Any]]


def item_provenance(item: InboxItem) -> Provenance:
    resume = Resume.objects.filter(run_id=item.run_id).values_list("pk", flat=True).first()
    objects = Q(object_type="inboxitem", object_id=str(item.pk)) | Q(object_type="run", object_id=str(item.run_id))
    if resume is not None:
        objects |= Q(object_type="resume", object_id=str(resume))
    events: list[dict[str, Any]] = [
        dict(row)
        for row in AuditEvent.objects.filter(objects)
        .order_by("created_at", "id")
        .values("id", "created_at", "actor_type", "actor_label", "verb", "object_type", "object_id", "data")[
            :MAX_EVENTS
        ]
    ]
    seals = dict(
        AuditSeal.objects.filter(event_id__in=[event["id"] for event in events]).values_list("event_id", "seq")
    )
    for event in events:
        event["seal"] = seals.get(event["id"])
    last = AuditVerification.objects.filter(finished_at__isnull=False).order_by("-started_at").first()
    mark = ChainMark(
        events=len(events),
        sealed=len(seals),
        last_seal=max(seals.values(), default=None),
        verified_at=last.finished_at if last else None,
        verified_through=last.through_seq if last else 0,
        verification_ok=last.ok if last else None,
        problem=last.problem if last else "",
    )
    seen = [
        {"user": username, "at": at}
        for username, at in ItemSeen.objects.filter(item=item)
        .order_by("first_seen_at", "id")
        .values_list("user__username", "first_seen_at")[:MAX_EVENTS]
    ]
    return Provenance(events, mark, seen)
