"""What a resume carries as ``messages`` (issue 14): the interrupted run's MESSAGES_SNAPSHOT when it sent one;
otherwise the conversation rebuilt from the input the run answered and the run's own tool calls and results."""

from __future__ import annotations

import pytest

from inbox.decisions.services import decision_submit
from inbox.models import Run
from inbox.resumes.input import build_resume_input
from tests.agent_servers import Reply
from tests.conftest import load_events
from tests.helpers.starts import start_run

ARGS = '{"to": "a@b.com", "subject": "Hi"}'


def events(thread: str, run: str, *, input_messages: list | None = None, results: list | None = None) -> list:
    started = {"type": "RUN_STARTED", "threadId": thread, "runId": run}
    if input_messages is not None:
        started["input"] = {
            "threadId": thread,
            "runId": run,
            "state": {},
            "messages": input_messages,
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    body = [
        started,
        *(
            {"type": "TOOL_CALL_RESULT", "messageId": f"m-{r}", "toolCallId": r, "content": "done"}
            for r in results or []
        ),
        {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "sendEmail"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": ARGS},
        {"type": "TOOL_CALL_END", "toolCallId": "tc-1"},
        {
            "type": "RUN_FINISHED",
            "threadId": thread,
            "runId": run,
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "int-1", "reason": "tool_call", "toolCallId": "tc-1"}],
            },
        },
    ]
    return body


def decided_input(run: Run, user) -> dict:
    item = run.items.get()
    decision_submit(item_id=item.pk, user=user, status="resolved", payload={"approved": True})
    item.refresh_from_db()
    return build_resume_input(run=run, items=[item], next_run_id="run-next")


def posted(agent, ingest, body: list) -> Run:
    response = ingest(agent, {"events": body})
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def test_without_a_snapshot_the_resume_carries_the_echoed_input_and_the_proposal(agent, ingest, alice):
    user_message = {"id": "u-1", "role": "user", "content": "Email a@b.com"}
    run = posted(agent, ingest, events("t-1", "r-1", input_messages=[user_message]))
    assert run.messages_snapshot is None and run.input["messages"] == [user_message]
    sent = decided_input(run, alice)
    assert sent["messages"] == [
        user_message,
        {
            "id": "assistant-r-1",
            "role": "assistant",
            "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "sendEmail", "arguments": ARGS}}],
        },
    ]
    assert sent["resume"] == [{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}]


def test_results_of_earlier_calls_come_before_the_proposal_as_tool_messages(agent, ingest, alice):
    run = posted(agent, ingest, events("t-2", "r-2", input_messages=[], results=["tc-0"]))
    sent = decided_input(run, alice)
    assert [(m["role"], m.get("toolCallId")) for m in sent["messages"]] == [("tool", "tc-0"), ("assistant", None)]
    assert sent["messages"][0] == {"id": "m-tc-0", "role": "tool", "content": "done", "toolCallId": "tc-0"}


def test_with_no_input_known_the_resume_carries_the_proposal_alone(agent, ingest, alice):
    run = posted(agent, ingest, events("t-3", "r-3"))
    sent = decided_input(run, alice)
    assert [m["role"] for m in sent["messages"]] == ["assistant"]


def test_a_messages_snapshot_is_sent_as_the_agent_sent_it(agent, ingest, alice):
    recorded = load_events("email-interrupted-run.jsonl")
    response = ingest(agent, {"events": recorded})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    sent = decided_input(run, alice)
    assert sent["messages"] == run.messages_snapshot


@pytest.mark.integration
def test_a_run_the_inbox_started_resumes_with_the_message_it_sent(make_agent, scripted, alice, client):
    reply_events = events("t-4", "r-4")[:1] + events("t-4", "r-4")[2:]
    reply_events[0].pop("input", None)
    agent = scripted(Reply(sse=reply_events), Reply(sse=[{"type": "RUN_FINISHED", "threadId": "t-4", "runId": "x"}]))
    make_agent("started", endpoint=agent.url)
    client.force_login(alice)
    response = start_run(client, "started", {"message": "Email a@b.com", "threadId": "t-4"})
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    sent = decided_input(run, alice)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant"]
    assert sent["messages"][0]["content"] == "Email a@b.com"
    assert sent["messages"][0] == agent.received[0]["messages"][-1]
