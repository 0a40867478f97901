"""Team webhooks: the body a chat tool consumes (``items.created``), its signatures (the legacy
``X-Inbox-Signature`` and the Standard Webhooks headers), the backoff between retries and the record of a
delivery given up. ``inbox.teams.tasks.deliver_webhook`` POSTs it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import random
import uuid

from django.conf import settings

from agents.models import Agent
from inbox.audit.record import Actor, audit
from inbox.models import InboxItem, TeamWebhook
from inbox.teams.summaries import item_summary, with_decision_links

log = logging.getLogger(__name__)


# Retries with capped, jittered backoff (see config/settings.py).
WEBHOOK_MAX_RETRIES = settings.INBOX_WEBHOOK_MAX_RETRIES


WEBHOOK_BACKOFF_BASE = settings.INBOX_WEBHOOK_BACKOFF_BASE


WEBHOOK_BACKOFF_CAP = settings.INBOX_WEBHOOK_BACKOFF_CAP


WEBHOOK_TIMEOUT = settings.INBOX_WEBHOOK_TIMEOUT


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


WEBHOOK_ITEMS = 100  # items one call carries; ``count`` says how many arrived
WEBHOOK_TEXT_LINES = 25  # items its ``text`` names; it says how many more


def webhook_body(*, agent: Agent, team_name: str, items: list[InboxItem], team_id: int | None = None) -> bytes:
    summaries = [
        with_decision_links(item_summary(item), item, team_id=team_id) if team_id is not None else item_summary(item)
        for item in items[:WEBHOOK_ITEMS]
    ]
    lines = [f"{len(items)} new item(s) from {agent.name or agent.slug} need a decision:"]
    lines += [
        f"• {s['toolName'] or s['reason']}: {s['message'] or s['interruptId']} — {s['url']}"
        for s in summaries[:WEBHOOK_TEXT_LINES]
    ]
    if len(items) > WEBHOOK_TEXT_LINES:
        lines.append(f"…and {len(items) - WEBHOOK_TEXT_LINES} more")
    body = {
        "event": "items.created",
        "deliveryId": str(uuid.uuid4()),
        "team": team_name,
        "agent": {"slug": agent.slug, "name": agent.name},
        "count": len(items),
        "items": summaries,
        # Plain text a chat tool can post as is (Slack-style incoming webhooks read "text").
        "text": "\n".join(lines),
    }
    return json.dumps(body, ensure_ascii=False).encode()


def backoff(retries: int) -> float:
    delay = min(WEBHOOK_BACKOFF_CAP, WEBHOOK_BACKOFF_BASE * (2**retries))
    return delay * (0.5 + random.random() / 2)  # jitter, so failed receivers are not hit in lockstep


def record_webhook_failure(webhook: TeamWebhook, error: str, *, final: bool) -> None:
    log.error("webhook %s to %s gave up: %s", webhook.pk, webhook.url, error)
    audit(
        actor=Actor.system("notifications"),
        verb="webhook.failed",
        obj=webhook,
        data={"team": webhook.team.name, "url": webhook.url, "error": error},
    )
