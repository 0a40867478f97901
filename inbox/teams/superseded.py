"""Superseded items: when an agent finishes a run on a thread whose interrupts were still open (AG-UI interrupts
rule 4), the ingest closes them as superseded; their approvers learn by mail that they no longer need deciding
(and that nothing was sent). The ingest queues ``notify_superseded`` after its commit."""

from __future__ import annotations

import logging
from collections import defaultdict

from celery import current_app
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.mail import get_connection
from django.db import transaction

from inbox.audit.record import Actor, audit
from inbox.models import Decision, InboxItem, NotificationPreference
from inbox.teams.mail import absolute_url, email_message, recipients_of

log = logging.getLogger(__name__)


def notify_superseded(item_ids: list[int]) -> int:
    """Email the approvers of the superseded items (who could decide them, wanting immediate mail, and anyone
    who had already voted on one): one mail per person and agent. Returns how many were sent."""
    items = list(
        InboxItem.objects.filter(pk__in=item_ids, outcome=InboxItem.Outcome.SUPERSEDED)
        .select_related("agent", "run")
        .order_by("agent_id", "run_id", "position")
    )
    by_agent: dict[int, list[InboxItem]] = defaultdict(list)
    for item in items:
        by_agent[item.agent_id].append(item)
    sent = 0
    for agent_items in by_agent.values():
        sent += _notify(agent_items)
    return sent


def _notify(items: list[InboxItem]) -> int:
    from django.contrib.auth import get_user_model

    agent = items[0].agent
    users: dict[int, AbstractBaseUser] = {}
    for team_id in {item.routed_team_id for item in items}:
        for user in recipients_of(agent, NotificationPreference.Mode.IMMEDIATE, team_id=team_id):
            users[user.pk] = user
    voters = Decision.objects.filter(item__in=items).values_list("user_id", flat=True)
    for user in (
        get_user_model()
        .objects.filter(pk__in=voters, is_active=True)
        .exclude(email="")
        .exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
    ):
        users[user.pk] = user
    if not users:
        return 0
    name = agent.name or agent.slug
    count = len(items)
    subject = f"No longer needed: {count} item{'s' if count != 1 else ''} from {name} closed as superseded"
    context = {
        "agent": agent,
        "items": [{"item": item, "url": absolute_url(item.get_absolute_url())} for item in items],
        "note": items[0].status_note,
    }
    recipients = [users[pk] for pk in sorted(users)]
    messages = [email_message(user, subject, "superseded", context) for user in recipients]
    sent = get_connection().send_messages(messages) or 0
    audit(
        actor=Actor.system("notifications"),
        verb="item.superseded_notified",
        obj=items[0],
        agent=agent,
        data={"items": [item.pk for item in items], "emailed": [u.get_username() for u in recipients]},
    )
    return sent


def notify_superseded_on_commit(item_ids: list[int]) -> None:
    """Queue ``notify_superseded`` (the task ``inbox.notifications.notify_superseded`` in ``inbox.teams.tasks``,
    sent by name: the ingest must not import the tasks' own imports) once the ingest commits; a broker that is
    down must not fail the ingest (the items' pages say superseded either way)."""

    def send() -> None:
        try:
            current_app.send_task("inbox.notifications.notify_superseded", args=[list(item_ids)])
        except Exception:  # noqa: BLE001 - best effort, like the failure notice
            log.exception("could not queue the superseded notice for items %s", item_ids)

    transaction.on_commit(send)


def on_items_superseded(sender: type, *, item_ids: list[int], **kwargs: object) -> None:
    """The ``items_superseded`` receiver: their approvers are told once the ingest commits."""
    notify_superseded_on_commit(item_ids)
