"""The inbox websocket (``/ws/inbox/``): every open page hears about changes to what its user may see.

A socket joins the groups of what its user may see (``inbox.live.push``) and recomputes them when that changes.
Pages (``?view=list|item|run|page``) receive the HTML fragments of ``inbox.web.fragments``; clients without
``view`` receive JSON events and may subscribe to one item or run (docs/api.md). While Redis is unreachable a
handshake is refused with close code 1013 (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user_model
from redis.exceptions import RedisError

from inbox import access
from inbox.live.push import STAFF_GROUP, agent_group, personal_group, team_group
from inbox.web import fragments
from inbox.web.fragments import LiveView

log = logging.getLogger(__name__)

# Remember this many recent message ids to drop the copies that arrive through a second group.
SEEN_IDS = 256


TRY_AGAIN_LATER = 1013  # the websocket close code for "service unavailable, retry"
SIGNED_OUT = 4401


# Whether this process has logged the current Redis outage (one warning per outage, not one per handshake);
# cleared by the next socket that joins its groups.
_outage_logged = False


def note_redis(error: BaseException | None) -> None:
    """Log the first failure of an outage and the recovery; stay silent in between."""
    global _outage_logged
    if error is not None and not _outage_logged:
        _outage_logged = True
        log.warning("live sockets: the channel layer (Redis) is unreachable, refusing them until it is back: %s", error)
    elif error is None and _outage_logged:
        _outage_logged = False
        log.warning("live sockets: the channel layer (Redis) is reachable again")


@database_sync_to_async
def groups_of(user: Any) -> list[str]:
    if access.sees_everything(user):
        return [STAFF_GROUP]
    agents = [agent_group(pk) for pk in access.visible_agents(user).values_list("pk", flat=True)]
    return agents + [team_group(pk) for pk in user.groups.values_list("pk", flat=True)]  # routed items


@database_sync_to_async
def reload_user(pk: int) -> Any:
    return get_user_model().objects.filter(pk=pk, is_active=True).first()


may_see = database_sync_to_async(access.may_see)


class InboxConsumer(AsyncJsonWebsocketConsumer):
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Every message to the browser goes through ``dropping_when_gone``: uvicorn raises ``ClientDisconnected``
        (an ``OSError``) for a send after the socket closed, and it ended the consumer with a logged traceback
        each time a page was closed while pushes were on their way. The push is dropped instead; the disconnect
        event that follows cleans up."""

        async def dropping_when_gone(message: dict[str, Any]) -> None:
            try:
                await send(message)
            except OSError as error:
                log.debug("live socket already closed, %s dropped: %r", message.get("type"), error)

        try:
            await super().__call__(scope, receive, dropping_when_gone)
        except (RedisError, OSError) as error:
            # The consumer's own channel read (a blocking pop on Redis) failed: Redis went away under an open
            # socket, or the read started before a refused handshake ended. Close with 1013 (the page retries
            # with backoff) instead of ending the application with a traceback.
            note_redis(error)
            try:
                await dropping_when_gone({"type": "websocket.close", "code": TRY_AGAIN_LATER})
            except RuntimeError:  # the socket was closed already (the refused handshake)
                pass

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=SIGNED_OUT)  # before accept: the handshake is refused (HTTP 403)
            return
        self.groups_joined: set[str] = set()
        self.subscriptions: set[tuple[str, int]] = set()
        self.seen: deque[str] = deque(maxlen=SEEN_IDS)
        self.pending: list[fragments.Event] = []
        self.csrf_token = fragments.csrf_token_for(self.scope.get("cookies", {}).get(settings.CSRF_COOKIE_NAME))
        self.flusher: asyncio.Task | None = None
        try:
            self.view = LiveView.parse(self.scope.get("query_string", b""))
        except ValueError as error:
            await self.accept()
            await self.close(code=4400, reason=str(error)[:120])
            return
        try:
            for group in [*await groups_of(self.user), personal_group(self.user.pk)]:
                await self.join(group)
            subscription = self.view.subscription if self.view is not None else None
            if subscription is not None:
                if not await may_see(self.user, *subscription):
                    await self.accept()
                    await self.close(code=fragments.GONE)
                    return
                await self.subscribe(*subscription)
        except (RedisError, OSError) as error:
            # Redis is down: refused before it is accepted, so the page does not count it as a connection.
            note_redis(error)
            await self.close(code=TRY_AGAIN_LATER)
            return
        note_redis(None)
        await self.accept()
        if self.view is None:
            await self.send_json({"event": "hello", "payload": {"user": self.user.get_username()}})
        elif await database_sync_to_async(fragments.changed_since)(self.view.since):
            await self.render_and_send([], full=True)
        else:
            await self.send(text_data=fragments.in_sync())

    async def join(self, group: str) -> None:
        await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined.add(group)

    async def leave(self, group: str) -> None:
        await self.channel_layer.group_discard(group, self.channel_name)
        self.groups_joined.discard(group)

    async def subscribe(self, kind: str, pk: int) -> None:
        await self.join(f"inbox.{kind}.{pk}")
        self.subscriptions.add((kind, pk))

    async def disconnect(self, code: int) -> None:
        flusher = getattr(self, "flusher", None)
        if flusher is not None:
            flusher.cancel()
        for group in list(getattr(self, "groups_joined", ())):
            try:
                await self.channel_layer.group_discard(group, self.channel_name)
            except (RedisError, OSError):
                break  # Redis is gone: the group memberships expire on their own

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict):
            await self.refuse("", 'Send a JSON object, e.g. {"subscribe": {"item": 12}}.')
            return
        if "ping" in content:
            await self.send_json({"event": "pong", "payload": {}})
            return
        subscribe = content.get("subscribe")
        if not isinstance(subscribe, dict) or len(subscribe) != 1:
            await self.refuse("subscribe", 'Expected {"subscribe": {"item": <id>}} or {"subscribe": {"run": <id>}}.')
            return
        ((kind, pk),) = subscribe.items()
        if kind not in access.VISIBLE_BY_KIND:
            await self.refuse(f"subscribe.{kind}", "Only an item or a run can be subscribed to.")
            return
        if isinstance(pk, bool) or not isinstance(pk, int | str) or not str(pk).isdigit():
            await self.refuse(f"subscribe.{kind}", "Must be the numeric id of the object.")
            return
        pk = int(pk)
        if not await may_see(self.user, kind, pk):
            await self.refuse(f"subscribe.{kind}", f"No {kind} {pk} that you may see.")
            return
        await self.subscribe(kind, pk)
        await self.send_json({"event": "subscribed", "payload": {kind: pk}})

    async def refuse(self, field: str, message: str) -> None:
        await self.send_json({"event": "error", "payload": {"field": field, "message": message}})

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except ValueError:  # not JSON: answer with the field-naming error instead of dropping the socket
            await self.refuse("", "Not valid JSON.")

    async def inbox_event(self, message: dict[str, Any]) -> None:
        """A push from ``inbox.live``: forward it, once."""
        await self.forward(message, [(message["event"], message["payload"])])

    async def inbox_events(self, message: dict[str, Any]) -> None:
        """Several pushes of one commit to the same groups (an ingest's new items): forward each, in order, once."""
        await self.forward(message, [(event["event"], event["payload"]) for event in message["events"]])

    async def forward(self, message: dict[str, Any], events: list[fragments.Event]) -> None:
        message_id = message.get("id")
        if message_id:
            if message_id in self.seen:
                return
            self.seen.append(message_id)
        if self.view is None:
            for event, payload in events:
                await self.send_json({"event": event, "payload": payload})
            return
        self.pending.extend(events)
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self.flush_soon())

    async def flush_soon(self) -> None:
        """Render what arrived within the debounce window once (a burst of pushes is one render)."""
        await asyncio.sleep(settings.INBOX_LIVE_DEBOUNCE_SECONDS)
        events, self.pending = self.pending, []
        try:
            await self.render_and_send(events)
        except Exception:  # a render that fails must not kill the page's socket: the next push retries
            log.exception("live fragments for %s failed", self.view)

    async def render_and_send(self, events: list[fragments.Event], *, full: bool = False) -> None:
        assert self.view is not None
        rendered = await database_sync_to_async(fragments.render)(
            self.view, self.user, events, full=full, csrf_token=self.csrf_token
        )
        if rendered.html:
            await self.send(text_data=rendered.html)
        if rendered.close_code is not None:
            await self.close(code=rendered.close_code)

    async def membership_changed(self, message: dict[str, Any]) -> None:
        """The user's teams, staff flag or session changed: follow what they may see now, or close."""
        session_key = message.get("session")
        if session_key is not None:
            session = self.scope.get("session")
            if session is not None and session.session_key == session_key:
                await self.close(code=SIGNED_OUT)
            return
        user = await reload_user(self.user.pk)
        if user is None:  # deactivated or deleted
            await self.close(code=SIGNED_OUT)
            return
        self.user = user
        wanted = {*await groups_of(user), personal_group(user.pk)}
        for kind, pk in list(self.subscriptions):
            if await may_see(user, kind, pk):
                wanted.add(f"inbox.{kind}.{pk}")
            else:
                self.subscriptions.discard((kind, pk))
        for group in self.groups_joined - wanted:
            await self.leave(group)
        for group in wanted - self.groups_joined:
            await self.join(group)
        if self.view is not None:  # the page may now show more or less: render it afresh
            await self.render_and_send([], full=True)
        else:  # a client learns that from now on it hears what its user may see now
            await self.send_json({"event": "membership.changed", "payload": {}})
