"""What the inbox reads from an agent is bounded while it reads: an overall deadline, a cap on one line and
on the whole reply. Each agent here is a real HTTP server on loopback streaming its reply piece by piece."""

from __future__ import annotations

import json

import pytest

from agents.client import AgentCallError, run_agent
from agents.models import Agent
from inbox.models import Run
from tests.agent_servers import Reply
from tests.conftest import free_port
from tests.helpers.starts import start_run

RUN_INPUT = {
    "threadId": "t-1",
    "runId": "r-1",
    "state": {},
    "messages": [],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}


def sse(event: dict) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


STARTED = sse({"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"})
FINISHED = sse({"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"})


def agent_at(url: str) -> Agent:
    return Agent(slug="bounded", name="Bounded", endpoint_url=url)


def call(server) -> list[dict]:
    return run_agent(agent=agent_at(server.url), run_input=RUN_INPUT)


def test_keep_alives_forever_end_at_the_stream_deadline(scripted, settings):
    settings.INBOX_AGENT_STREAM_DEADLINE = 1.5
    server = scripted(Reply(stream=[STARTED, *([b": keep-alive\n\n", 0.1] * 600), FINISHED]))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "did not finish within the 1.5 s deadline" in caught.value.message
    # It answered 2xx and began its reply: it has the input, so the cut is not a failure that invites a resend.
    assert (caught.value.retryable, caught.value.accepted) == (False, True)


def test_a_silent_agent_is_cut_by_the_read_timeout_bounded_by_the_deadline(scripted, settings):
    settings.INBOX_AGENT_READ_TIMEOUT = 60
    settings.INBOX_AGENT_STREAM_DEADLINE = 1
    server = scripted(Reply(stream=[STARTED, 30.0, FINISHED]))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "sent nothing for 1 s (the read timeout)" in caught.value.message
    assert (caught.value.retryable, caught.value.accepted) == (False, True)


def test_an_agent_silent_before_its_headers_is_a_timeout_not_retried(scripted, settings):
    settings.INBOX_AGENT_READ_TIMEOUT = 1
    server = scripted(Reply(hang=True))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "did not answer within 1 s (the read timeout)" in caught.value.message
    assert (caught.value.retryable, caught.value.accepted, caught.value.kind) == (False, False, "timeout")


def test_a_refused_connection_is_retryable():
    with pytest.raises(AgentCallError) as caught:  # a real loopback port nothing listens on
        run_agent(agent=agent_at(f"http://127.0.0.1:{free_port()}/"), run_input=RUN_INPUT)
    assert (caught.value.retryable, caught.value.accepted, caught.value.kind) == (True, False, "transport")


def test_one_huge_data_line_is_refused_before_it_is_read_whole(scripted, settings):
    settings.INBOX_AGENT_LINE_MAX_BYTES = 64 * 1024
    # 8 MiB of one line, sent in 64 KiB pieces; the reader must stop after the cap, not buffer it all.
    piece = b"x" * 65536
    server = scripted(Reply(stream=[STARTED, b'data: {"type": "TEXT_MESSAGE_CONTENT", "delta": "', *[piece] * 128]))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert f"longer than the {64 * 1024} bytes" in caught.value.message
    assert caught.value.retryable is False


def test_the_whole_reply_is_capped(scripted, settings):
    settings.INBOX_AGENT_REPLY_MAX_BYTES = 100_000
    text = sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "y" * 1000})
    server = scripted(Reply(stream=[STARTED, *[text] * 500, FINISHED]))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "larger than the 100000 bytes" in caught.value.message


def test_the_number_of_events_is_capped(scripted, settings):
    settings.INBOX_AGENT_REPLY_MAX_EVENTS = 10
    text = sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "y"})
    server = scripted(Reply(stream=[STARTED, *[text] * 50, FINISHED]))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "more than the 10 events" in caught.value.message


def test_a_reply_split_anywhere_and_with_crlf_is_read_event_by_event(scripted):
    body = (
        b": a comment first\r\n"
        + STARTED.replace(b"\n", b"\r\n")
        + b'data: {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}\n\n'
        + FINISHED
    )
    # One byte at a time: every line and every CRLF is split across reads.
    server = scripted(Reply(stream=[body[i : i + 1] for i in range(len(body))]))
    events = call(server)
    assert [event["type"] for event in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_FINISHED"]


def test_a_reply_that_is_not_utf8_is_refused(scripted):
    server = scripted(Reply(stream=[STARTED, b'data: {"type": "RUN_FINISHED", "threadId": "\xff"}\n\n']))
    with pytest.raises(AgentCallError) as caught:
        call(server)
    assert "not UTF-8" in caught.value.message


def test_a_run_started_from_the_inbox_ends_at_the_deadline_with_a_502_naming_it(
    client, make_agent, alice, scripted, settings
):
    settings.INBOX_AGENT_STREAM_DEADLINE = 1
    server = scripted(Reply(stream=[STARTED, *([b": keep-alive\n\n", 0.1] * 600)]))
    make_agent("endless", endpoint=server.url)
    client.force_login(alice)
    response = start_run(client, "endless", {"message": "email"})
    assert response.status_code == 502
    assert response.json()["error"] == "agent_bad_reply"
    assert "did not finish within the 1 s deadline" in response.json()["detail"]
    assert not Run.objects.exists()


def test_a_resume_whose_agent_never_ends_is_delivered_with_the_result_unknown(make_agent, alice, scripted, settings):
    from inbox.decisions.services import decision_submit
    from inbox.ingest.start import run_start
    from inbox.models import Resume
    from inbox.resumes.services import resume_dispatch
    from tests.conftest import load_events

    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    agent = make_agent("endless", endpoint=server.url).agent
    run = run_start(agent=agent, user=alice, message="email", thread_id="email-edit-148e0c3b").run
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    server.replies.append(Reply(stream=[STARTED, *([b": keep-alive\n\n", 0.1] * 600)]))
    settings.INBOX_AGENT_STREAM_DEADLINE = 1

    assert resume_dispatch(resume_id=Resume.objects.get(run=run).pk) == "accepted"
    resume = Resume.objects.get(run=run)
    assert resume.state == "accepted" and "did not finish within the 1 s deadline" in resume.last_error
    assert resume.delivered_at is not None and len(server.received) == 2
