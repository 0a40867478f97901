"""Pushing changes to open pages over Channels, only after the transaction commits.

Groups: ``inbox.staff`` (staff see everything), ``inbox.agent.<agent id>`` (members of the agent's
teams), ``inbox.team.<group id>`` (members of a team a policy routed an item to), ``inbox.item.<item id>``
and ``inbox.run.<run id>`` (pages looking at one object).

Sending happens on one long-lived event loop per process (a daemon thread), fed by a queue: the request or
task that committed does not wait for Redis, events leave in the order they were published, and the channel
layer's Redis connections are reused instead of opened by a fresh ``async_to_sync`` loop per message (which
cost more than the whole ingest transaction). Pushes to the same groups that queue up behind one another
(a burst of ingests, within ``INBOX_LIVE_BATCH_SECONDS`` of the first) leave together as one ``inbox.events``
message per group. A push is best effort: pages refresh what they missed when their socket reconnects.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import logging
import os
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


MAX_MERGED = 200  # events per merged channel-layer message


STAFF_GROUP = "inbox.staff"


def agent_group(agent_id: int) -> str:
    return f"inbox.agent.{agent_id}"


def team_group(team_id: int) -> str:
    return f"inbox.team.{team_id}"


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


class _Sender:
    """The process's sending loop. Recreated after a fork (Celery's prefork pool).

    Pushes are appended to a deque (thread-safe) and only the first one of a batch wakes the loop: while a
    batch gathers, the ones that follow are appended without a wake-up. (Handing each one over with
    ``call_soon_threadsafe`` wrote to the loop's self-pipe and woke its thread once per ingest: a thread switch
    and a hand of the GIL for nothing, measurable in ``bench/ingest.py``.)"""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.pending: collections.deque[tuple[list[str], dict, threading.Event | None]] = collections.deque()
        # True from the wake-up that starts a batch until the loop takes the batch: pushes appended meanwhile
        # need not wake it again. Set by submitters, cleared by the loop before it takes what is pending, so a
        # push appended after the take finds it cleared and wakes the loop itself.
        self.armed = False
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="inbox-live-sender", daemon=True)
        self.thread.start()
        self.ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.woken = asyncio.Event()
        self.urgent = asyncio.Event()  # a caller waits for its push (send_now, flush): the batch leaves at once
        self.loop.create_task(self._drain())
        self.ready.set()
        self.loop.run_forever()

    async def _drain(self) -> None:
        while True:
            await self.woken.wait()
            self.woken.clear()
            # Let what the next few milliseconds bring join this batch: under a burst of ingests, pushes to the
            # same groups leave as one message (a channel-layer send costs more CPU than storing the run). A
            # flush or a caller waiting for its push ends the wait at once.
            if not self.urgent.is_set():
                try:
                    await asyncio.wait_for(self.urgent.wait(), settings.INBOX_LIVE_BATCH_SECONDS)
                except TimeoutError:
                    pass
            self.urgent.clear()
            self.armed = False
            batch = []
            while self.pending:
                batch.append(self.pending.popleft())
            layer = get_channel_layer()
            for groups, message in _coalesce(batch) if layer is not None and batch else ():
                try:
                    await asyncio.gather(*(layer.group_send(group, message) for group in dict.fromkeys(groups)))
                except Exception:
                    log.exception("live push %s failed", message.get("event") or "batch")
            for _groups, _message, done in batch:
                if done is not None:
                    done.set()

    def _enqueue(self, entries: list[tuple[list[str], dict, threading.Event | None]]) -> None:
        self.pending.extend(entries)
        if any(done is not None for _groups, _message, done in entries):
            self.armed = True
            self.loop.call_soon_threadsafe(self._wake_urgently)
        elif not self.armed:
            self.armed = True
            self.loop.call_soon_threadsafe(self.woken.set)

    def _wake_urgently(self) -> None:
        self.urgent.set()
        self.woken.set()

    def submit(self, groups: list[str], message: dict, done: threading.Event | None = None) -> None:
        self._enqueue([(groups, message, done)])

    def submit_many(self, entries: list[tuple[list[str], dict]]) -> None:
        """Queue several pushes in one step, so the sending loop takes them as one batch (and merges
        neighbours to the same groups)."""
        self._enqueue([(groups, message, None) for groups, message in entries])

    def flush(self, timeout: float) -> None:
        done = threading.Event()
        self.submit([], {}, done)
        done.wait(timeout)


def _coalesce(batch: list[tuple[list[str], dict, Any]]) -> list[tuple[list[str], dict]]:
    """Merge consecutive pushes to the same groups into one ``inbox.events`` message (at most MAX_MERGED
    events each), so a burst costs one channel-layer send per group instead of one per push. Order is kept:
    only neighbours are merged. Entries without groups (flush markers) send nothing."""
    merged: list[tuple[list[str], list[dict]]] = []
    for groups, message, _done in batch:
        if not groups:
            continue
        if message["type"] not in ("inbox.event", "inbox.events"):  # e.g. membership.changed: as it is
            merged.append((groups, [message]))
            continue
        events = message["events"] if message["type"] == "inbox.events" else [message]
        mergeable = merged and merged[-1][1][0]["type"] in ("inbox.event", "inbox.events")
        if mergeable and merged[-1][0] == groups and len(merged[-1][1]) + len(events) <= MAX_MERGED:
            merged[-1][1].extend(events)
        else:
            merged.append((groups, list(events)))
    return [
        (groups, events[0] if len(events) == 1 else {"type": "inbox.events", "events": events})
        for groups, events in merged
    ]


_sender: _Sender | None = None


_sender_lock = threading.Lock()


def _get_sender() -> _Sender:
    global _sender
    if _sender is None or _sender.pid != os.getpid():
        with _sender_lock:
            if _sender is None or _sender.pid != os.getpid():
                _sender = _Sender()
    return _sender


@atexit.register
def _flush_at_exit() -> None:
    if _sender is not None and _sender.pid == os.getpid() and _sender.thread.is_alive():
        _sender.flush(timeout=2.0)


def _message(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    # The id lets a socket that is in several of the groups forward the message once (inbox.consumers).
    return {"type": "inbox.event", "id": uuid.uuid4().hex, "event": event, "payload": payload}


def send_now(groups: list[str], event: str, payload: dict[str, Any], timeout: float = 5.0) -> None:
    """Send and wait until the channel layer has taken the message (or ``timeout`` passes)."""
    done = threading.Event()
    _get_sender().submit(groups, _message(event, payload), done)
    done.wait(timeout)


def send_soon(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    """Queue a push without waiting for it."""
    _get_sender().submit(groups, _message(event, payload))


def publish_on_commit(groups: list[str], event: str, payload: dict[str, Any]) -> None:
    """Queue a push for after the current transaction commits; nothing is sent on rollback."""
    transaction.on_commit(lambda: send_soon(groups, event, payload))


def publish_many_on_commit(messages: list[tuple[list[str], str, dict[str, Any]]]) -> None:
    """``publish_on_commit`` for a batch of ``(groups, event, payload)`` (an ingest's new items, an expiry
    sweep, reminders), handed over in one step: neighbours to the same groups leave as one message."""
    if messages:
        entries = [(groups, _message(event, payload)) for groups, event, payload in messages]
        transaction.on_commit(lambda: _get_sender().submit_many(entries))


def flush(timeout: float = 5.0) -> None:
    """Wait until every push queued so far has been handed to the channel layer (tests, scripts)."""
    _get_sender().flush(timeout)


def membership_changed_on_commit(user_ids: list[int] | set[int], *, session_key: str | None = None) -> None:
    """Tell the open sockets of these users to recompute what they may hear (teams or staff flag changed),
    or, with ``session_key``, the sockets of that session to close (it logged out). After the commit."""
    message: dict[str, Any] = {"type": "membership.changed", "id": uuid.uuid4().hex}
    if session_key is not None:
        message["session"] = session_key
    entries = [([f"inbox.user.{pk}"], message) for pk in sorted(set(user_ids))]
    if entries:
        transaction.on_commit(lambda: _get_sender().submit_many(entries))
