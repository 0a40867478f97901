"""Telling the agent's teams about new items: email (at once, or a periodic digest, per user) and an
optional signed webhook per team that a chat tool can consume.

Flow: a run stored with open items has ``notified_at`` NULL. ``notify_on_ingest`` (a ``run_ingested``
receiver) queues ``notify_new_runs`` for it once the ingest commits. That task claims each run by setting
``notified_at``, emails the team members who want immediate mail and queues one ``deliver_webhook`` per enabled
team webhook.
``notify_missed_runs`` (beat) announces runs whose task was lost. ``deliver_webhook`` POSTs the same bytes on every retry, signed with
``X-Inbox-Signature: sha256=<hex hmac of body>``, retrying transport errors and 5xx with backoff.
``send_digests`` (Celery beat) mails digest users what arrived since their last digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import random
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from typing import Any

import httpx
from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from agents.models import Agent
from inbox import access
from inbox.access import approvers_of
from inbox.audit.record import Actor, audit
from inbox.core.sql import id_set, update_returning
from inbox.core.text import one_line
from inbox.decisions.links import links_for
from inbox.models import Decision, InboxItem, NotificationPreference, Resume, Run, TeamWebhook

log = logging.getLogger(__name__)


# Retries with capped, jittered backoff; the first digest covers DIGEST_SECONDS (see config/settings.py).
WEBHOOK_MAX_RETRIES = settings.INBOX_WEBHOOK_MAX_RETRIES


WEBHOOK_BACKOFF_BASE = settings.INBOX_WEBHOOK_BACKOFF_BASE


WEBHOOK_BACKOFF_CAP = settings.INBOX_WEBHOOK_BACKOFF_CAP


WEBHOOK_TIMEOUT = settings.INBOX_WEBHOOK_TIMEOUT


DIGEST_SECONDS = settings.INBOX_DIGEST_SECONDS


ANNOUNCE_BATCH = 500  # runs per notify_new_runs message (beat's catch-up)


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def sign(secret: str, body: bytes) -> str:
    """The legacy ``X-Inbox-Signature`` (no timestamp: a captured delivery could be replayed). Kept for one
    release beside the Standard Webhooks headers; receivers should verify ``webhook-signature``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signing_key(secret: str) -> bytes:
    """Standard Webhooks keys: a ``whsec_<base64>`` secret signs with its decoded bytes (so the spec's libraries
    take it as is); any other secret signs with its UTF-8 bytes."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret.removeprefix("whsec_") + "==")
        except binascii.Error:
            pass
    return secret.encode()


def standard_webhook_headers(secret: str, *, message_id: str, body: bytes, timestamp: int) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` as the Standard Webhooks spec signs them:
    ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``. Receivers refuse stale timestamps (replays) and
    duplicate ids (retries of one delivery share its id)."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = base64.b64encode(hmac.new(signing_key(secret), signed, hashlib.sha256).digest()).decode()
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": f"v1,{digest}"}


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


def item_summary(item: InboxItem) -> dict[str, Any]:
    return {
        "id": item.pk,
        "interruptId": item.interrupt_id,
        "reason": item.reason,
        "message": item.message,
        "toolName": item.tool_name,
        "threadId": item.thread.thread_id,
        "runId": item.run.run_id,
        "expiresAt": item.expires_at.isoformat(),
        "url": absolute_url(item.get_absolute_url()),
    }


def with_decision_links(summary: dict[str, Any], item: InboxItem, **bound_to: Any) -> dict[str, Any]:
    """The summary plus ``decisionUrls`` ({"approve", "deny"}, absolute) for a yes/no item: signed,
    single-use links bound to one recipient (``user=``) or one team (``team_id=``); see inbox.decisions.links."""

    links = links_for(item, **bound_to)
    if links is None:
        return summary
    return {**summary, "decisionUrls": {action: absolute_url(path) for action, path in links.items()}}


def webhook_body(*, agent: Agent, team_name: str, items: list[InboxItem], team_id: int | None = None) -> bytes:
    summaries = [
        with_decision_links(item_summary(item), item, team_id=team_id) if team_id is not None else item_summary(item)
        for item in items
    ]
    lines = [f"{len(items)} new item(s) from {agent.name or agent.slug} need a decision:"]
    lines += [f"• {s['toolName'] or s['reason']}: {s['message'] or s['interruptId']} — {s['url']}" for s in summaries]
    body = {
        "event": "items.created",
        "deliveryId": str(uuid.uuid4()),
        "team": team_name,
        "agent": {"slug": agent.slug, "name": agent.name},
        "items": summaries,
        # Plain text a chat tool can post as is (Slack-style incoming webhooks read "text").
        "text": "\n".join(lines),
    }
    return json.dumps(body, ensure_ascii=False).encode()


def _recipients(agent: Agent, mode: str, *, team_id: int | None = None) -> list[Any]:
    """Who decides the agent's items (its teams, or staff when it has none; see ``approvers_of``) and wants
    mail in ``mode``. No preference row means the model default: immediate."""
    users = approvers_of(agent.pk, team_id=team_id)
    if mode == NotificationPreference.Mode.IMMEDIATE:
        return list(users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.DIGEST))
    return list(users.filter(inbox_prefs__email_mode=mode))


def _email(user: Any, subject: str, template: str, context: dict[str, Any]) -> EmailMultiAlternatives:
    context = {
        **context,
        "user": user,
        "site_url": settings.SITE_URL,
        "settings_url": absolute_url("/inbox/settings/notifications/"),
    }
    text = render_to_string(f"email/{template}.txt", context)
    html = render_to_string(f"email/{template}.html", context)
    message = EmailMultiAlternatives(one_line(subject), text, settings.DEFAULT_FROM_EMAIL, [user.email])
    message.attach_alternative(html, "text/html")
    return message


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


@shared_task(name="inbox.notifications.notify_new_runs")
def notify_new_runs(run_ids: list[int]) -> int:
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
    recipients = _recipients(agent, NotificationPreference.Mode.IMMEDIATE, team_id=routed_team_id)
    if not recipients:
        return 0
    count = len(agent_items)
    first = agent_items[0]
    subject = f"[Inbox] {first.tool_name or first.reason}: {first.message or first.interrupt_id}"[:150]
    if count > 1:
        subject = f"[Inbox] {count} new items from {agent.name or agent.slug}"
    summaries = [item_summary(item) for item in agent_items]
    messages = [
        _email(
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


@shared_task(name="inbox.notifications.notify_missed_runs")
def notify_missed_runs() -> int:
    """Beat: announce runs still unannounced ``INBOX_ANNOUNCE_GRACE_SECONDS`` after they were stored (the
    queued task was lost: a broker outage, a process that died right after its commit). Returns the
    emails sent."""
    cutoff = timezone.now() - timedelta(seconds=settings.INBOX_ANNOUNCE_GRACE_SECONDS)
    missed = Run.objects.filter(notified_at__isnull=True, created_at__lt=cutoff).order_by("pk")
    sent, after = 0, 0
    # Walk by id: a run released again by a failed send is left for the next beat, not retried in a loop.
    while run_ids := list(missed.filter(pk__gt=after).values_list("pk", flat=True)[:ANNOUNCE_BATCH]):
        sent += notify_new_runs(run_ids)
        after = run_ids[-1]
    return sent


def _backoff(retries: int) -> float:
    delay = min(WEBHOOK_BACKOFF_CAP, WEBHOOK_BACKOFF_BASE * (2**retries))
    return delay * (0.5 + random.random() / 2)  # jitter, so failed receivers are not hit in lockstep


@shared_task(bind=True, name="inbox.notifications.deliver_webhook", max_retries=WEBHOOK_MAX_RETRIES, acks_late=True)
def deliver_webhook(self, webhook_id: int, body: str) -> str:
    """POST ``body`` to the team's configured URL (only there), signed. Retries transport errors, 429
    and 5xx with capped, jittered backoff; other 4xx are final."""
    webhook = TeamWebhook.objects.filter(pk=webhook_id, enabled=True).select_related("team").first()
    if webhook is None:
        return "disabled"
    data = body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "approval-inbox-webhook/1",
        "X-Inbox-Event": "items.created",
        "X-Inbox-Signature": sign(webhook.secret, data),
        **standard_webhook_headers(
            webhook.secret,
            message_id=f"msg_{self.request.id or uuid.uuid4().hex}",
            body=data,
            timestamp=int(time.time()),
        ),
    }
    error = ""
    try:
        response = httpx.post(
            webhook.url, content=data, headers=headers, timeout=WEBHOOK_TIMEOUT, follow_redirects=False
        )
    except httpx.HTTPError as exc:
        error = f"{exc.__class__.__name__}: {exc}"
    else:
        if response.is_success:
            return "delivered"
        error = f"HTTP {response.status_code}"
        if response.status_code < 500 and response.status_code != 429:
            _record_webhook_failure(webhook, error, final=True)
            return "rejected"
    if self.request.retries >= self.max_retries:
        _record_webhook_failure(webhook, error, final=True)
        return "failed"
    log.warning("webhook %s to %s failed (%s); retrying", webhook.pk, webhook.url, error)
    raise self.retry(countdown=_backoff(self.request.retries), exc=None)


def _record_webhook_failure(webhook: TeamWebhook, error: str, *, final: bool) -> None:
    log.error("webhook %s to %s gave up: %s", webhook.pk, webhook.url, error)
    audit(
        actor=Actor.system("notifications"),
        verb="webhook.failed",
        obj=webhook,
        data={"team": webhook.team.name, "url": webhook.url, "error": error},
    )


@shared_task(name="inbox.notifications.send_digests")
def send_digests() -> int:
    """Mail each digest-mode user the open items of their teams that arrived since their last digest.
    A user's window is claimed with a conditional update, so two beat runs never mail the same items."""
    now = timezone.now()
    sent = 0
    prefs = NotificationPreference.objects.filter(email_mode=NotificationPreference.Mode.DIGEST).select_related("user")
    for pref in prefs.exclude(user__email="").filter(user__is_active=True):
        since = pref.digest_last_sent_at or now - timedelta(seconds=DIGEST_SECONDS)
        # filter(x=None) is "IS NULL", so a first digest claims the same way.
        claimed = NotificationPreference.objects.filter(
            pk=pref.pk, digest_last_sent_at=pref.digest_last_sent_at
        ).update(digest_last_sent_at=now)
        if not claimed:
            continue
        items = list(
            InboxItem.objects.filter(
                access.deciding_items_q(pref.user),
                status=InboxItem.Status.OPEN,
                created_at__gt=since,
                created_at__lte=now,
            )
            .distinct()
            .select_related("agent", "thread", "run")
            .order_by("agent__name", "created_at")
        )
        if not items:
            continue
        groups: dict[str, list[dict]] = defaultdict(list)
        for item in items:
            groups[item.agent.name or item.agent.slug].append(
                with_decision_links(item_summary(item), item, user=pref.user)
            )
        subject = f"[Inbox] Digest: {len(items)} item(s) waiting for a decision"
        message = _email(pref.user, subject, "digest", {"groups": dict(groups), "count": len(items), "since": since})
        sent += message.send() or 0
    return sent


