"""Celery tasks of the audit log: sealing new events into the chain, and the retention purge."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from inbox.audit.chain import purge, seal_pending


@shared_task(name="inbox.tasks.seal_audit_log")
def seal_audit_log() -> int:
    return seal_pending()


@shared_task(name="inbox.tasks.purge_audit_log")
def purge_audit_log() -> int:
    """Purge events older than ``INBOX_AUDIT_RETENTION_DAYS`` (0 keeps everything) behind a signed checkpoint."""
    if settings.INBOX_AUDIT_RETENTION_DAYS <= 0:
        return 0
    seal_pending()
    checkpoint = purge(before=timezone.now() - timedelta(days=settings.INBOX_AUDIT_RETENTION_DAYS))
    return checkpoint.events_purged if checkpoint is not None else 0
