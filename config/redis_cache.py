"""Django's Redis cache with one connection pool and client per process, not per cache object.

Under ASGI every request gets a cache object of its own, and Django's ``RedisCache`` keeps its pool on that
object: a new connection per request. Here the pool and client live as long as the process; a forked child
(Celery's prefork pool) makes its own, since a connection must never be shared across a fork."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class ProcessRedisCacheClient(RedisCacheClient):
    _clients: dict[tuple[int, str, str], Any] = {}
    _lock = threading.Lock()

    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        this: Any = self  # django-stubs do not declare RedisCacheClient's private attributes
        self._options_key = repr(sorted(this._pool_options.items(), key=lambda kv: kv[0]))

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        this: Any = self
        server = this._servers[this._get_connection_pool_index(write)]
        slot = (os.getpid(), server, self._options_key)
        client = self._clients.get(slot)
        if client is None:
            with self._lock:
                client = self._clients.get(slot)
                if client is None:
                    pid = os.getpid()
                    for stale in [s for s in self._clients if s[0] != pid]:  # a fork's parent's clients
                        del self._clients[stale]
                    pool = this._pool_class.from_url(server, **this._pool_options)
                    client = self._clients[slot] = this._client(connection_pool=pool)
        return client


class ProcessRedisCache(RedisCache):
    """``RedisCache`` on ``ProcessRedisCacheClient`` (settings: ``CACHES["shared"]``)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ProcessRedisCacheClient
