"""Team webhooks: the body a chat tool consumes (``items.created``). Each call is a notice row that
``inbox.teams.outbox`` signs (``inbox.teams.signatures``), POSTs and retries."""

from __future__ import annotations

import json
import uuid

from agents.models import Agent
from inbox.models import InboxItem
from inbox.teams.summaries import item_summary, with_decision_links

WEBHOOK_ITEMS = 100  # items one call carries; ``count`` says how many arrived
WEBHOOK_TEXT_LINES = 25  # items its ``text`` names; it says how many more


def webhook_body(
    *, agent: Agent, team_name: str, items: list[InboxItem], team_id: int | None = None, delivery_id: str = ""
) -> bytes:
    """The ``items.created`` body; ``deliveryId`` is the notice's id (its ``Idempotency-Key``)."""
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
        "deliveryId": delivery_id or str(uuid.uuid4()),
        "team": team_name,
        "agent": {"slug": agent.slug, "name": agent.name},
        "count": len(items),
        "items": summaries,
        # Plain text a chat tool can post as is (Slack-style incoming webhooks read "text").
        "text": "\n".join(lines),
    }
    return json.dumps(body, ensure_ascii=False).encode()
