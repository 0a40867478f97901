"""A waiting message is not a lost message: with no worker taking anything, the recovery sweep leaves a resume whose
dispatch message is still in Redis alone, however often it runs, and queues again only what Redis lost.

Real Redis (the test's), real Celery publishing; no worker (a stalled one takes nothing)."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone

from config.celery import app
from inbox.core.queue import mark_key, waiting
from inbox.decisions.services import decision_submit
from inbox.models import Resume
from inbox.resumes.services import dispatch_mark, resume_requeue_stuck
from tests.agent_servers import wait_for
from tests.factories import interrupted_run

pytestmark = pytest.mark.django_db(transaction=True)

PENDING = 200
SWEEPS = 5
CONSTANT = 10  # what may be in flight beyond one message per pending resume


def _queue_names() -> list[str]:
    return [settings.CELERY_TASK_DEFAULT_QUEUE, *getattr(settings, "INBOX_QUEUES", {}).values()]


def dispatch_messages(resume_ids: set[int]) -> int:
    """The dispatch_resume messages for these resumes waiting in any of the inbox's queues."""
    with app.connection_for_write() as connection:
        client = connection.default_channel.client
        count = 0
        for name in _queue_names():
            for raw in client.lrange(name, 0, -1):
                message = json.loads(raw)
                if message["headers"].get("task") == "inbox.tasks.dispatch_resume":
                    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
                    count += args[0] in resume_ids
        return count


def forget_everything_queued(resume_ids: set[int]) -> None:
    """What a Redis restarted empty leaves: no queued message and no mark."""
    app.control.purge()
    with app.connection_for_write() as connection:
        client = connection.default_channel.client
        for name in _queue_names():
            client.delete(name)
        for pk in resume_ids:
            client.delete(mark_key(dispatch_mark(pk)))


@pytest.fixture
def pending_resumes(agent, alice, settings) -> set[int]:
    settings.INBOX_UNDO_SECONDS = 0
    forget_everything_queued(set())
    for index in range(PENDING):
        run = interrupted_run(agent.agent, f"backlog-{index}", f"run-{index}", 60)
        decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    ids = set(Resume.objects.filter(state="pending").values_list("pk", flat=True))
    assert len(ids) == PENDING
    yield ids
    forget_everything_queued(ids)


def test_sweeps_over_a_stalled_queue_never_add_to_it_and_queue_again_only_what_redis_lost(pending_resumes):
    assert dispatch_messages(pending_resumes) == PENDING  # one message each, queued on commit
    now = timezone.now()
    grace = settings.INBOX_RESUME_REQUEUE_GRACE_SECONDS
    sweep = 0
    for sweep in range(1, SWEEPS + 1):
        # Each sweep comes after the grace period again: every row is long overdue, its message still waiting.
        with time_machine.travel(now + timedelta(seconds=sweep * (grace + 1)), tick=False):
            resume_requeue_stuck()
    assert dispatch_messages(pending_resumes) <= PENDING + CONSTANT
    assert Resume.objects.filter(pk__in=pending_resumes, state="pending").count() == PENDING

    forget_everything_queued(pending_resumes)  # Redis restarted empty
    assert dispatch_messages(pending_resumes) == 0
    with time_machine.travel(now + timedelta(seconds=(sweep + 1) * (grace + 1)), tick=False):
        assert resume_requeue_stuck() == PENDING
    for later in range(sweep + 2, sweep + 2 + SWEEPS):
        with time_machine.travel(now + timedelta(seconds=later * (grace + 1)), tick=False):
            assert resume_requeue_stuck() == 0  # queued again, and waiting: not lost any more
    assert dispatch_messages(pending_resumes) == PENDING


@pytest.mark.worker
def test_a_message_a_killed_worker_held_for_its_countdown_is_queued_again_once_due(
    start_worker, agent, alice, settings
):
    settings.INBOX_UNDO_SECONDS = 30  # the resume is held, its message waits out the countdown in the worker
    run = interrupted_run(agent.agent, "held-by-worker", "run-held", 60)
    decision_submit(
        item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True}, undoable=True
    )
    resume = Resume.objects.get(run=run)
    assert waiting([dispatch_mark(resume.pk)])  # published, not yet received
    worker = start_worker()
    wait_for(lambda: not waiting([dispatch_mark(resume.pk)]), what="the worker to receive the held message")
    worker.kill()  # with the message in its hands: Redis keeps it unacknowledged, for the visibility timeout (1 h)

    resume.refresh_from_db()
    assert resume.state == "pending"
    due = resume.next_attempt_at + timedelta(seconds=settings.INBOX_RESUME_REQUEUE_GRACE_SECONDS + 1)
    with time_machine.travel(due, tick=False):
        assert resume_requeue_stuck() == 1  # not waiting in any queue: lost to the inbox, queued again
        assert resume_requeue_stuck() == 0
    assert waiting([dispatch_mark(resume.pk)])
