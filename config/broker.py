"""Celery's broker transport: kombu's Redis transport, surviving a Redis that went away or refuses writes.

A worker that lost Redis while it held unacknowledged messages, or that acknowledges or receives on a Redis out
of memory, logs it and goes on instead of dying; Redis's unacked index redelivers the message after the
visibility timeout (docs/reliability.md). ``CELERY_BROKER_TRANSPORT`` names this module
(``inbox-redis+socket://`` for a unix socket); ``tests/test_broker.py`` shows the crash it prevents."""

from __future__ import annotations

import logging
from typing import Any

import redis
from kombu.transport import TRANSPORT_ALIASES, virtual
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client: Any = None) -> None:
        count = len(self._delivered)
        try:
            super().restore_unacked(client)
        except redis.RedisError as exc:
            log.warning(
                "%d unacknowledged message(s) not restored now (%s: %s); they stay in Redis's unacked index and are "
                "restored after the visibility timeout",
                count,
                type(exc).__name__,
                exc,
            )
        finally:
            if self.channel.closed:  # the pool made for this restore on a closed channel: close it again
                self.channel._disconnect_pools()

    def append(self, message: Any, delivery_tag: Any) -> None:
        try:
            super().append(message, delivery_tag)
        except redis.ResponseError as exc:  # out of memory (noeviction), read-only replica
            # The message was popped from its queue, but Redis refused its copy in the unacked index: the task
            # runs from here, held locally. Should this worker die before acknowledging it, the message is gone
            # from Redis, and the beat sweeps re-queue what the database says is due.
            log.warning(
                "could not record message %s as unacknowledged (%s: %s); running it",
                delivery_tag,
                type(exc).__name__,
                exc,
            )
            virtual.QoS.append(self, message, delivery_tag)

    def ack(self, delivery_tag: Any) -> None:
        try:
            super().ack(delivery_tag)
        except redis.ResponseError as exc:  # out of memory (noeviction), read-only replica
            log.warning(
                "could not acknowledge message %s (%s: %s); Redis delivers it again after the visibility timeout",
                delivery_tag,
                type(exc).__name__,
                exc,
            )
            virtual.QoS.ack(self, delivery_tag)


class Channel(kombu_redis.Channel):
    QoS = QoS
    _created_with: dict[str, Any] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._created_with = self._connparams()

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is not None and self.connection.client is not None:
            return super()._connparams(asynchronous=asynchronous)
        if self._created_with is None or asynchronous:
            raise redis.ConnectionError("the broker connection was closed")
        return dict(self._created_with)


class Transport(kombu_redis.Transport):
    Channel = Channel


TRANSPORT_ALIASES["inbox-redis"] = f"{__name__}:Transport"
