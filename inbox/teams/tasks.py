"""The Celery tasks of team notifications. Their names are fixed strings (``inbox.notifications.*``): queued
messages and the beat schedule (``CELERY_BEAT_SCHEDULE``) name them, wherever the code lives. Each loads rows by
id and calls the module of its concern; ``deliver_webhook`` retries its POST on transient failure.

The announcements import ``notify_new_runs`` and ``deliver_webhook`` to queue them, so the announcing task imports
``inbox.teams.notifications`` when it runs, not at load time."""

from __future__ import annotations

import logging
import time
import uuid

import httpx
from celery import shared_task

from inbox.models import TeamWebhook
from inbox.teams.digests import mail_digests
from inbox.teams.webhooks import (
    WEBHOOK_MAX_RETRIES,
    WEBHOOK_TIMEOUT,
    backoff,
    record_webhook_failure,
    sign,
    standard_webhook_headers,
)

log = logging.getLogger(__name__)


@shared_task(name="inbox.notifications.notify_new_runs")
def notify_new_runs(run_ids: list[int]) -> int:
    """Announce the open items of the given runs (``notifications.announce_runs``); returns the emails sent."""
    from inbox.teams.notifications import announce_runs

    return announce_runs(run_ids)


@shared_task(name="inbox.notifications.notify_missed_runs")
def notify_missed_runs() -> int:
    """Beat: announce the runs whose announcement was lost (``notifications.announce_missed_runs``)."""
    from inbox.teams.notifications import announce_missed_runs

    return announce_missed_runs()


@shared_task(name="inbox.notifications.send_digests")
def send_digests() -> int:
    """Beat: mail each digest-mode user their digest (``digests.mail_digests``); returns the emails sent."""
    return mail_digests()


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
            record_webhook_failure(webhook, error, final=True)
            return "rejected"
    if self.request.retries >= self.max_retries:
        record_webhook_failure(webhook, error, final=True)
        return "failed"
    log.warning("webhook %s to %s failed (%s); retrying", webhook.pk, webhook.url, error)
    raise self.retry(countdown=backoff(self.request.retries), exc=None)
