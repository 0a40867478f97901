"""Delivery failures: when a resume failed for good, the people who decided its run learn by mail that their
answer did not reach the agent. The resume outbox (``inbox.resumes.services``) writes these notices in the
transaction that fails the resume; they are sent after its commit and retried from their rows."""

from __future__ import annotations

import logging

from django.db import transaction

from inbox.audit.record import Actor, audit
from inbox.models import Decision, InboxItem, Notice, NotificationPreference, Resume
from inbox.resumes.states import delivery_of_resume
from inbox.teams import outbox
from inbox.teams.mail import absolute_url, email_message

log = logging.getLogger(__name__)


def notify_delivery_failed(resume_id: int) -> int:
    """Write and send the failure's notices (``delivery_failed_notices``). Returns how many emails were sent."""
    with transaction.atomic():
        notices = delivery_failed_notices(resume_id)
    return outbox.deliver([notice.pk for notice in notices])


def delivery_failed_notices(resume_id: int) -> list[Notice]:
    """The notices telling the people who decided a run's interrupts that their answer did not reach the agent
    (the resume failed for good: it is retried only by hand from the run page). Users who turned email off are
    left out. Call inside a transaction."""

    resume = Resume.objects.select_related("run", "agent").filter(pk=resume_id).first()
    if resume is None or resume.state != Resume.State.FAILED:
        return []
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
    messages = [(user, email_message(user, subject, "delivery_failed", context)) for user in users]
    if not messages:
        return []
    notices = outbox.email_notices(Notice.Kind.DELIVERY_FAILED, messages)
    audit(
        actor=Actor.system("notifications"),
        verb="resume.failure_notified",
        obj=resume,
        data={"recipients": [user.get_username() for user in users]},
    )
    return notices


def notify_delivery_failed_on_commit(resume_id: int) -> None:
    """Inside the transaction that failed the resume: write its notices (in a savepoint: a notice that cannot be
    written must not undo the failure; the run page shows it either way), sent after the commit."""
    try:
        with transaction.atomic():
            notices = delivery_failed_notices(resume_id)
    except Exception:  # noqa: BLE001 - the failure stands without its notice
        log.exception("could not write the notices of failed resume %s", resume_id)
        return
    outbox.deliver_on_commit(notices)


def on_resume_failed(sender: type, *, resume: Resume, **kwargs: object) -> None:
    """The ``resume_failed`` receiver: tell the people who decided that their answer is stuck."""
    notify_delivery_failed_on_commit(resume.pk)
