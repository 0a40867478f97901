"""Queueing a Celery task by name, knowing whether a row's message is still in the broker (a message sent with a
mark is recorded in Redis until a worker receives it, so a sweep sends a row's task again only when its message is
gone, never because its queue is long: docs/reliability.md), and the backoff between the attempts of an outbox row
(resumes, notices)."""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import caches
from django.db import transaction

log = logging.getLogger(__name__)

# The message header naming the mark a message is recorded under (read by the worker that receives it).
MARK_HEADER = "inbox_mark"


def _redis() -> Any:
    cache = caches["shared"]
    return cache._cache.get_client(write=True)  # type: ignore[attr-defined]


def mark_key(mark: str) -> str:
    """The Redis key of a mark (in the shared cache's key space, so a test process's keys are its own)."""
    return caches["shared"].make_key(f"queued:{mark}")


def send_marked(name: str, args: list[Any], *, mark: str, countdown: float | None = None) -> None:
    """Publish task ``name`` now, recorded under ``mark`` until a worker receives it. Raises what publishing raises
    (the broker is down): the mark is then taken back, so the sweep knows the message is not there."""
    key, task_id = mark_key(mark), uuid.uuid4().hex
    client = None
    try:
        client = _redis()
        client.pipeline(transaction=False).sadd(key, task_id).expire(
            key, int(settings.INBOX_QUEUE_MARK_SECONDS)
        ).execute()
    except Exception:  # noqa: BLE001 - Redis refuses: publishing will say so, or the sweep sends it again once
        log.warning("could not mark the message of %s%s", name, tuple(args), exc_info=True)
    try:
        current_app.send_task(name, args=args, countdown=countdown, task_id=task_id, headers={MARK_HEADER: key})
    except Exception:
        if client is not None:
            try:
                client.srem(key, task_id)
            except Exception:  # noqa: BLE001 - Redis is gone: the mark went with it
                pass
        raise


def received(key: str, task_id: str) -> None:
    """A worker received the message ``task_id`` recorded under ``key`` (``config.celery``'s receive hook)."""
    _redis().srem(key, task_id)


def waiting(marks: Iterable[str]) -> set[str]:
    """The marks among ``marks`` with a message in the broker that no worker received yet. Raises when Redis
    cannot be read (the broker is down: sending again now would fail anyway)."""
    marks = list(marks)
    found: set[str] = set()
    client = _redis()
    for start in range(0, len(marks), 1000):
        chunk = marks[start : start + 1000]
        pipe = client.pipeline(transaction=False)
        for mark in chunk:
            pipe.scard(mark_key(mark))
        found.update(mark for mark, count in zip(chunk, pipe.execute(), strict=True) if count)
    return found


def send_on_commit(name: str, args: list[Any], *, when_unqueued: Callable[[], None], mark: str | None = None) -> None:
    """Send task ``name`` after the commit (recorded under ``mark``, if given: ``send_marked``). When the broker is
    down, ``when_unqueued`` records it on the row (so a progress page says so rather than wait for ever)."""

    def send() -> None:
        try:
            if mark is not None:
                send_marked(name, args, mark=mark)
            else:
                current_app.send_task(name, args=args)
        except Exception:
            log.exception("could not queue %s%s", name, tuple(args))
            when_unqueued()

    transaction.on_commit(send)


def backoff_seconds(attempts: int, *, base: float, cap: float) -> float:
    """Capped exponential backoff with equal jitter: between half and all of min(cap, base·2^(n-1))."""
    ceiling = min(cap, base * 2 ** max(attempts - 1, 0))
    return ceiling / 2 + random.uniform(0, ceiling / 2)
