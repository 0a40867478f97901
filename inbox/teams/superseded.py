"""Superseded items: when an agent finishes a run on a thread whose interrupts were still open (AG-UI interrupts
rule 4), the ingest closes them as superseded; their approvers learn by mail that they no longer need deciding
(and that nothing was sent). The ingest writes these notices in its transaction; a worker sends them after the
commit (the notices' doorbell), retried from their rows."""

from __future__ import annotations

import logging
from collections import defaultdict

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from inbox.audit.record import Actor, audit
from inbox.models import Decision, InboxItem, Notice, NotificationPreference
from inbox.teams import outbox
from inbox.teams.mail import absolute_url, email_message, recipients_of

log = logging.getLogger(__name__)


def notify_superseded(item_ids: list[int]) -> int:
    """Write and send the notices of the superseded items (``superseded_notices``). Returns the emails sent."""
    with transaction.atomic():
        notices = superseded_notices(item_ids)
    return outbox.deliver([notice.pk for notice in notices])


def superseded_notices(item_ids: list[int]) -> list[Notice]:
    """The notices to the approvers of the superseded items (who could decide them, wanting immediate mail, and
    anyone who had already voted on one): one mail per person and agent. Call inside a transaction."""
    items = list(
        InboxItem.objects.filter(pk__in=item_ids, outcome=InboxItem.Outcome.SUPERSEDED)
        .select_related("agent", "run")
        .order_by("agent_id", "run_id", "position")
    )
    by_agent: dict[int, list[InboxItem]] = defaultdict(list)
    for item in items:
        by_agent[item.agent_id].append(item)
    notices: list[Notice] = []
    for agent_items in by_agent.values():
        notices += _notify(agent_items)
    return notices


def _notify(items: list[InboxItem]) -> list[Notice]:
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
        return []
    name = agent.name or agent.slug
    count = len(items)
    subject = f"No longer needed: {count} item{'s' if count != 1 else ''} from {name} closed as superseded"
    context = {
        "agent": agent,
        "items": [{"item": item, "url": absolute_url(item.get_absolute_url())} for item in items],
        "note": items[0].status_note,
    }
    recipients = [users[pk] for pk in sorted(users)]
    messages = [(user, email_message(user, subject, "superseded", context)) for user in recipients]
    notices = outbox.email_notices(Notice.Kind.SUPERSEDED, messages)
    audit(
        actor=Actor.system("notifications"),
        verb="item.superseded_notified",
        obj=items[0],
        agent=agent,
        data={"items": [item.pk for item in items], "emailed": [u.get_username() for u in recipients]},
    )
    return notices


def notify_superseded_on_commit(item_ids: list[int]) -> None:
    """Inside the ingest's transaction: write the notices (in a savepoint: a notice that cannot be written must not
    fail the ingest; the items' pages say superseded either way) and ring their doorbell after the commit."""
    try:
        with transaction.atomic():
            notices = superseded_notices(list(item_ids))
    except Exception:  # noqa: BLE001 - the ingest stands without its notice
        log.exception("could not write the superseded notices of items %s", item_ids)
        return
    outbox.ring_on_commit(notices)


def on_items_superseded(sender: type, *, item_ids: list[int], **kwargs: object) -> None:
    """The ``items_superseded`` receiver: their approvers are told once the ingest commits."""
    notify_superseded_on_commit(item_ids)
