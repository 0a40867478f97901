"""Pushing changes to open pages over Channels, only after the transaction commits.

Groups: ``inbox.staff`` (staff see everything), ``inbox.agent.<agent id>`` (members of the agent's
teams), ``inbox.item.<item id>`` and ``inbox.run.<run id>`` (pages looking at one object).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def groups_for(*, agent_id: int, item_id: int | None = None, run_id: int | None = None) -> list[str]:
    groups = ["inbox.staff", f"inbox.agent.{agent_id}"]
    if item_id is not None:
        groups.append(f"inbox.item.{item_id}")
    if run_id is not None:
        groups.append(f"inbox.run.{run_id}")
    return groups


def send_now(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    # The id lets a socket that is in several of the groups forward the message once.
    message = {"type": "inbox.event", "id": uuid.uuid4().hex, "event": event, "payload": payload}
    try:
        for group in dict.fromkeys(groups):
            async_to_sync(layer.group_send)(group, message)
    except Exception:  # a push is best effort: the page refreshes what it missed on reconnect
        log.exception("live push %s failed", event)


def send_many_now(messages: list[tuple[list[str], str, dict[str, Any]]]) -> None:
    """Send several pushes in one event loop (one Redis connection), e.g. everything a sweep closed."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return

    async def send_all() -> None:
        for groups, event, payload in messages:
            message = {"type": "inbox.event", "id": uuid.uuid4().hex, "event": event, "payload": payload}
            for group in dict.fromkeys(groups):
                await layer.group_send(group, message)

    try:
        async_to_sync(send_all)()
    except Exception:  # best effort, as above
        log.exception("live push of %d message(s) failed", len(messages))


def publish_many_on_commit(messages: list[tuple[list[str], str, dict[str, Any]]]) -> None:
    """``publish_on_commit`` for a batch of ``(groups, event, payload)``."""
    if messages:
        transaction.on_commit(lambda: send_many_now(messages))


def publish_on_commit(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    """Queue a push for after the current transaction commits; nothing is sent on rollback."""
    transaction.on_commit(lambda: send_now(groups, event, payload))
