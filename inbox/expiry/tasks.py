"""Celery task of expiry: the beat-driven sweep, a thin wrapper around its service."""

from __future__ import annotations

from celery import shared_task

from inbox.expiry.services import expire_sweep


@shared_task(name="inbox.tasks.expire_stale_items")
def expire_stale_items() -> int:

    return expire_sweep()
