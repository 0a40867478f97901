"""Delivery failures: when a resume failed for good, the people who decided its run learn by mail that their
answer did not reach the agent. The outbox (``inbox.resumes.services``) calls this after its commit."""

from __future__ import annotations

import logging

from django.core.mail import get_connection
from django.db import transaction

from inbox.audit.record import Actor, audit
from inbox.models import Decision, InboxItem, NotificationPreference, Resume
from inbox.resumes.states import delivery_of_resume
from inbox.teams.mail import absolute_url, email_message

log = logging.getLogger(__name__)


def notify_delivery_failed(resume_id: int) -> int:
    """Email the people who decided a run's interrupts that their answer did not reach the agent (the resume
    failed for good: it is retried only by hand from the run page). Users who turned email off are left out.
    Returns how many emails were sent."""

    resume = Resume.objects.select_related("run", "agent").filter(pk=resume_id).first()
    if resume is None or resume.state != Resume.State.FAILED:
        return 0
    deciders = set(Decision.objects.filter(item__run_id=resume.run_id).values_list("user_id", flat=True)) | set(
        InboxItem.objects.filter(run_id=resume.run_id, decided_by__isnull=False).values_list("decided_by", flat=True)
    )
    from django.contrib.auth import get_user_model

    users = (
        get_user_model()
        .objects.filter(pk__in=deciders, is_active=True)
        .exclude(email="")
        .exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
        .order_by("pk")
    )
    items = list(resume.run.items.order_by("position"))
    context = {
        "agent": resume.agent,
        "run": resume.run,
        "resume": resume,
        "delivery": delivery_of_resume(resume),
        "items": items,
        "run_url": absolute_url(resume.run.get_absolute_url()),
    }
    subject = f"Not delivered: your answer to {resume.agent.name or resume.agent.slug} did not reach the agent"
    messages = [email_message(user, subject, "delivery_failed", context) for user in users]
    if not messages:
        return 0
    sent = get_connection().send_messages(messages) or 0
    audit(
        actor=Actor.system("notifications"),
        verb="resume.failure_notified",
        obj=resume,
        data={"recipients": [user.get_username() for user in users]},
    )
    return sent


def notify_delivery_failed_on_commit(resume_id: int) -> None:
    """After the commit that failed the resume: a mail server that is down must not undo the failure."""

    def send() -> None:
        try:
            notify_delivery_failed(resume_id)
        except Exception:  # noqa: BLE001 - email is best effort; the run page shows the failure anyway
            log.exception("could not email the deciders about failed resume %s", resume_id)

    transaction.on_commit(send)


def on_resume_failed(sender: type, *, resume: Resume, **kwargs: object) -> None:
    """The ``resume_failed`` receiver: tell the people who decided that their answer is stuck."""
    notify_delivery_failed_on_commit(resume.pk)
