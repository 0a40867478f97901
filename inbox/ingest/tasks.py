"""Celery task of runs started from the agent's page (``inbox.ingest.start``), queued by name."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="inbox.tasks.start_run", acks_late=True)
def start_run(start_id: int) -> str:
    from inbox.ingest.start import run_start_finish

    return run_start_finish(start_id)
