"""Leases, not guesses: a resume being sent holds a lease its worker renews while it reads the agent's
reply. Only an expired lease is requeued; a worker whose lease was lost never overwrites a newer attempt;
a successful reply is never thrown away; a reply that makes storing it fail ends ``failed`` with the reason.

The dispatch runs on a thread of the test process (as a worker would), against real agents on loopback;
the database is shared with that thread (transactional tests)."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import AuditEvent, Resume, Run
from inbox.resumes import services
from inbox.resumes.services import resume_dispatch, resume_requeue_stuck
from tests.agent_servers import Reply, wait_for
from tests.conftest import load_events

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

THREAD = "email-edit-148e0c3b"  # the thread of the recorded ag-ui-langgraph streams


def sse(event: dict) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


def decided_run(make_agent, alice, server) -> tuple[Run, Resume]:
    agent = make_agent("slow", endpoint=server.url).agent
    run = run_start(agent=agent, user=alice, message="email", thread_id=THREAD).run
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    resume = Resume.objects.get(run=run)
    return run, resume


def resumed_reply(resume: Resume, *, pause: float, keepalive: float = 0.2) -> list[bytes | float]:
    """A resumed run that takes ``pause`` seconds between its start and its end, sending keep-alives."""
    started = sse({"type": "RUN_STARTED", "threadId": THREAD, "runId": resume.next_run_id})
    finished = sse({"type": "RUN_FINISHED", "threadId": THREAD, "runId": resume.next_run_id})
    beats = int(pause / keepalive)
    return [started, *[b": keep-alive\n\n", keepalive] * beats, finished]


def dispatch_in_thread(resume_id: int) -> tuple[threading.Thread, list[str]]:
    outcome: list[str] = []

    def work() -> None:
        try:
            outcome.append(resume_dispatch(resume_id=resume_id))
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    return thread, outcome


def test_a_slow_agent_keeps_its_lease_and_gets_the_resume_once(make_agent, alice, scripted, settings):
    settings.INBOX_RESUME_LEASE_SECONDS = 1.0
    settings.INBOX_RESUME_LEASE_RENEW_SECONDS = 0.2
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    server.replies.append(Reply(stream=resumed_reply(resume, pause=4)))

    thread, outcome = dispatch_in_thread(resume.pk)
    wait_for(lambda: len(server.received) == 2, what="the resume at the agent")
    leases = set()
    while thread.is_alive():  # beat, sweeping far more often than it would, for four lease periods
        assert resume_requeue_stuck() == 0
        row = Resume.objects.get(pk=resume.pk)
        if row.state == "sending":
            leases.add(row.lease_until)
        thread.join(0.1)
    assert outcome == ["delivered"]
    assert len(leases) >= 5  # renewed while reading
    resume.refresh_from_db()
    assert (resume.state, resume.attempts) == ("delivered", 1)
    assert len(server.received) == 2  # the start, and one resume


def test_a_lost_lease_is_requeued_and_the_late_success_of_the_old_attempt_is_kept(
    make_agent, alice, scripted, settings
):
    # The sending worker stalls (renewals far apart) and its lease lapses while the agent is still working.
    settings.INBOX_RESUME_LEASE_SECONDS = 0.5
    settings.INBOX_RESUME_LEASE_RENEW_SECONDS = 30
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    server.replies.append(Reply(stream=resumed_reply(resume, pause=2)))

    thread, outcome = dispatch_in_thread(resume.pk)
    wait_for(lambda: len(server.received) == 2, what="the resume at the agent")
    wait_for(lambda: Resume.objects.get(pk=resume.pk).lease_until < timezone.now(), what="the lease to lapse")
    assert resume_requeue_stuck() == 1
    requeued = Resume.objects.get(pk=resume.pk)
    assert requeued.state == "pending" and "stopped renewing its lease" in requeued.last_error
    thread.join(30)

    # The reply that arrived is the resumed run: it is kept, not discarded as "superseded".
    assert outcome == ["delivered"]
    resume.refresh_from_db()
    assert resume.state == "delivered" and resume.resumed_run.run_id == resume.next_run_id
    event = AuditEvent.objects.get(verb="resume.delivered", object_id=str(resume.pk))
    assert event.data["deliveredByAttempt"] == 1 and event.data["afterLeaseLost"] is True
    # The requeued attempt finds nothing left to do: the agent got the resume once.
    assert resume_dispatch(resume_id=resume.pk) == "not claimed"
    assert len(server.received) == 2


def test_an_attempt_whose_claim_moved_on_does_not_overwrite_the_newer_attempt(make_agent, alice, scripted):
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    now = timezone.now()
    Resume.objects.filter(pk=resume.pk).update(state="sending", attempts=1, lease_until=now, claimed_at=now)
    old = Resume.objects.get(pk=resume.pk)
    # Attempt 1's lease lapsed; attempt 2 now holds the row.
    Resume.objects.filter(pk=resume.pk).update(attempts=2, lease_until=now + timedelta(seconds=15))

    assert services._schedule_retry(old, "Could not reach the agent") == "superseded"
    services._finish_failed(old, "an error from attempt 1")
    row = Resume.objects.get(pk=resume.pk)
    assert (row.state, row.attempts, row.last_error) == ("sending", 2, "")


def test_a_reply_that_cannot_be_stored_fails_the_resume_with_the_reason(make_agent, alice, scripted):
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    started = {"type": "RUN_STARTED", "threadId": THREAD, "runId": resume.next_run_id}
    text = {"type": "TEXT_MESSAGE_START", "messageId": "m\u0000", "role": "assistant"}
    finished = {"type": "RUN_FINISHED", "threadId": THREAD, "runId": resume.next_run_id}
    server.replies.append(Reply(sse=[started, text, finished]))

    outcome = resume_dispatch(resume_id=resume.pk)
    resume.refresh_from_db()
    assert resume.state != "sending"
    if connection.vendor == "postgresql" or outcome == "failed":
        # PostgreSQL refuses NUL in text; the parser may refuse it first. Either way the record says why.
        assert (outcome, resume.state) == ("failed", "failed")
        assert "\\u0000" in resume.last_error or "NUL" in resume.last_error or "0x00" in resume.last_error
    else:
        assert outcome == "delivered"
