"""A slow agent receives its resume once at a time. The inbox sends a second copy only when the agent cannot be
working on the first (it refused the connection, answered 5xx, or cut its own reply); an agent that was sent
the input and is still holding the request, silent or sending keep-alives, never gets another one by itself.

- silent, not even response headers within ``INBOX_AGENT_READ_TIMEOUT``: ``failed``, needs a person;
- 2xx and keep-alives past ``INBOX_AGENT_STREAM_DEADLINE``: ``accepted`` (delivered, result unknown);
- 2xx, then silent for ``INBOX_AGENT_READ_TIMEOUT``: ``accepted`` too.

Real HTTP servers on loopback (tests/agent_servers.py); the dispatch runs on a thread as a worker would, and beat's
sweep plus duplicate task messages are run again and again while the copy is open. The deadlines are shortened
through the settings; the fault suite (tests/faults/delivery_scenarios.py) runs the 150 s versions."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from inbox.models import AuditEvent, Resume
from inbox.resumes.services import resume_dispatch, resume_requeue_stuck
from tests.agent_servers import Reply, ScriptedServer, wait_for
from tests.conftest import load_events
from tests.inbox.test_resume_leases import decided_run, resumed_reply, sse

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fast(settings):
    settings.INBOX_RESUME_LEASE_SECONDS = 1.0
    settings.INBOX_RESUME_LEASE_RENEW_SECONDS = 0.2
    settings.INBOX_RESUME_BACKOFF_BASE = 0.05
    settings.INBOX_RESUME_BACKOFF_CAP = 0.1
    settings.INBOX_RESUME_REQUEUE_GRACE_SECONDS = 0.1
    return settings


def send_while_sweeping(resume_id: int, seconds: float) -> list[str]:
    """Dispatch on a worker-like thread; meanwhile, for ``seconds``, beat sweeps and stray task messages arrive
    (each one a ``resume_dispatch`` of the same row), far more often than they would."""
    outcome: list[str] = []

    def work() -> None:
        try:
            outcome.append(resume_dispatch(resume_id=resume_id))
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    # The sweeps start once the worker holds the row (a stray message that came first would be the sender).
    wait_for(lambda: Resume.objects.get(pk=resume_id).state != "pending" or not thread.is_alive(), what="the claim")
    until = time.monotonic() + seconds
    while time.monotonic() < until or thread.is_alive():
        resume_requeue_stuck()
        resume_dispatch(resume_id=resume_id)
        time.sleep(0.05)
    thread.join()
    return outcome


def copies(server: ScriptedServer) -> int:
    return len(server.received) - 1  # the first request started the run


def test_a_silent_agent_gets_one_copy_while_it_holds_it_and_the_resume_waits_for_a_person(
    make_agent, alice, scripted, fast
):
    fast.INBOX_AGENT_READ_TIMEOUT = 1.5
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    server.replies.append(Reply(hang=True))  # holds the request, says nothing (not even headers), for 60 s

    outcome = send_while_sweeping(resume.pk, seconds=5)

    assert outcome == ["failed"]
    assert copies(server) == 1, "a second copy was sent while the agent still held the first"
    assert not server.release.is_set()  # the agent is still holding it: the check covered the open copy
    resume.refresh_from_db()
    assert (resume.state, resume.attempts) == ("failed", 1)
    assert "did not answer within 1.5 s (the read timeout)" in resume.last_error
    assert "not sent again by itself" in resume.last_error


def test_a_keep_alive_agent_past_the_deadline_is_delivered_with_the_result_unknown_and_sent_once(
    client, make_agent, alice, scripted, fast
):
    fast.INBOX_AGENT_STREAM_DEADLINE = 2.5
    fast.INBOX_AGENT_READ_TIMEOUT = 1
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    server.replies.append(Reply(stream=resumed_reply(resume, pause=8)))  # keep-alives every 0.2 s for 8 s

    outcome = send_while_sweeping(resume.pk, seconds=4)

    assert outcome == ["accepted"]
    assert copies(server) == 1
    resume.refresh_from_db()
    assert (resume.state, resume.attempts) == ("accepted", 1)
    assert "did not finish within the 2.5 s deadline" in resume.last_error and resume.delivered_at
    assert AuditEvent.objects.filter(verb="resume.accepted", object_id=str(resume.pk)).count() == 1
    assert not AuditEvent.objects.filter(verb__in=["resume.failed", "resume.retry_scheduled", "resume.requeued"])
    client.force_login(alice)
    delivery = client.get(f"/api/v1/items/{run.items.get().pk}").json()["delivery"]
    assert (delivery["state"], delivery["label"]) == ("delivered-result-unknown", "Delivered, result unknown")
    assert "It is not sent again by itself." in delivery["sentence"]


def test_an_agent_silent_after_its_2xx_is_delivered_with_the_result_unknown(make_agent, alice, scripted, fast):
    fast.INBOX_AGENT_READ_TIMEOUT = 1
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    run, resume = decided_run(make_agent, alice, server)
    started = sse({"type": "RUN_STARTED", "threadId": run.thread.thread_id, "runId": resume.next_run_id})
    server.replies.append(Reply(stream=[started, 30.0]))

    outcome = send_while_sweeping(resume.pk, seconds=3)

    assert outcome == ["accepted"] and copies(server) == 1
    resume.refresh_from_db()
    assert resume.state == "accepted" and "sent nothing for 1 s (the read timeout)" in resume.last_error
