"""Celery tasks of resumes: send one resume; requeue resumes whose worker was lost.

The services import these tasks to queue them; the tasks reach the services lazily, the one lazy import
between the two modules (resumes.services -> resumes.tasks at module level)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="inbox.tasks.dispatch_resume", acks_late=True)
def dispatch_resume(resume_id: int) -> str:
    from inbox.resumes.services import resume_dispatch

    return resume_dispatch(resume_id=resume_id)


@shared_task(name="inbox.tasks.requeue_stuck_resumes")
def requeue_stuck_resumes() -> int:
    from inbox.resumes.services import resume_requeue_stuck

    return resume_requeue_stuck()
