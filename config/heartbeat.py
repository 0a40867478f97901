"""Heartbeats of the Celery workers and of beat, kept in Redis, so ``/healthz`` answers from them at once.

A worker records itself every ``INBOX_HEARTBEAT_SECONDS`` from a thread started at ``worker_ready`` and removes
itself at shutdown; beat records itself at each tick (``HeartbeatScheduler``). One sorted set per kind, named
after the Celery queue; a member is alive when recorded within three periods (docs/operations.md)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import redis
from celery.beat import PersistentScheduler
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

log = logging.getLogger(__name__)

_client: redis.Redis | None = None
_client_url = ""
_client_lock = threading.Lock()


def client() -> redis.Redis:
    """One connection pool per process, with timeouts short enough for a health check."""
    global _client, _client_url
    with _client_lock:
        if _client is None or _client_url != settings.REDIS_URL:
            _client = redis.Redis.from_url(
                settings.REDIS_URL, socket_connect_timeout=0.5, socket_timeout=0.5, health_check_interval=0
            )
            _client_url = settings.REDIS_URL
        return _client


def key(kind: str) -> str:
    return f"inbox:{settings.CELERY_TASK_DEFAULT_QUEUE}:heartbeat:{kind}"


def record(kind: str, name: str) -> None:
    now = time.time()
    pipe = client().pipeline(transaction=False)
    pipe.zadd(key(kind), {name: now})
    pipe.zremrangebyscore(key(kind), "-inf", now - 3600)  # members gone for an hour
    pipe.execute()


def forget(kind: str, name: str) -> None:
    client().zrem(key(kind), name)


def stale_after() -> float:
    return 3 * settings.INBOX_HEARTBEAT_SECONDS


class _Beater(threading.Thread):
    def __init__(self, kind: str, name: str) -> None:
        super().__init__(name=f"inbox-heartbeat-{kind}", daemon=True)
        self.kind, self.member = kind, name
        self.stopped = threading.Event()

    def run(self) -> None:
        while True:
            try:
                record(self.kind, self.member)
            except redis.RedisError as exc:
                log.warning("could not record the %s heartbeat: %s", self.kind, exc)
            if self.stopped.wait(settings.INBOX_HEARTBEAT_SECONDS):
                return


_worker_beater: _Beater | None = None


@worker_ready.connect
def _start_worker_heartbeat(sender=None, **kwargs: object) -> None:
    global _worker_beater
    name = getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}"
    _worker_beater = _Beater("worker", name)
    _worker_beater.start()


@worker_shutdown.connect
def _stop_worker_heartbeat(**kwargs: object) -> None:
    if _worker_beater is None:
        return
    _worker_beater.stopped.set()
    try:
        forget("worker", _worker_beater.member)
    except redis.RedisError:
        pass


class HeartbeatScheduler(PersistentScheduler):
    """Celery beat's default scheduler that also records beat's heartbeat on every tick."""

    _member = f"beat@{socket.gethostname()}:{os.getpid()}"
    _recorded_at = 0.0

    def tick(self, *args: object, **kwargs: object) -> float:
        now = time.monotonic()
        if now - self._recorded_at >= settings.INBOX_HEARTBEAT_SECONDS:
            try:
                record("beat", self._member)
                self._recorded_at = now
            except redis.RedisError as exc:
                log.warning("could not record the beat heartbeat: %s", exc)
        interval = super().tick(*args, **kwargs)
        return min(interval, settings.INBOX_HEARTBEAT_SECONDS)
