"""Celery tasks: thin wrappers that load rows by id and call one service. Safe to run twice."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="inbox.tasks.dispatch_resume", acks_late=True)
def dispatch_resume(resume_id: int) -> str:
    from inbox.resumes import resume_dispatch

    return resume_dispatch(resume_id=resume_id)


@shared_task(name="inbox.tasks.requeue_stuck_resumes")
def requeue_stuck_resumes() -> int:
    from inbox.resumes import resume_requeue_stuck

    return resume_requeue_stuck()


@shared_task(name="inbox.tasks.expire_stale_items")
def expire_stale_items() -> int:
    from inbox.expiry import expire_sweep

    return expire_sweep()


@shared_task(name="inbox.tasks.send_expiry_reminders")
def send_expiry_reminders() -> int:
    from inbox.expiry import reminders_send

    return reminders_send()


from inbox import notifications as _notifications  # noqa: E402,F401  (registers its tasks)
