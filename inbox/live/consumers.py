"""The inbox websocket: every open page hears about changes to what its user may see.

On connect a logged-in user joins ``inbox.staff`` (staff) or ``inbox.agent.<pk>`` for each agent of
their teams; anonymous sockets are refused. A page may also subscribe to one item or run it shows:
``{"subscribe": {"item": <pk>}}`` or ``{"subscribe": {"run": <pk>}}``, checked against what the user may
see. Messages reach the browser as ``{"event": <name>, "payload": {...}}``, once each even when the
socket is in several of the groups a message was sent to.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from inbox import access
from inbox.live.push import STAFF_GROUP, agent_group

# Remember this many recent message ids to drop the copies that arrive through a second group.
SEEN_IDS = 256


@database_sync_to_async
def groups_of(user: Any) -> list[str]:
    if access.sees_everything(user):
        return [STAFF_GROUP]
    return [agent_group(pk) for pk in access.visible_agents(user).values_list("pk", flat=True)]


may_see = database_sync_to_async(access.may_see)


class InboxConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=4401)  # before accept: the handshake is refused (HTTP 403)
            return
        self.groups_joined: set[str] = set()
        self.seen: deque[str] = deque(maxlen=SEEN_IDS)
        for group in await groups_of(self.user):
            await self.join(group)
        await self.accept()
        await self.send_json({"event": "hello", "payload": {"user": self.user.get_username()}})

    async def join(self, group: str) -> None:
        await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined.add(group)

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", ()):
            await self.channel_layer.group_discard(group, self.channel_name)

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
        await self.join(f"inbox.{kind}.{pk}")
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
        message_id = message.get("id")
        if message_id:
            if message_id in self.seen:
                return
            self.seen.append(message_id)
        await self.send_json({"event": message["event"], "payload": message["payload"]})

    async def inbox_events(self, message: dict[str, Any]) -> None:
        """Several pushes merged by ``inbox.live``'s sender into one message: forward each, in order."""
        for event in message["events"]:
            await self.inbox_event(event)
