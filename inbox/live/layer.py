"""The channel layer: channels-redis, with a cancelled receive that really ends.

When a socket closes, channels cancels its receive, a loop of blocking pops; with redis-py 8 that cancellation
can be absorbed inside the read, and channels-redis would pop again for ever. Here a pop that comes back empty
checks whether its task was asked to stop, so a cancelled receive ends within one blocking pop."""

from __future__ import annotations

import asyncio
from typing import Any

from channels_redis.core import RedisChannelLayer


class InboxChannelLayer(RedisChannelLayer):
    brpop_timeout = 5  # seconds a receive blocks in Redis; settings keep the socket timeout above it

    async def _brpop_with_clean(self, index: int, channel: str, timeout: float) -> Any:
        result = await super()._brpop_with_clean(index, channel, timeout)
        task = asyncio.current_task()
        if result is None and task is not None and task.cancelling():
            raise asyncio.CancelledError
        return result
