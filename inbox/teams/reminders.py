"""Reminders: one email per approver for items about to expire, each item reminded once; and the snoozes that
end (``snoozes_wake``), each reminding the one person who snoozed the item. Each email is a notice written in the
claim's transaction and sent after its commit (``inbox.teams.outbox``), retried from its row."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from inbox.access import approvers_of
from inbox.audit.record import Actor, audit_event
from inbox.core.sql import id_set, update_returning
from inbox.core.text import one_line
from inbox.expiry.services import AUDIT_BATCH
from inbox.live import push as live
from inbox.models import AuditEvent, InboxItem, Notice, NotificationPreference, Snooze
from inbox.teams import outbox
from inbox.teams.hours import closed_items_q
from inbox.teams.mail import email_message
from inbox.teams.summaries import item_summary, with_decision_links


def reminders_send(*, now: datetime | None = None) -> int:
    """Beat task body: claim every open item that expires within the lead time and was not reminded yet (and whose
    team works now, ``inbox.teams.hours``) and write its approvers' email notices, then (after commit) send them
    and push ``item.reminder``. Returns how many items."""
    now = now or timezone.now()
    lead = timedelta(seconds=settings.INBOX_REMINDER_LEAD_SECONDS)
    due = InboxItem.objects.filter(
        status=InboxItem.Status.OPEN, reminder_sent_at__isnull=True, expires_at__gt=now, expires_at__lte=now + lead
    ).exclude(closed_items_q(now=now))  # a team outside its business hours is reminded when it opens
    with transaction.atomic():
        rows = update_returning(
            due,
            values={"reminder_sent_at": now},
            guard={"status": InboxItem.Status.OPEN, "reminder_sent_at": None},
            returning=["id"],
        )
        if not rows:
            return 0
        items = list(InboxItem.objects.filter(pk__in=id_set(row[0] for row in rows)).select_related("agent", "thread"))
        recipients: dict[int, list] = {}
        for item in items:
            if item.agent_id not in recipients:
                recipients[item.agent_id] = list(approvers_of(item.agent_id))
        actor = Actor.system("reminders")
        AuditEvent.objects.bulk_create(
            [
                audit_event(
                    actor=actor,
                    verb="item.reminder_sent",
                    obj=item,
                    data={
                        "expiresAt": item.expires_at.isoformat(),
                        "recipients": [user.get_username() for user in recipients[item.agent_id]],
                    },
                    created_at=now,
                )
                for item in items
            ],
            batch_size=AUDIT_BATCH,
        )
        live.publish_many_on_commit(
            [
                (
                    live.groups_for(
                        agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]
                    ),
                    "item.reminder",
                    {
                        "item": item.pk,
                        "run": item.run_id,
                        "expiresAt": item.expires_at.isoformat(),
                        "message": f"{_title(item)} expires in {_minutes(item.expires_at - now)}.",
                    },
                )
                for item in items
            ]
        )
        # Notices of this transaction, sent after its commit and retried from their rows.
        outbox.deliver_on_commit(
            outbox.email_notices(
                Notice.Kind.REMINDER,
                [(user, _reminder_email(item, user, now)) for item in items for user in recipients[item.agent_id]],
            )
        )
    return len(items)


def _title(item: InboxItem) -> str:
    what = item.tool_name or item.reason
    return f"“{item.message[:80]}” ({what})" if item.message else f"The {what} request"


def _minutes(left: timedelta) -> str:
    minutes = max(1, round(left.total_seconds() / 60))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _reminder_email(item: InboxItem, user: Any, now: datetime) -> EmailMessage:
    url = settings.SITE_URL.rstrip("/") + item.get_absolute_url()
    body = (
        f"Hello {user.get_username()},\n\n"
        f"{item.agent} is waiting for a decision that expires in {_minutes(item.expires_at - now)} "
        f"(at {item.expires_at.isoformat()}):\n\n"
        f"  {item.message or item.reason}\n\n"
        f"Decide it here: {url}\n\n"
        "After it expires the agent's run can no longer be resumed.\n"
    )
    subject = f"Reminder: {item.tool_name or item.reason} for {item.agent} expires in {_minutes(item.expires_at - now)}"
    return EmailMessage(subject=one_line(subject), body=body, to=[user.email])


def snoozes_wake(*, now: datetime | None = None) -> int:
    """Beat task body: end every snooze whose time has come (``woken_at``, one UPDATE … RETURNING of the due
    ones through the ``snooze_due`` index, so a snooze wakes once however many beats overlap), then remind each
    person of the items that are still open through their notification settings: a mail at once (``immediate``),
    a line in their next digest (``digest``: ``inbox.teams.digests``), or nothing but the page (``off``). Their
    open pages hear ``item.reminder`` either way. Returns how many snoozes ended."""
    now = now or timezone.now()
    due = Snooze.objects.filter(woken_at__isnull=True, until__lte=now)
    with transaction.atomic():
        rows = update_returning(due, values={"woken_at": now}, guard={"woken_at": None}, returning=["id"])
        if not rows:
            return 0
        woken = list(
            Snooze.objects.filter(pk__in=id_set(row[0] for row in rows), item__status=InboxItem.Status.OPEN)
            .select_related("user", "item__agent", "item__thread", "item__run")
            .order_by("pk")
        )
        modes = dict(
            NotificationPreference.objects.filter(user__in=[snooze.user_id for snooze in woken]).values_list(
                "user_id", "email_mode"
            )
        )
        actor = Actor.system("snoozes")
        AuditEvent.objects.bulk_create(
            [
                audit_event(
                    actor=actor,
                    verb="item.snooze_ended",
                    obj=snooze.item,
                    data={"user": snooze.user.get_username(), "until": snooze.until.isoformat()},
                    created_at=now,
                )
                for snooze in woken
            ],
            batch_size=AUDIT_BATCH,
        )
        live.publish_many_on_commit(
            [
                (
                    [live.personal_group(snooze.user_id)],
                    "item.reminder",
                    {
                        "item": snooze.item_id,
                        "run": snooze.item.run_id,
                        "expiresAt": snooze.item.expires_at.isoformat(),
                        "message": f"{_title(snooze.item)} is back: you snoozed it until {snooze.until:%H:%M}.",
                    },
                )
                for snooze in woken
            ]
        )
        outbox.deliver_on_commit(
            outbox.email_notices(
                Notice.Kind.SNOOZE,
                [
                    (snooze.user, _snooze_email(snooze))
                    for snooze in woken
                    if snooze.user.email
                    and modes.get(snooze.user_id, NotificationPreference.Mode.IMMEDIATE) == "immediate"
                ],
            )
        )
    return len(rows)


def _snooze_email(snooze: Snooze) -> EmailMessage:
    item = snooze.item
    summary = with_decision_links(item_summary(item), item, user=snooze.user)
    subject = f"Back from snooze: {item.tool_name or item.reason}: {item.message or item.interrupt_id}"[:150]
    return email_message(snooze.user, subject, "snoozed_back", {"item": summary, "until": snooze.until})
