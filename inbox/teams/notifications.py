"""Announcing new items to the agent's teams: email to the members who want it at once, and a signed webhook
per team (digests: ``inbox.teams.digests``; webhook bodies and signatures: ``inbox.teams.webhooks``; failed
deliveries: ``inbox.teams.failures``; the Celery tasks: ``inbox.teams.tasks``).

Flow: a run stored with open items has ``notified_at`` NULL. ``notify_on_ingest`` (a ``run_ingested``
receiver) queues ``notify_new_runs`` for it once the ingest commits. That task claims each run by setting
``notified_at``, emails the team members who want immediate mail and queues one ``deliver_webhook`` per enabled
team webhook.
``notify_missed_runs`` (beat) announces runs whose task was lost. ``deliver_webhook`` POSTs the same bytes on every retry, signed with
``X-Inbox-Signature: sha256=<hex hmac of body>``, retrying transport errors and 5xx with backoff.
``send_digests`` (Celery beat) mails digest users what arrived since their last digest.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.core.mail import get_connection
from django.db import transaction
from django.utils import timezone

from agents.models import Agent
from inbox.audit.record import Actor, audit
from inbox.core.sql import id_set, update_returning
from inbox.models import InboxItem, NotificationPreference, Run, TeamWebhook
from inbox.teams.mail import email_message, recipients_of
from inbox.teams.summaries import item_summary, with_decision_links
from inbox.teams.tasks import deliver_webhook, notify_new_runs
from inbox.teams.webhooks import webhook_body

log = logging.getLogger(__name__)


ANNOUNCE_BATCH = 500  # runs per notify_new_runs message (beat's catch-up)


def notify_on_ingest(*, run: Run, items: list[InboxItem], **kwargs: object) -> None:
    """Receives ``run_ingested``, inside the ingest transaction: a run stored with open items (``notified_at``
    NULL) is announced by ``notify_new_runs`` once the transaction commits, so the task sees what the agent's
    policies decided meanwhile.

    Celery's ``delay_on_commit``, made robust: a broker that is down must not fail an ingest that is already
    committed. Django logs the error and the run keeps ``notified_at`` NULL, so ``notify_missed_runs`` (beat)
    announces it after the grace time."""
    if run.notified_at is None:

        def announce() -> None:
            notify_new_runs.delay([run.pk])

        transaction.on_commit(announce, robust=True)


def _claim_runs(run_ids: list[int], now) -> list[int]:
    """Mark the runs announced; returns the ones this call took (another copy of the task, or beat, may
    have taken some already: a run is announced once)."""
    if not run_ids:
        return []
    rows = update_returning(
        Run.objects.filter(pk__in=id_set(run_ids)),
        values={"notified_at": now},
        guard={"notified_at": None},
        returning=["id"],
    )
    return [row[0] for row in rows]


def announce_runs(run_ids: list[int]) -> int:
    """Announce the open items of the given runs: email the team members who want immediate mail and
    queue the team webhooks, one message per agent. Each run is claimed first, so a duplicate task or beat
    announces nothing twice; if sending fails the agent's runs are released for beat to try again.
    Returns the emails sent."""
    claimed = _claim_runs(list(run_ids), timezone.now())
    items = list(
        InboxItem.objects.filter(run__in=id_set(claimed), status=InboxItem.Status.OPEN)
        .select_related("agent", "thread", "run")
        .order_by("agent_id", "run_id", "position")
    )
    # One announcement per agent and team: items a policy routed to another team go to that team.
    by_agent: dict[tuple[int, int | None], list[InboxItem]] = defaultdict(list)
    for item in items:
        by_agent[(item.agent_id, item.routed_team_id)].append(item)
    sent = 0
    for (_, routed_team_id), agent_items in by_agent.items():
        try:
            sent += _announce(agent_items[0].agent, agent_items, routed_team_id=routed_team_id)
        except Exception:
            runs = {item.run_id for item in agent_items}
            Run.objects.filter(pk__in=runs).update(notified_at=None)
            log.exception("announcing runs %s failed; released for notify_missed_runs", sorted(runs))
    return sent


def _announce(agent: Agent, agent_items: list[InboxItem], *, routed_team_id: int | None = None) -> int:
    """Email first, then queue the webhooks: if the mail server fails, the runs are released and retried
    without the webhooks having gone out twice (each delivery then retries on its own)."""
    sent = _email_announcement(agent, agent_items, routed_team_id=routed_team_id)
    teams = [routed_team_id] if routed_team_id is not None else agent.teams.all()
    for webhook in TeamWebhook.objects.filter(team__in=teams, enabled=True).select_related("team"):
        body = webhook_body(agent=agent, team_name=webhook.team.name, items=agent_items, team_id=webhook.team_id)
        deliver_webhook.delay(webhook.pk, body.decode())
    return sent


def _email_announcement(agent: Agent, agent_items: list[InboxItem], *, routed_team_id: int | None = None) -> int:
    recipients = recipients_of(agent, NotificationPreference.Mode.IMMEDIATE, team_id=routed_team_id)
    if not recipients:
        return 0
    count = len(agent_items)
    first = agent_items[0]
    subject = f"[Inbox] {first.tool_name or first.reason}: {first.message or first.interrupt_id}"[:150]
    if count > 1:
        subject = f"[Inbox] {count} new items from {agent.name or agent.slug}"
    summaries = [item_summary(item) for item in agent_items]
    messages = [
        email_message(
            user,
            subject,
            "new_items",
            {
                "agent": agent,
                "items": [
                    with_decision_links(summary, item, user=user)
                    for summary, item in zip(summaries, agent_items, strict=True)
                ],
            },
        )
        for user in recipients
    ]
    sent = get_connection().send_messages(messages) or 0
    emailed = sorted(user.get_username() for user in recipients)
    audit(
        actor=Actor.system("notifications"),
        verb="item.notified",
        obj=first,
        agent=agent,
        data={"items": [item.pk for item in agent_items], "emailed": emailed},
    )
    return sent


def announce_missed_runs() -> int:
    """Beat: announce runs still unannounced ``INBOX_ANNOUNCE_GRACE_SECONDS`` after they were stored (the
    queued task was lost: a broker outage, a process that died right after its commit). Returns the
    emails sent."""
    cutoff = timezone.now() - timedelta(seconds=settings.INBOX_ANNOUNCE_GRACE_SECONDS)
    missed = Run.objects.filter(notified_at__isnull=True, created_at__lt=cutoff).order_by("pk")
    sent, after = 0, 0
    # Walk by id: a run released again by a failed send is left for the next beat, not retried in a loop.
    while run_ids := list(missed.filter(pk__gt=after).values_list("pk", flat=True)[:ANNOUNCE_BATCH]):
        sent += announce_runs(run_ids)
        after = run_ids[-1]
    return sent
