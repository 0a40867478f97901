"""Pushing changes to open pages over Channels, only after the transaction commits.

``publish_on_commit`` and ``publish_many_on_commit`` queue messages to groups (``groups_for``: staff, an agent's
teams, a team, one item or run, one person) that leave, in order, when the transaction commits. A push is best
effort: pages refresh what they missed when their socket reconnects."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


STAFF_GROUP = "inbox.staff"


def agent_group(agent_id: int) -> str:
    return f"inbox.agent.{agent_id}"


def team_group(team_id: int) -> str:
    return f"inbox.team.{team_id}"


def personal_group(user_pk: int) -> str:
    """Every page one person has open (what is theirs alone: a snoozed item coming back)."""
    return f"inbox.user.{user_pk}"


def groups_for(
    *,
    agent_id: int,
    item_id: int | None = None,
    run_id: int | None = None,
    team_ids: Iterable[int | None] = (),
) -> list[str]:
    """Who hears about a change: staff, the agent's teams, ``team_ids`` (the teams a policy routed the item or
    some item of the run to: ``visible_items`` gives routed items to them) and the object's own pages."""
    groups = [STAFF_GROUP, agent_group(agent_id)]
    groups += [team_group(pk) for pk in dict.fromkeys(team_ids) if pk is not None]
    if item_id is not None:
        groups.append(f"inbox.item.{item_id}")
    if run_id is not None:
        groups.append(f"inbox.run.{run_id}")
    return groups


Message = tuple[list[str], dict[str, Any]]  # the groups, and what each of them is sent


def _has_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _send(messages: list[Message]) -> None:
    """Hand the messages to the channel layer, in order, each to each of its groups once."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    if _has_running_loop():
        # ``async_to_sync`` refuses a thread whose event loop is running: a notebook's, or a script or test that
        # drives a browser through Playwright's sync API. Web requests and workers never get here.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(_send_from_this_thread, layer, messages).result()
        return
    _send_from_this_thread(layer, messages)


def _send_from_this_thread(layer: Any, messages: list[Message]) -> None:
    for attempt in (1, 2):
        try:
            async_to_sync(_group_send_all)(layer, messages)
            return
        except Exception as error:
            if attempt == 1:
                # One more try on a fresh connection: a dropped or timed-out Redis connection is the usual cause,
                # and a page that misses a push learns of it only when its socket reconnects.
                log.warning("live push of %d message(s) failed once (%r); trying again", len(messages), error)
            else:
                log.exception("live push of %d message(s) failed", len(messages))


async def _group_send_all(layer: Any, messages: list[Message]) -> None:
    for groups, message in messages:
        for group in dict.fromkeys(groups):
            await layer.group_send(group, message)


def _message(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    # The id lets a socket that is in several of the groups forward the message once (inbox.consumers).
    return {"type": "inbox.event", "id": uuid.uuid4().hex, "event": event, "payload": payload}


def send_now(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    """Send at once, outside any transaction (tests, scripts)."""
    _send([(groups, _message(event, payload))])


def publish_on_commit(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    """Send a push once the current transaction commits; nothing is sent on rollback."""
    publish_many_on_commit([(groups, event, payload)])


def _messages(messages: list[tuple[list[str], str, dict[str, Any]]]) -> list[Message]:
    """The channel-layer messages of ``(groups, event, payload)`` triples: consecutive ones for the same groups
    as one ``inbox.events`` message listing them in order, any other as an ``inbox.event``."""
    runs: list[tuple[list[str], list[tuple[str, dict[str, Any]]]]] = []
    for groups, event, payload in messages:
        if runs and runs[-1][0] == groups:
            runs[-1][1].append((event, payload))
        else:
            runs.append((groups, [(event, payload)]))
    sent: list[Message] = []
    for groups, events in runs:
        if len(events) == 1:
            sent.append((groups, _message(*events[0])))
        else:
            listed = [{"event": event, "payload": payload} for event, payload in events]
            sent.append((groups, {"type": "inbox.events", "id": uuid.uuid4().hex, "events": listed}))
    return sent


def publish_many_on_commit(messages: list[tuple[list[str], str, dict[str, Any]]]) -> None:
    """``publish_on_commit`` for a batch of ``(groups, event, payload)`` (an ingest's new items, an expiry
    sweep, reminders)."""
    if messages:
        sent = _messages(messages)
        transaction.on_commit(lambda: _send(sent))


def membership_changed_on_commit(user_ids: list[int] | set[int], *, session_key: str | None = None) -> None:
    """Tell the open sockets of these users to recompute what they may hear (teams or staff flag changed),
    or, with ``session_key``, the sockets of that session to close (it logged out). After the commit."""
    message: dict[str, Any] = {"type": "membership.changed", "id": uuid.uuid4().hex}
    if session_key is not None:
        message["session"] = session_key
    sent = [([f"inbox.user.{pk}"], message) for pk in sorted(set(user_ids))]
    if sent:
        transaction.on_commit(lambda: _send(sent))
