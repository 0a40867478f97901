"""Celery's broker transport: kombu's Redis transport with unacknowledged messages restored safely.

A worker that lost Redis (restarted, or killed) and had a message unacknowledged — every task it was running:
``CELERY_TASK_ACKS_LATE`` — died of ``AttributeError: 'NoneType' object has no attribute 'hostname'`` and stayed
down. On a connection error Celery's consumer collects the broken connection, which drops the transport's
``client`` (kombu's ``Connection._do_close_transport``); a channel closed after that restores its unacknowledged
messages (``QoS.restore_unacked_once``) through a new client, whose connection parameters are read from that
``client``: ``None.hostname``. The AttributeError is not among the connection errors Celery ignores while it
reconnects, so it is an unrecoverable error for the worker.

Here a channel keeps the connection parameters it was created with, so such a restore still reaches Redis when
Redis is there; when it is not (the usual case: the connection broke because Redis went away), the restore is
logged and the messages stay in Redis's unacked index, which kombu restores after the visibility timeout (and
if Redis restarted empty they are gone either way: the beat sweeps re-queue what the database says is due).
Acknowledging a message on a Redis that refuses writes (out of memory under ``noeviction``) raised
``OutOfMemoryError`` out of the worker's event loop: unrecoverable too, so every worker died while Redis was full.
Here a failed acknowledgement is logged and the message forgotten locally; Redis keeps it in the unacked index and
kombu delivers it again after the visibility timeout (the inbox's tasks are idempotent: a resume is claimed with a
fencing token, a run announced once). Receiving a message on a full Redis failed the same way (the message is
popped from its queue, then its copy in the unacked index refused): here that is logged and the task runs.

``CELERY_BROKER_TRANSPORT`` points Celery at this module (a unix-socket broker URL names it ``inbox-redis+socket://``;
``config.celery`` imports this module, which registers that name); ``tests/test_broker.py`` shows the crash with
kombu's own transport and the restore with this one.
"""

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
