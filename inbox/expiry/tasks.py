"""Celery tasks of expiry: the beat-driven sweep, reminders and the end of snoozes. Thin wrappers around one service each."""

from __future__ import annotations

from celery import shared_task

from inbox.expiry.reminders import reminders_send, snoozes_wake
from inbox.expiry.services import expire_sweep


@shared_task(name="inbox.tasks.expire_stale_items")
def expire_stale_items() -> int:

    return expire_sweep()


@shared_task(name="inbox.tasks.send_expiry_reminders")
def send_expiry_reminders() -> int:

    return reminders_send()


@shared_task(name="inbox.tasks.wake_snoozed_items")
def wake_snoozed_items() -> int:

    return snoozes_wake()
