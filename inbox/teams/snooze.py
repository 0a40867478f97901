"""Snoozing: an open item out of one person's Open list until a time they choose, never past the time it must be
decided by. Their colleagues still see it. At that time the wake sweep (``inbox.teams.reminders.snoozes_wake``)
brings it back and reminds them through their notification settings. Snoozing and unsnoozing are audited."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from inbox.audit.record import Actor, audit
from inbox.core.errors import ApplicationError
from inbox.decisions.rules import check_open, check_visible
from inbox.listing.selectors import with_truth
from inbox.models import InboxItem, Snooze

# The times a person picks from (the page's menu and the API's ``until``), in their words.
PRESETS = {"1h": "In 1 hour", "tomorrow": "Tomorrow at 9:00", "expiry": "Before it expires"}
MORNING = time(9, 0)


@dataclass(frozen=True)
class SnoozeTime:
    until: datetime
    clamped: bool  # the time asked for was past the item's deadline: brought forward to ``latest``
    deadline: datetime


def latest_wake(deadline: datetime) -> datetime:
    """The latest a snooze may end: the reminder lead (``INBOX_REMINDER_LEAD_SECONDS``) before the deadline, so
    the reminder comes while there is still time to decide."""
    return deadline - timedelta(seconds=settings.INBOX_REMINDER_LEAD_SECONDS)


def snooze_time(choice: str, *, deadline: datetime, now: datetime) -> SnoozeTime:
    """When a snooze of ``choice`` (a preset of ``PRESETS`` or an ISO 8601 time) ends for an item that must be
    decided by ``deadline``: never later than ``latest_wake(deadline)``."""
    latest = latest_wake(deadline)
    if latest <= now:
        raise ApplicationError.invalid(
            "until",
            f"it must be decided by {deadline:%H:%M %Z}: too soon to snooze",
            code="expires_soon",
        )
    choice = (choice or "").strip()
    if choice == "1h":
        wanted = now + timedelta(hours=1)
    elif choice == "tomorrow":
        local = timezone.localtime(now)
        wanted = timezone.make_aware(datetime.combine(local.date() + timedelta(days=1), MORNING))
    elif choice == "expiry":
        wanted = latest
    else:
        wanted = _parse_time(choice)
        if wanted <= now:
            raise ApplicationError.invalid("until", "must be in the future", code="invalid_snooze")
    return SnoozeTime(until=min(wanted, latest), clamped=wanted > latest, deadline=deadline)


def _parse_time(text: str) -> datetime:
    try:
        parsed = parse_datetime(text) if text else None
    except ValueError:
        parsed = None
    if parsed is None:
        presets = ", ".join(PRESETS)
        raise ApplicationError.invalid(
            "until", f"one of {presets}, or a date and time (ISO 8601)", code="invalid_snooze"
        )
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


@transaction.atomic
def item_snooze(*, item_id: int, user: Any, choice: str, now: datetime | None = None) -> tuple[Snooze, SnoozeTime]:
    """Snooze the item for ``user`` until ``choice`` (``snooze_time``); snoozing again moves the time."""
    now = now or timezone.now()
    check_visible(item_id, user)
    item = with_truth(InboxItem.objects.filter(pk=item_id)).select_related("agent", "thread").get()
    check_open(item)
    when = snooze_time(choice, deadline=item.run_deadline or item.expires_at, now=now)
    snooze, _ = Snooze.objects.update_or_create(
        user=user,
        item=item,
        defaults={"until": when.until, "clamped": when.clamped, "created_at": now, "woken_at": None},
    )
    audit(
        actor=Actor.for_user(user),
        verb="item.snoozed",
        obj=item,
        data={"until": when.until.isoformat(), "clamped": when.clamped, "asked": choice},
    )
    return snooze, when


@transaction.atomic
def item_unsnooze(*, item_id: int, user: Any) -> bool:
    """Bring the item back to ``user``'s Open list now; False when they had not snoozed it."""
    check_visible(item_id, user)
    snooze = active_snoozes(user).filter(item_id=item_id).select_related("item").first()
    if snooze is None:
        return False
    snooze.delete()
    audit(actor=Actor.for_user(user), verb="item.unsnoozed", obj=snooze.item, data={"until": snooze.until.isoformat()})
    return True


def active_snoozes(user: Any):
    """``user``'s snoozes still in force (the list's ``snoozed_by``, as rows)."""
    return Snooze.objects.filter(user_id=user.pk, woken_at__isnull=True, until__gt=timezone.now())


def snooze_of(user: Any, item: InboxItem) -> Snooze | None:
    """``user``'s snooze of ``item`` in force, for the item page."""
    if not user.is_authenticated:
        return None
    return active_snoozes(user).filter(item=item).first()
