"""The Celery tasks of team notifications. Their names are fixed strings (``inbox.notifications.*``): queued
messages and the beat schedule (``CELERY_BEAT_SCHEDULE``) name them, wherever the code lives. Each loads rows by
id and calls the module of its concern; every e-mail and webhook call is sent from its notice row
(``inbox.teams.outbox``: ``send_notices`` is a channel's doorbell, ``sweep_notices`` the beat recovery).

The announcements import ``announce_new_runs`` to queue it, so the announcing task imports
``inbox.teams.notifications`` when it runs, not at load time."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task

from inbox.models import Notice, TeamWebhook
from inbox.teams import outbox
from inbox.teams.away import delegation_sweep
from inbox.teams.digests import mail_digests
from inbox.teams.escalations import escalation_sweep
from inbox.teams.reminders import reminders_send, snoozes_wake

log = logging.getLogger(__name__)


@shared_task(name="inbox.notifications.announce_new_runs")
def announce_new_runs() -> int:
    """Announce the runs stored with open items since the last announcement (``notifications.announce_new_runs_now``);
    returns the emails sent."""
    from inbox.teams.notifications import announce_new_runs_now

    return announce_new_runs_now()


@shared_task(name="inbox.notifications.notify_missed_runs")
def notify_missed_runs() -> int:
    """Beat: announce the runs whose announcement was lost (``notifications.announce_missed_runs``)."""
    from inbox.teams.notifications import announce_missed_runs

    return announce_missed_runs()


@shared_task(name="inbox.notifications.send_digests")
def send_digests() -> int:
    """Beat: mail each digest-mode user their digest (``digests.mail_digests``); returns the emails sent."""
    return mail_digests()


@shared_task(name="inbox.notifications.escalate")
def escalate() -> int:
    """Beat: fire the escalation rules that are due (``escalations.escalation_sweep``) and hand the items of people
    whose away period has begun to their delegates (``away.delegation_sweep``); returns how many of both."""
    return escalation_sweep() + delegation_sweep()


@shared_task(name="inbox.notifications.send_notices", acks_late=True)
def send_notices(channel: str) -> int:
    """The doorbell of a channel (``email`` or ``webhook``): send its due notices (``outbox.send_due``)."""
    if channel not in Notice.Channel.values:
        return 0
    return outbox.send_due(channel)


@shared_task(name="inbox.notifications.sweep_notices")
def sweep_notices() -> int:
    """Beat: recover notices whose worker or queue message was lost (``outbox.notices_sweep``)."""
    return outbox.notices_sweep()


@shared_task(name="inbox.notifications.deliver_webhook", acks_late=True)
def deliver_webhook(webhook_id: int, body: str) -> str:
    """A webhook call given as a message (queued by an earlier release): stored as a notice, then sent from its
    row like every other (``outbox.send_webhook``); retries go on from the row."""
    webhook = TeamWebhook.objects.filter(pk=webhook_id).select_related("team").first()
    if webhook is None:
        return "disabled"
    notice = outbox.webhook_notice(
        Notice.Kind.ANNOUNCEMENT, webhook, body.encode(), key=uuid.uuid4(), event="items.created"
    )
    claimed = outbox.claim_ids([notice.pk])
    return outbox.send_webhook(claimed[0]) if claimed else "not claimed"


@shared_task(name="inbox.notifications.notify_superseded")
def notify_superseded_items(item_ids: list[int]) -> int:
    """Tell the approvers of items an agent's later run superseded (``superseded.notify_superseded``)."""
    from inbox.teams.superseded import notify_superseded

    return notify_superseded(item_ids)


@shared_task(name="inbox.tasks.send_expiry_reminders")
def send_expiry_reminders() -> int:

    return reminders_send()


@shared_task(name="inbox.tasks.wake_snoozed_items")
def wake_snoozed_items() -> int:

    return snoozes_wake()
