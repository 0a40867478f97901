"""Queueing a Celery task by name once the transaction that made its row commits, and the backoff between the
attempts of an outbox row (resumes, notices)."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.db import transaction

log = logging.getLogger(__name__)


def send_on_commit(name: str, args: list[Any], *, when_unqueued: Callable[[], None]) -> None:
    """Send task ``name`` after the commit. When the broker is down, ``when_unqueued`` records it on the row (so a
    progress page says so rather than wait for ever)."""

    def send() -> None:
        try:
            current_app.send_task(name, args=args)
        except Exception:
            log.exception("could not queue %s%s", name, tuple(args))
            when_unqueued()

    transaction.on_commit(send)


def backoff_seconds(attempts: int, *, base: float, cap: float) -> float:
    """Capped exponential backoff with equal jitter: between half and all of min(cap, base·2^(n-1))."""
    ceiling = min(cap, base * 2 ** max(attempts - 1, 0))
    return ceiling / 2 + random.uniform(0, ceiling / 2)
