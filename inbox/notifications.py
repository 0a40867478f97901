"""Telling the agent's teams about new items: email (at once, or a periodic digest, per user) and an
optional signed webhook per team that a chat tool can consume.

Flow: ``notify_on_ingest`` (an ``after_ingest`` hook) queues ``notify_new_items`` on commit; that task
emails the team members who want immediate mail and queues one ``deliver_webhook`` per enabled team
webhook. ``deliver_webhook`` POSTs the same bytes on every retry, signed with
``X-Inbox-Signature: sha256=<hex hmac of body>``, retrying transport errors and 5xx with backoff.
``send_digests`` (Celery beat) mails digest users what arrived since their last digest.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import uuid
from collections import defaultdict
from datetime import timedelta
from typing import Any

import httpx
from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from agents.models import Agent
from inbox.audit import Actor, audit
from inbox.models import InboxItem, NotificationPreference, Run, TeamWebhook

log = logging.getLogger(__name__)

# Retries with capped, jittered backoff; the first digest covers DIGEST_SECONDS (see config/settings.py).
WEBHOOK_MAX_RETRIES = settings.INBOX_WEBHOOK_MAX_RETRIES
WEBHOOK_BACKOFF_BASE = settings.INBOX_WEBHOOK_BACKOFF_BASE
WEBHOOK_BACKOFF_CAP = settings.INBOX_WEBHOOK_BACKOFF_CAP
WEBHOOK_TIMEOUT = settings.INBOX_WEBHOOK_TIMEOUT
DIGEST_SECONDS = settings.INBOX_DIGEST_SECONDS


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- the hook --------------------------------------------------------------------------------------


def notify_on_ingest(*, run: Run, items: list[InboxItem]) -> None:
    """Registered in ``after_ingest``; runs inside the ingest transaction, so it only queues work."""
    ids = [item.pk for item in items if item.status == InboxItem.Status.OPEN]
    if ids:
        transaction.on_commit(lambda: notify_new_items.delay(ids))


# --- what gets said --------------------------------------------------------------------------------


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


def webhook_body(*, agent: Agent, team_name: str, items: list[InboxItem]) -> bytes:
    summaries = [item_summary(item) for item in items]
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


def _recipients(agent: Agent, mode: str) -> list[Any]:
    User = get_user_model()
    users = User.objects.filter(is_active=True, groups__in=agent.teams.all()).exclude(email="").distinct()
    if mode == NotificationPreference.Mode.IMMEDIATE:
        # No preference row means the model default: immediate.
        return list(users.exclude(inbox_prefs__email_mode__in=["digest", "off"]))
    return list(users.filter(inbox_prefs__email_mode=mode))


def _email(user: Any, subject: str, template: str, context: dict[str, Any]) -> EmailMultiAlternatives:
    context = {**context, "user": user, "site_url": settings.SITE_URL,
               "settings_url": absolute_url("/inbox/settings/notifications/")}  # fmt: skip
    text = render_to_string(f"email/{template}.txt", context)
    html = render_to_string(f"email/{template}.html", context)
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [user.email])
    message.attach_alternative(html, "text/html")
    return message


# --- tasks -----------------------------------------------------------------------------------------


@shared_task(name="inbox.notifications.notify_new_items")
def notify_new_items(item_ids: list[int]) -> int:
    """Email immediate-mode team members and queue the team webhooks. Returns the emails sent."""
    items = list(
        InboxItem.objects.filter(pk__in=item_ids, status=InboxItem.Status.OPEN)
        .select_related("agent", "thread", "run")
        .order_by("agent_id", "run_id", "position")
    )
    by_agent: dict[int, list[InboxItem]] = defaultdict(list)
    for item in items:
        by_agent[item.agent_id].append(item)
    sent = 0
    for agent_items in by_agent.values():
        agent = agent_items[0].agent
        for webhook in TeamWebhook.objects.filter(team__in=agent.teams.all(), enabled=True).select_related("team"):
            body = webhook_body(agent=agent, team_name=webhook.team.name, items=agent_items)
            deliver_webhook.delay(webhook.pk, body.decode())
        recipients = _recipients(agent, NotificationPreference.Mode.IMMEDIATE)
        if not recipients:
            continue
        count = len(agent_items)
        first = agent_items[0]
        subject = f"[Inbox] {first.tool_name or first.reason}: {first.message or first.interrupt_id}"[:150]
        if count > 1:
            subject = f"[Inbox] {count} new items from {agent.name or agent.slug}"
        summaries = [item_summary(item) for item in agent_items]
        messages = [_email(user, subject, "new_items", {"agent": agent, "items": summaries}) for user in recipients]
        sent += get_connection().send_messages(messages) or 0
        emailed = sorted(user.get_username() for user in recipients)
        audit(actor=Actor.system("notifications"), verb="item.notified", obj=first, agent=agent,
              data={"items": [item.pk for item in agent_items], "emailed": emailed})  # fmt: skip
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
    }
    error = ""
    try:
        response = httpx.post(webhook.url, content=data, headers=headers, timeout=WEBHOOK_TIMEOUT,
                              follow_redirects=False)  # fmt: skip
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
    audit(actor=Actor.system("notifications"), verb="webhook.failed", obj=webhook,
          data={"team": webhook.team.name, "url": webhook.url, "error": error})  # fmt: skip


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
                agent__teams__in=pref.user.groups.all(),
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
            groups[item.agent.name or item.agent.slug].append(item_summary(item))
        subject = f"[Inbox] Digest: {len(items)} item(s) waiting for a decision"
        message = _email(pref.user, subject, "digest", {"groups": dict(groups), "count": len(items), "since": since})
        sent += message.send() or 0
    return sent