def notify_delivery_failed(resume_id: int) -> int:
    """Email the people who decided a run's interrupts that their answer did not reach the agent (the resume
    failed for good: it is retried only by hand from the run page). Users who turned email off are left out.
    Returns how many emails were sent."""

    resume = Resume.objects.select_related("run", "agent").filter(pk=resume_id).first()
    if resume is None or resume.state != Resume.State.FAILED:
        return 0
    deciders = set(Decision.objects.filter(item__run_id=resume.run_id).values_list("user_id", flat=True)) | set(
        InboxItem.objects.filter(run_id=resume.run_id, decided_by__isnull=False).values_list("decided_by", flat=True)
    )
    from django.contrib.auth import get_user_model

    users = (
        get_user_model()
        .objects.filter(pk__in=deciders, is_active=True)
        .exclude(email="")
        .exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
        .order_by("pk")
    )
    items = list(resume.run.items.order_by("position"))
    context = {
        "agent": resume.agent,
        "run": resume.run,
        "resume": resume,
        "items": items,
        "run_url": absolute_url(resume.run.get_absolute_url()),
    }
    subject = f"Not delivered: your answer to {resume.agent.name or resume.agent.slug} did not reach the agent"
    messages = [_email(user, subject, "delivery_failed", context) for user in users]
    if not messages:
        return 0
    sent = get_connection().send_messages(messages) or 0
    audit(
        actor=Actor.system("notifications"),
        verb="resume.failure_notified",
        obj=resume,
        data={"recipients": [user.get_username() for user in users]},
    )
    return sent


def notify_delivery_failed_on_commit(resume_id: int) -> None:
    """After the commit that failed the resume: a mail server that is down must not undo the failure."""

    def send() -> None:
        try:
            notify_delivery_failed(resume_id)
        except Exception:  # noqa: BLE001 - email is best effort; the run page shows the failure anyway
            log.exception("could not email the deciders about failed resume %s", resume_id)

    transaction.on_commit(send)
