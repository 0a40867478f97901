"""What the pages read about escalations and delegation (no writes here)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from inbox.models import AuditEvent, AwayStatus, Escalation, InboxItem

DELEGATION_VERBS = ("item.delegated", "item.delegation_refused", "item.assigned", "item.claimed")


def item_team_notes(item: InboxItem) -> dict[str, Any]:
    """An item's escalations, oldest first (``sentence`` says to whom, when and why); while it is open, whether
    its holder holds it for someone away (the latest claim, assignment or hand-over in the audit log says so) and
    whether its holder is away themselves."""
    escalations = list(Escalation.objects.filter(item_id=item.pk).order_by("fired_at", "pk"))
    delegation = None
    holder_away = None
    if item.is_open and item.claimed_by_id is not None:
        latest = (
            AuditEvent.objects.filter(object_type="inboxitem", object_id=str(item.pk), verb__in=DELEGATION_VERBS)
            .order_by("-created_at", "-id")
            .first()
        )
        if latest is not None and latest.verb == "item.delegated":
            delegation = {"from": latest.data.get("from"), "to": latest.data.get("to"), "at": latest.created_at}
        elif latest is not None and latest.data.get("delegatedFrom"):
            delegation = {
                "from": latest.data["delegatedFrom"],
                "to": latest.data.get("holder"),
                "at": latest.created_at,
            }
        now = timezone.now()
        holder_away = (
            AwayStatus.objects.select_related("delegate")
            .filter(user_id=item.claimed_by_id, starts_at__lte=now, ends_at__gt=now)
            .first()
        )
    return {"escalations": escalations, "delegation": delegation, "holder_away": holder_away, "item": item}
