"""Deadlines never wait behind bulk work: every task goes to the queue of its urgency, and with the workers `make run`
starts (one on every queue, one on the deadlines alone) an escalation fires on time while a thousand resume messages
wait, some of them for an agent that takes seconds to answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from inbox.decisions.services import decision_submit
from inbox.models import Escalation, EscalationRule, InboxItem, Resume
from tests.agent_servers import Reply, wait_for
from tests.factories import TeamFactory, interrupted_run

ROUTES = {
    "deadlines": [
        "inbox.tasks.expire_stale_items",
        "inbox.notifications.escalate",
        "inbox.tasks.wake_snoozed_items",
        "inbox.tasks.send_expiry_reminders",
        "inbox.tasks.requeue_stuck_resumes",
        "inbox.tasks.requeue_stalled_backtests",
    ],
    "resumes": ["inbox.tasks.dispatch_resume", "inbox.tasks.start_run"],
    "notifications": [
        "inbox.notifications.announce_new_runs",
        "inbox.notifications.notify_missed_runs",
        "inbox.notifications.deliver_webhook",
        "inbox.notifications.notify_superseded",
        "inbox.notifications.send_notices",
        "inbox.notifications.sweep_notices",
    ],
    "batch": [
        "inbox.tasks.backtest_policy",
        "inbox.notifications.send_digests",
        "inbox.tasks.seal_audit_log",
        "inbox.tasks.purge_audit_log",
    ],
}


def queue_of(task_name: str) -> str:
    return app.amqp.router.route({}, task_name)["queue"].name


def test_each_task_goes_to_the_queue_of_its_urgency():
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE
    expected = {name: f"{prefix}-{kind}" for kind, names in ROUTES.items() for name in names}
    app.loader.import_default_modules()
    ours = {name for name in app.tasks if name.startswith("inbox.")}
    assert ours == set(expected), "a task without a queue of its own: add it to CELERY_TASK_ROUTES and here"
    assert {name: queue_of(name) for name in ours} == expected
    # A notification task added later goes with the notifications; anything else to the default queue.
    assert queue_of("inbox.notifications.something_new") == f"{prefix}-notifications"
    # Beat's sweeps are routed the same way (beat sends them by name), and each expires after its period.
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in expected
        assert entry["options"]["expires"] == entry["schedule"]


@pytest.mark.worker
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_escalation_fires_on_time_while_a_thousand_resume_messages_wait(
    start_worker, make_agent, alice, staff, scripted, settings
):
    settings.INBOX_UNDO_SECONDS = 0
    slow = scripted(Reply(stream=[b"", 3.0]))  # takes 3 s over every resume
    agent = make_agent("slow", endpoint=slow.url).agent
    for index in range(20):
        run = interrupted_run(agent, f"slow-{index}", f"run-{index}", 60)
        decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    for missing in range(1000):  # messages of resumes that are no longer there: each still takes a worker's turn
        app.send_task("inbox.tasks.dispatch_resume", args=[10**9 + missing])

    finance = TeamFactory(name="Finance leads")
    # Finance decides nothing of alice's team: a rule that gives it the items is staff's to set.
    EscalationRule.objects.create(team=alice.groups.get(), after_minutes=1, to_team=finance, created_by=staff)
    item = interrupted_run(agent, "escalate-me", "run-escalate", 60).items.get()

    env = {"INBOX_ESCALATION_SWEEP_SECONDS": "1", "INBOX_RECOVERY_SWEEP_SECONDS": "60"}
    start_worker(queues=[settings.INBOX_QUEUES["deadlines"]], extra_env=env)  # as `make run`'s deadlines worker
    start_worker(beat=True, extra_env=env)  # and its worker on every queue (solo here: one process)
    # Due a few seconds after both are up: the backlog is there, and the worker on every queue is in it.
    due = timezone.now() + timedelta(seconds=5)
    InboxItem.objects.filter(pk=item.pk).update(created_at=due - timedelta(minutes=1))

    escalation = wait_for(lambda: Escalation.objects.filter(item=item).first(), timeout=90, what="the escalation")
    lateness = (escalation.fired_at - due).total_seconds()
    assert lateness <= 5, f"the escalation fired {lateness:.1f} s after it was due"
    # ...while the resumes were still queued behind the slow agent.
    assert Resume.objects.filter(run__agent=agent, state="pending").count() >= 10
