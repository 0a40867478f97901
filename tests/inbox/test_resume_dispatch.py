"""Sending the resume and reading what the agent does next, against real agents on loopback.

The dispatch service runs in the test process here (the Celery worker round trip is in
test_resume_worker.py); the agents are the demo agent in a subprocess and scripted HTTP servers.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import caches
from django.utils import timezone

from config.celery import app
from inbox.core.queue import mark_key
from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import AuditEvent, InboxItem, Resume, Run
from inbox.resumes.services import dispatch_mark, resume_dispatch, resume_requeue_stuck, resume_retry
from tests.agent_servers import Reply
from tests.conftest import load_events

pytestmark = pytest.mark.integration


def start(agent, user, message: str, thread_id: str | None = None) -> Run:
    return run_start(agent=agent, user=user, message=message, thread_id=thread_id).run


RECORDED_THREAD = "email-edit-148e0c3b"  # the thread of the recorded ag-ui-langgraph streams


def items(run: Run) -> list[InboxItem]:
    return list(run.items.order_by("position"))


def resume_of(run: Run) -> Resume:
    return Resume.objects.get(run=run)


def approve(item: InboxItem, user, **payload) -> None:
    decision_submit(item_id=item.pk, user=user, status="resolved", payload={"approved": True, **payload})


def test_approve_with_edits_executes_the_edited_arguments_and_records_the_result(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email bob@example.com")
    (item,) = items(run)
    assert item.tool_call["name"] == "sendEmail" and item.tool_call["args"]["to"] == "bob@example.com"
    edited = {"to": "bob@example.com", "subject": "Lunch (moved)", "body": "1pm instead."}
    approve(item, alice, editedArgs=edited)

    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"

    executed = demo_agent.record()["executed"]
    assert [(call["name"], call["args"]) for call in executed] == [("sendEmail", edited)]
    resume = Resume.objects.get(run=run)
    assert (resume.state, resume.attempts, resume.last_error) == ("delivered", 1, "")
    resumed = resume.resumed_run
    assert (resumed.run_id, resumed.source, resumed.outcome) == (resume.next_run_id, "resume", "success")
    item.refresh_from_db()
    assert item.tool_result["runId"] == resumed.run_id
    assert json.loads(item.tool_result["content"])["args"] == edited
    # The audit trail keeps the proposal and the decision as they were.
    assert item.tool_call["args"]["subject"] == "Lunch"
    assert item.response_payload["editedArgs"] == edited
    assert AuditEvent.objects.filter(verb="resume.delivered", object_id=str(resume.pk)).exists()
    assert AuditEvent.objects.filter(verb="item.tool_result", object_id=str(item.pk)).exists()


def test_parallel_approve_approve_cancel_runs_two_and_skips_the_cancelled_one(demo, demo_agent, alice):
    run = start(demo.agent, alice, "parallel")
    first, second, third = items(run)
    approve(first, alice)
    approve(second, alice)
    decision_submit(item_id=third.pk, user=alice, status="cancelled")

    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"

    executed = demo_agent.record()["executed"]
    assert [call["toolCallId"] for call in executed] == [first.tool_call_id, second.tool_call_id]
    for item in (first, second, third):
        item.refresh_from_db()
    assert first.tool_result and second.tool_result and third.tool_result is None
    assert resume_of(run).resumed_run.result == {
        "executed": ["sendEmail alice@example.com", "sendEmail bob@example.com"],
        "skipped": ["sendEmail carol@example.com cancelled"],
    }


def test_a_denied_call_is_not_executed(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    (item,) = items(run)
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": False})
    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"
    assert demo_agent.record()["executed"] == []
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"])["status"] == "denied"


def test_a_chained_interrupt_appears_in_the_inbox_and_its_own_resume_finishes_the_chain(demo, demo_agent, alice):
    run = start(demo.agent, alice, "chain")
    (step1,) = items(run)
    approve(step1, alice)
    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"

    second_run = resume_of(run).resumed_run
    assert second_run.outcome == "interrupt"
    (step2,) = items(second_run)
    assert (step2.status, step2.reason) == ("open", "confirmation")
    approve(step2, alice)
    assert resume_dispatch(resume_id=resume_of(second_run).pk) == "delivered"

    third_run = resume_of(second_run).resumed_run
    assert third_run.outcome == "success"
    assert [call["name"] for call in demo_agent.record()["executed"]] == ["createInvoice", "sendInvoice"]
    assert {r.thread_id for r in (run, second_run, third_run)} == {run.thread_id}


def test_the_filing_form_answer_reaches_the_agent(demo, demo_agent, alice):
    run = start(demo.agent, alice, "quarterly filing")
    (item,) = items(run)
    assert item.reason == "input_required"
    answer = {"quarter": "Q3", "year": 2026, "revenue": 4200000}
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload=answer)
    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"
    assert demo_agent.record()["executed"][0]["args"] == answer


def test_run_error_fails_the_resume_with_the_agents_message_and_an_operator_can_retry(demo, demo_agent, alice, staff):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    demo_agent.reset()  # the agent forgot the thread, as after a restart without a checkpointer

    assert resume_dispatch(resume_id=resume_of(run).pk) == "failed"
    resume = Resume.objects.get(run=run)
    assert resume.state == "failed"
    assert "Cannot correlate the resume" in resume.last_error
    assert resume.resumed_run.outcome == "error"

    resume_retry(resume=resume, user=staff)
    resume.refresh_from_db()
    # The attempt number keeps counting across a retry: it fences replies to attempts from before it.
    assert (resume.state, resume.attempts) == ("pending", 1)
    assert resume_dispatch(resume_id=resume.pk) == "failed"
    sent = [request for request in demo_agent.record()["requests"] if request["resume"]]
    assert len(sent) == 2 and sent[0]["input"] == sent[1]["input"] == resume.input
    assert Run.objects.filter(run_id=resume.next_run_id).count() == 1


def test_retry_is_refused_unless_the_resume_failed(demo, alice, staff):
    from inbox.resumes.services import ResumeRetryRefused

    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    with pytest.raises(ResumeRetryRefused):
        resume_retry(resume=resume_of(run), user=staff)


def test_an_item_expiring_between_the_decision_and_the_send_expires_the_resume(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert resume_dispatch(resume_id=resume_of(run).pk) == "expired"
    resume = Resume.objects.get(run=run)
    assert resume.state == "expired" and "not sent" in resume.last_error
    assert "the resume was never sent" in resume.last_error and resume.last_sent_at is None
    assert [r for r in demo_agent.record()["requests"] if r["resume"]] == []


def test_an_item_expiring_within_the_safety_margin_is_not_sent(demo, demo_agent, alice, settings):
    settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS = 30
    run = start(demo.agent, alice, "email")
    (item,) = items(run)
    approve(item, alice)
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() + timedelta(seconds=20))

    assert resume_dispatch(resume_id=resume_of(run).pk) == "expired"
    resume = Resume.objects.get(run=run)
    assert f"interrupt(s) {item.interrupt_id}" in resume.last_error and "30 s safety margin" in resume.last_error
    assert [r for r in demo_agent.record()["requests"] if r["resume"]] == []

    # Outside the margin it goes out.
    settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS = 2
    Resume.objects.filter(pk=resume.pk).update(state="pending", last_error="")
    assert resume_dispatch(resume_id=resume.pk) == "delivered"


def test_a_resume_sent_once_and_expired_before_the_retry_says_it_was_sent(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    resume = resume_of(run)
    sent_at = timezone.now() - timedelta(minutes=1)
    # Attempt 1 went out and its worker died; the item has expired since.
    Resume.objects.filter(pk=resume.pk).update(attempts=1, last_sent_at=sent_at)
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert resume_dispatch(resume_id=resume.pk) == "expired"
    resume.refresh_from_db()
    assert resume.last_error.startswith("attempt 2 not sent")
    assert f"an earlier attempt was sent at {sent_at.isoformat()}" in resume.last_error
    event = AuditEvent.objects.get(verb="resume.expired", object_id=str(resume.pk))
    assert event.data["everSent"] is True


def test_a_resume_is_sent_once_even_if_dispatched_twice(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"
    assert resume_dispatch(resume_id=resume_of(run).pk) == "not claimed"
    assert len([r for r in demo_agent.record()["requests"] if r["resume"]]) == 1


def test_a_replayed_resume_is_answered_as_a_replay_and_executes_nothing_twice(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    resume_dispatch(resume_id=resume_of(run).pk)
    again = demo_agent.post(resume_of(run).input)
    assert again[-1]["type"] == "RUN_FINISHED" and again[-1]["outcome"]["type"] == "success"
    record = demo_agent.record()
    assert [r["kind"] for r in record["runs"]] == ["start", "resume", "replay"]
    assert len(record["executed"]) == 1


def test_connection_refused_is_retried_with_capped_backoff_until_the_window_ends(make_agent, alice, settings, scripted):
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    agent = make_agent("down", endpoint=server.url).agent
    run = start(agent, alice, "email", RECORDED_THREAD)
    approve(items(run)[0], alice)
    server.stop()  # nothing listens there any more: connection refused
    resume = resume_of(run)
    assert resume.retry_until - resume.created_at == timedelta(hours=1)  # INBOX_RESUME_RETRY_WINDOW_SECONDS
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() + timedelta(days=2))

    assert resume_dispatch(resume_id=resume.pk) == "retry scheduled"
    resume.refresh_from_db()
    assert (resume.state, resume.attempts) == ("pending", 1)
    assert "Could not reach the agent" in resume.last_error
    assert resume.next_attempt_at > timezone.now()
    # Not before its time…
    assert resume_dispatch(resume_id=resume.pk) == "not claimed"
    # The backoff doubles up to the cap (300 s) and stays there: an hour of outage is about 20 attempts.
    # The clock stands still inside each attempt (tick=False), so a delay is the 1 s step plus the backoff,
    # however long a loaded machine takes over the attempt itself.
    delays = []
    while resume.state == "pending":
        before = resume.next_attempt_at
        with time_machine.travel(resume.next_attempt_at + timedelta(seconds=1), tick=False):
            resume_dispatch(resume_id=resume.pk)
        resume.refresh_from_db()
        if resume.next_attempt_at:
            delays.append((resume.next_attempt_at - before).total_seconds())
    assert resume.state == "failed" and "gave up after" in resume.last_error
    assert "the retry window ended" in resume.last_error
    assert max(delays) > 150 and all(delay <= 301 for delay in delays)
    assert 12 <= resume.attempts <= 40


def test_retries_stop_at_the_earliest_expiry(make_agent, alice, scripted):
    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    agent = make_agent("down", endpoint=server.url).agent
    run = start(agent, alice, "email", RECORDED_THREAD)
    (item,) = items(run)
    approve(item, alice)
    server.stop()
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() + timedelta(seconds=3))

    assert resume_dispatch(resume_id=resume_of(run).pk) == "failed"
    resume = resume_of(run)
    assert f"interrupt {item.interrupt_id} expires at" in resume.last_error
    assert "Could not reach the agent" in resume.last_error


@pytest.mark.parametrize(("status", "outcome"), [(503, "retry scheduled"), (401, "failed")])
def test_a_5xx_is_retried_and_a_4xx_is_not(make_agent, alice, scripted, status, outcome):
    server = scripted(
        Reply(sse=load_events("email-interrupted-run.jsonl")),
        Reply(status=status, body=b"nope", content_type="text/plain"),
    )
    agent = make_agent("flaky", endpoint=server.url, auth_header_value="Bearer agent-secret").agent
    run = start(agent, alice, "email", RECORDED_THREAD)
    approve(items(run)[0], alice)
    assert resume_dispatch(resume_id=resume_of(run).pk) == outcome
    assert f"HTTP {status}" in Resume.objects.get(run=run).last_error
    # The agent's outbound auth header and the SSE Accept header went with every request.
    assert all(h["Authorization"] == "Bearer agent-secret" for h in server.headers)
    assert all(h["Accept"] == "text/event-stream" for h in server.headers)


def test_ag_ui_langgraphs_resumed_run_is_read_as_success_and_reemitted_tool_calls_are_not_proposals(
    make_agent, alice, scripted
):
    server = scripted(
        Reply(sse=load_events("email-interrupted-run.jsonl")), Reply(sse=load_events("email-resumed-run.jsonl"))
    )
    agent = make_agent("langgraph", endpoint=server.url).agent
    run = start(agent, alice, "Email bob@example.com", RECORDED_THREAD)
    (item,) = items(run)
    edited = {"to": "bob@example.com", "subject": "Lunch (moved)", "body": "Let's do 1pm instead."}
    approve(item, alice, editedArgs=edited)
    # The recorded reply names its own runId: make ours match, as the live adapter echoes input.runId.
    Resume.objects.filter(pk=resume_of(run).pk).update(next_run_id="run-f58d37559e1f")

    assert resume_dispatch(resume_id=resume_of(run).pk) == "delivered"
    resumed = Resume.objects.get(run=run).resumed_run
    assert (resumed.outcome, resumed.outcome_omitted) == ("success", True)
    assert [call.get("reemitted") for call in resumed.tool_calls] == [True]
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"])["args"] == edited
    assert item.tool_call["args"]["subject"] == "Lunch" and item.response_payload["editedArgs"] == edited
    assert not InboxItem.objects.filter(run=resumed).exists()


def test_a_reply_that_is_not_an_event_stream_fails_the_resume(make_agent, alice, scripted):
    server = scripted(
        Reply(sse=load_events("email-interrupted-run.jsonl")),
        Reply(body=b"<html>hello</html>", content_type="text/html"),
    )
    agent = make_agent("garbage", endpoint=server.url).agent
    run = start(agent, alice, "email", RECORDED_THREAD)
    approve(items(run)[0], alice)
    assert resume_dispatch(resume_id=resume_of(run).pk) == "failed"
    assert "event stream" in Resume.objects.get(run=run).last_error


def test_a_row_left_sending_by_a_dead_worker_is_requeued_and_then_sent_with_the_same_run_id(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    resume = resume_of(run)
    now = timezone.now()
    Resume.objects.filter(pk=resume.pk).update(
        state="sending", attempts=1, claimed_at=now, lease_until=now + timedelta(seconds=15)
    )

    assert resume_requeue_stuck() == 0  # the lease still holds
    with time_machine.travel(now + timedelta(seconds=16)):
        assert resume_requeue_stuck() == 1
        resume.refresh_from_db()
        assert (resume.state, resume.attempts) == ("pending", 1)
        assert "worker lost" in resume.last_error
        assert resume_dispatch(resume_id=resume.pk) == "delivered"
    resume.refresh_from_db()
    assert resume.attempts == 2
    (sent,) = [r for r in demo_agent.record()["requests"] if r["resume"]]
    assert sent["runId"] == resume.next_run_id


def test_a_pending_resume_whose_queue_message_was_lost_is_queued_again_once_per_grace(demo, demo_agent, alice):
    run = start(demo.agent, alice, "email")
    approve(items(run)[0], alice)
    resume = resume_of(run)
    later = timezone.now() + timedelta(seconds=11)
    # Its dispatch message died with Redis (and its mark with it): nothing will run it, however long we wait.
    app.control.purge()
    caches["shared"]._cache.get_client(write=True).delete(mark_key(dispatch_mark(resume.pk)))
    with time_machine.travel(later, tick=False):
        assert resume_requeue_stuck() == 1  # INBOX_RESUME_REQUEUE_GRACE_SECONDS (10) past due
        assert resume_requeue_stuck() == 0  # once per grace period, not once per sweep
        resume.refresh_from_db()
        assert resume.state == "pending" and resume.next_attempt_at == later
        assert resume_dispatch(resume_id=resume.pk) == "delivered"
