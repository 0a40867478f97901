"""The channel layer: channels-redis, with a cancelled receive that really ends.

A consumer's receive is a loop of blocking pops (``BZPOPMIN`` with ``brpop_timeout``). When a socket closes,
channels cancels that receive; on Python 3.11 with redis-py 8 the cancellation can be absorbed inside the
read (its read timeout is an ``asyncio.timeout`` too), and channels-redis then simply pops again, forever:
a closed socket left a task polling Redis every 5 s (earlier hidden by redis-py's 5 s socket timeout, which
also killed every *idle* socket). Here a pop that comes back empty checks whether its task was asked to
stop, so a cancelled receive ends within one blocking pop.
"""

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
