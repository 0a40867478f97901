"""The broker transport (config.broker) survives what killed a worker after Redis went away: a channel holding an
unacknowledged message (every running task: acks late) closed after Celery collected the broken connection.
kombu's own Redis transport raises ``AttributeError: 'NoneType' object has no attribute 'hostname'`` there, which
the worker treats as unrecoverable; this one restores the message to its queue."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from kombu import Connection, Consumer, Exchange, Queue
from kombu.transport import redis as kombu_redis

from config import broker
from tests.conftest import free_port
from tests.helpers.redis_server import RedisServer


@pytest.fixture
def queue() -> Iterator[Queue]:
    name = f"broker-test-{uuid.uuid4().hex[:8]}"
    yield Queue(name, Exchange(name), name)
    with Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT) as connection:
        client = connection.default_channel.client
        client.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")


def _unacked_then_collected(connection: Connection, queue: Queue):
    """A message delivered and not acknowledged, then the connection collected as Celery's consumer does on a
    connection error (the transport loses its client)."""
    with Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT) as producer:
        producer.Producer().publish(
            {"task": "x"}, exchange=queue.exchange, routing_key=queue.routing_key, declare=[queue]
        )
    channel = connection.channel()
    received = []
    Consumer(channel, [queue], callbacks=[lambda body, message: received.append(message)], accept=["json"]).consume()
    connection.drain_events(timeout=5)
    assert len(received) == 1 and len(channel.qos._delivered) == 1
    connection._do_close_transport()  # what Connection.collect() ends with
    return channel


def test_kombus_own_transport_dies_restoring_the_message(queue):
    """The failure this module fixes (if a kombu release fixes it, this test says so: drop config.broker)."""
    connection = Connection(settings.CELERY_BROKER_URL.replace("inbox-redis+", "redis+"))
    assert type(connection.transport) is not broker.Transport
    channel = _unacked_then_collected(connection, queue)
    with pytest.raises(AttributeError, match="hostname"):
        channel.close()


def test_the_inbox_transport_restores_the_message_to_its_queue(queue):
    connection = Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT)
    assert type(connection.transport) is broker.Transport
    channel = _unacked_then_collected(connection, queue)
    channel.close()
    with Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT) as again:
        assert again.default_channel.client.llen(queue.name) == 1


def test_with_redis_gone_the_restore_is_logged_not_fatal(queue, caplog):
    connection = Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT)
    channel = _unacked_then_collected(connection, queue)
    channel._created_with = {**channel._created_with, "connection_class": redis.Connection, "port": 1}
    channel._created_with.pop("path", None)
    channel._created_with["host"] = "127.0.0.1"
    channel.close()
    assert "1 unacknowledged message(s) not restored now" in caplog.text


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    """A Redis of the test's own, to fill up (``full``) without touching the suite's."""
    server = RedisServer(free_port(), tmp_path).start()
    yield server
    server.stop()


def full(server: RedisServer, *, is_full: bool = True) -> None:
    server.client().config_set("maxmemory-policy", "noeviction")
    server.client().config_set("maxmemory", "1" if is_full else "0")


def consuming(connection: Connection, name: str) -> tuple[Any, list]:
    """A message published to queue ``name`` and a consumer on it: its channel and the messages it receives."""
    queue = Queue(name, Exchange(name), name)
    connection.Producer().publish({"task": "x"}, exchange=queue.exchange, routing_key=name, declare=[queue])
    channel = connection.channel()
    received: list = []
    Consumer(channel, [queue], callbacks=[lambda body, message: received.append(message)], accept=["json"]).consume()
    return channel, received


def test_acknowledging_on_a_full_redis_is_logged_not_fatal(own_redis, caplog):
    """kombu's own QoS.ack raised OutOfMemoryError out of the worker's event loop (every worker died while Redis was
    full under noeviction); here the message is forgotten locally and stays in Redis's unacked index."""
    with Connection(own_redis.url, transport=settings.CELERY_BROKER_TRANSPORT) as connection:
        channel, received = consuming(connection, "full")
        connection.drain_events(timeout=5)
        full(own_redis)
        with pytest.raises(redis.ResponseError):
            kombu_redis.QoS.ack(channel.qos, received[0].delivery_tag)  # kombu's own: the worker's crash
        received[0].ack()
        assert "could not acknowledge message" in caplog.text
        channel.qos._flush()
        assert not channel.qos._delivered
        full(own_redis, is_full=False)
        assert own_redis.client().hlen("unacked") == 1  # kept: delivered again after the visibility timeout


def test_receiving_on_a_full_redis_is_logged_not_fatal_and_the_task_runs(own_redis, caplog):
    """A message popped from its queue while Redis is full: kombu's own QoS.append raised OutOfMemoryError recording
    it as unacknowledged, out of the worker's event loop (the fault suite's worker died of it)."""
    with Connection(own_redis.url, transport=settings.CELERY_BROKER_TRANSPORT) as connection:
        channel, received = consuming(connection, "full-on-receipt")
        full(own_redis)
        connection.drain_events(timeout=5)
        assert [message.payload for message in received] == [{"task": "x"}]
        assert "could not record message" in caplog.text
        assert len(channel.qos._delivered) == 1  # held here, acknowledged when the task is done
        full(own_redis, is_full=False)


def test_kombus_own_transport_dies_receiving_on_a_full_redis(own_redis):
    """The failure the test above guards against, with kombu's own transport (if a release fixes it, this says so)."""
    with Connection(own_redis.url) as connection:
        assert type(connection.transport) is not broker.Transport
        consuming(connection, "full-on-receipt")
        full(own_redis)
        with pytest.raises(redis.ResponseError):
            connection.drain_events(timeout=5)
        full(own_redis, is_full=False)
