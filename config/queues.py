"""The Celery queues, by urgency, named from ``CELERY_QUEUE`` (settings, the `make run` launcher and the Procfile's
``-Q`` lists agree through this module, which loads no Django). docs/operations.md gives each its workers."""

from __future__ import annotations

import os

# In the order a person would rank them: a deadline (expiry, escalation, snooze returns, reminders, the recovery
# sweeps) before a resume to an agent, before a notification, before batch work (backtests, digests).
KINDS = ("deadlines", "resumes", "notifications", "batch")


def prefix() -> str:
    """``CELERY_QUEUE`` (default ``inbox``); under pytest-xdist each test process gets its own (see settings)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return os.environ.get("CELERY_QUEUE", "inbox") + (f"-{worker}" if worker else "")


def name(kind: str) -> str:
    return f"{prefix()}-{kind}"


def every() -> list[str]:
    """The default queue (any task not routed) and the four by urgency."""
    return [prefix(), *(name(kind) for kind in KINDS)]
