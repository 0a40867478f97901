"""An item as announcements, digests and webhooks describe it, with the signed Approve / Deny links a
yes/no item offers (``inbox.decisions.links``)."""

from __future__ import annotations

from typing import Any

from inbox.decisions.links import links_for
from inbox.models import InboxItem
from inbox.teams.mail import absolute_url


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
