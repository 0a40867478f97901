"""The Celery tasks of team notifications. Their names are fixed strings (``inbox.notifications.*``): queued
messages and the beat schedule (``CELERY_BEAT_SCHEDULE``) name them, wherever the code lives. Each loads rows by
id and calls the module of its concern; ``deliver_webhook`` retries its POST on transient failure.

The announcements import ``announce_new_runs`` and ``deliver_webhook`` to queue them, so the announcing task imports
``inbox.teams.notifications`` when it runs, not at load time."""

from __future__ import annotations

import logging
import time
import uuid

import httpx
from celery import shared_task

from agents import endpoints
from inbox.models import TeamWebhook
from inbox.teams.away import delegation_sweep
from inbox.teams.digests import mail_digests
from inbox.teams.escalations import escalation_sweep
from inbox.teams.reminders import reminders_send, snoozes_wake
from inbox.teams.webhooks import (
    WEBHOOK_MAX_RETRIES,
    WEBHOOK_TIMEOUT,
    backoff,
    record_webhook_failure,
    sign,
    standard_webhook_headers,
)

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


@shared_task(bind=True, name="inbox.notifications.deliver_webhook", max_retries=WEBHOOK_MAX_RETRIES, acks_late=True)
def deliver_webhook(self, webhook_id: int, body: str) -> str:
    """POST ``body`` to the team's configured URL (only there, and only on a public address unless
    ``INBOX_AGENT_ALLOWED_NETWORKS`` allows it), signed. Retries transport errors, a name that does not resolve,
    429 and 5xx with capped, jittered backoff; other 4xx and a refused address are final."""
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
    outcome, error = _post(webhook, data, headers)
    if outcome is not None:
        return outcome
    if self.request.retries >= self.max_retries:
        record_webhook_failure(webhook, error, final=True)
        return "failed"
    log.warning("webhook %s to %s failed (%s); retrying", webhook.pk, webhook.url, error)
    raise self.retry(countdown=backoff(self.request.retries), exc=None)


def _post(webhook: TeamWebhook, data: bytes, headers: dict[str, str]) -> tuple[str | None, str]:
    """One attempt: the final outcome (delivered, refused, rejected), or None and the error to retry on."""
    try:
        # The agents' rule (agents/endpoints.py): public addresses only, and the request connects to the address
        # checked, so the name cannot resolve elsewhere in between.
        destination = endpoints.target(webhook.url)
    except endpoints.EndpointRefused as refused:
        if not refused.resolvable:
            return None, refused.message  # a name that does not resolve (yet): retried like a refused connection
        record_webhook_failure(webhook, refused.message, final=True)
        return "refused", refused.message
    try:
        with httpx.Client(timeout=WEBHOOK_TIMEOUT, follow_redirects=False, trust_env=False) as http:
            response = http.post(
                destination.url,
                content=data,
                headers={**headers, **destination.headers},
                extensions=destination.extensions,
            )
    except httpx.HTTPError as exc:
        return None, f"{exc.__class__.__name__}: {exc}"
    if response.is_success:
        return "delivered", ""
    error = f"HTTP {response.status_code}"
    if response.status_code < 500 and response.status_code != 429:
        record_webhook_failure(webhook, error, final=True)
        return "rejected", error
    return None, error


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
