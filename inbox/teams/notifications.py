"""Announcing new items to the agent's teams: e-mail to the members who want it at once, and a webhook call per
team (digests, webhooks and failed deliveries have modules of their own; sending every notice: ``outbox``).

``notify_on_ingest`` (a ``run_ingested`` receiver) queues one ``announce_new_runs`` shortly after the ingest
commits, so a burst of runs is announced together; each run is claimed through ``notified_at`` in the transaction
that writes its notices, so it is announced once, and ``announce_missed_runs`` (beat) announces those whose task
was lost (docs/teams.md)."""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from inbox.audit.record import Actor, audit
from inbox.core.sql import id_set, update_returning
from inbox.models import InboxItem, Notice, NotificationPreference, Run, TeamWebhook
from inbox.teams import outbox
from inbox.teams.mail import absolute_url, email_message, recipients_of
from inbox.teams.summaries import item_summary, with_decision_links
from inbox.teams.tasks import announce_new_runs
from inbox.teams.webhooks import webhook_body

log = logging.getLogger(__name__)


ANNOUNCE_BATCH = 100  # runs per announcement: one e-mail per person and agent, one webhook call per team
ANNOUNCE_LISTED = 25  # items an announcement lists; it counts the rest and links to the agent's items
# The mark, in the shared cache, of an ``announce_new_runs`` queued and not yet started.
ANNOUNCEMENT_QUEUED = "announcement-queued"


def notify_on_ingest(*, run: Run, items: list[InboxItem], **kwargs: object) -> None:
    """Receives ``run_ingested``, inside the ingest transaction: a run stored with open items (``notified_at``
    NULL) is announced by ``announce_new_runs`` once the transaction commits, so the task sees what the agent's
    policies decided meanwhile.

    Robust like Celery's ``delay_on_commit`` should be: Redis down must not fail an ingest that is already
    committed. Django logs the error and the run keeps ``notified_at`` NULL, so ``notify_missed_runs`` (beat)
    announces it after the grace time."""
    if run.notified_at is None:
        transaction.on_commit(queue_announcement, robust=True)


def queue_announcement() -> None:
    """Queue ``announce_new_runs`` ``INBOX_ANNOUNCE_DELAY_SECONDS`` ahead, unless one is queued and has not
    started yet: that one will announce this run too (it reads every unannounced run when it starts, and it
    clears the mark before reading). The mark lapses after ``INBOX_ANNOUNCE_GRACE_SECONDS``: if its task was
    lost, later runs queue a new one, and beat announces the runs in between."""
    cache = caches["shared"]
    if not cache.add(ANNOUNCEMENT_QUEUED, True, timeout=settings.INBOX_ANNOUNCE_GRACE_SECONDS):
        return
    try:
        announce_new_runs.apply_async(countdown=settings.INBOX_ANNOUNCE_DELAY_SECONDS)
    except Exception:
        cache.delete(ANNOUNCEMENT_QUEUED)  # nothing queued: the next run tries again
        raise


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
    """Announce the open items of the given runs: one transaction claims the runs (a duplicate task or beat
    announces nothing twice) and writes the notices, one message per agent and team for each recipient and
    webhook; after the commit they are sent, each on its own (a mail server that fails holds back no webhook, and
    every failed notice is retried from its row). Call outside a transaction. Returns the emails sent."""
    with transaction.atomic():
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
        notices: list[Notice] = []
        for (_, routed_team_id), agent_items in by_agent.items():
            notices += _announce(agent_items[0].agent, agent_items, routed_team_id=routed_team_id)
    return outbox.deliver([notice.pk for notice in notices])


def _announce(agent: Agent, agent_items: list[InboxItem], *, routed_team_id: int | None = None) -> list[Notice]:
    """The announcement's notices: one webhook call per enabled webhook of the teams, one e-mail per recipient."""
    notices = []
    teams = [routed_team_id] if routed_team_id is not None else agent.teams.all()
    for webhook in TeamWebhook.objects.filter(team__in=teams, enabled=True).select_related("team"):
        key = uuid.uuid4()
        body = webhook_body(
            agent=agent, team_name=webhook.team.name, items=agent_items, team_id=webhook.team_id, delivery_id=str(key)
        )
        notices.append(outbox.webhook_notice(Notice.Kind.ANNOUNCEMENT, webhook, body, key=key, event="items.created"))
    return notices + _email_announcement(agent, agent_items, routed_team_id=routed_team_id)


def _email_announcement(
    agent: Agent, agent_items: list[InboxItem], *, routed_team_id: int | None = None
) -> list[Notice]:
    recipients = recipients_of(agent, NotificationPreference.Mode.IMMEDIATE, team_id=routed_team_id)
    if not recipients:
        return []
    count = len(agent_items)
    first = agent_items[0]
    subject = f"[Inbox] {first.tool_name or first.reason}: {first.message or first.interrupt_id}"[:150]
    if count > 1:
        subject = f"[Inbox] {count} new items from {agent.name or agent.slug}"
    listed = agent_items[:ANNOUNCE_LISTED]
    summaries = [item_summary(item) for item in listed]
    context = {
        "agent": agent,
        "count": count,
        "more": count - len(listed),
        "agent_url": absolute_url(f"{reverse('inbox:list')}?{urlencode({'agent': agent.slug})}"),
    }
    messages = [
        (
            user,
            email_message(
                user,
                subject,
                "new_items",
                {
                    **context,
                    "items": [
                        with_decision_links(summary, item, user=user)
                        for summary, item in zip(summaries, listed, strict=True)
                    ],
                },
            ),
        )
        for user in recipients
    ]
    notices = outbox.email_notices(Notice.Kind.ANNOUNCEMENT, messages)
    emailed = sorted(user.get_username() for user in recipients)
    audit(
        actor=Actor.system("notifications"),
        verb="item.notified",
        obj=first,
        agent=agent,
        data={"items": [item.pk for item in agent_items], "emailed": emailed},
    )
    return notices


def announce_new_runs_now() -> int:
    """The task queued by ``queue_announcement``: announce every run stored with open items and not announced
    yet, up to ``INBOX_ANNOUNCE_GRACE_SECONDS`` old (older ones are beat's).
    Returns the emails sent."""
    # Cleared before reading: a run committed from now on queues the next task; one committed before is read here.
    caches["shared"].delete(ANNOUNCEMENT_QUEUED)
    cutoff = timezone.now() - timedelta(seconds=settings.INBOX_ANNOUNCE_GRACE_SECONDS)
    return _announce_all(Run.objects.filter(notified_at__isnull=True, created_at__gte=cutoff))


def announce_missed_runs() -> int:
    """Beat: announce runs still unannounced ``INBOX_ANNOUNCE_GRACE_SECONDS`` after they were stored (the
    queued task was lost: a broker outage, a process that died right after its commit). Returns the
    emails sent."""
    cutoff = timezone.now() - timedelta(seconds=settings.INBOX_ANNOUNCE_GRACE_SECONDS)
    return _announce_all(Run.objects.filter(notified_at__isnull=True, created_at__lt=cutoff))


def _announce_all(unannounced: QuerySet[Run]) -> int:
    """Announce the given unannounced runs, ``ANNOUNCE_BATCH`` at a time, in the order they were stored."""
    sent, after = 0, 0
    while run_ids := list(
        unannounced.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[:ANNOUNCE_BATCH]
    ):
        sent += announce_runs(run_ids)
        after = run_ids[-1]
    return sent
