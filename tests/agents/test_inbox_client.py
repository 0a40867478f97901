"""The agent authors' client, against the real product served on loopback."""

from __future__ import annotations

import pytest
from ag_ui.encoder import EventEncoder

from agents.demo import DemoAgent
from agents.inbox_client import InboxError, aforward_interrupts, forward_interrupts, post_run
from inbox.models import InboxItem, Run
from tests.conftest import load_events, run_async


def demo_events(message: str, thread_id: str = "client-thread") -> list:
    return DemoAgent().handle(
        {
            "threadId": thread_id,
            "runId": f"run-{thread_id}",
            "messages": [{"id": "u1", "role": "user", "content": message}],
        }
    )


def test_post_run_parks_the_interrupts_and_is_safe_to_repeat(live_asgi, agent):
    events = load_events("email-interrupted-run.jsonl")  # RAW events and rawEvent fields are left out
    first = post_run(events, base_url=live_asgi, token=agent.token)
    again = post_run(events, base_url=live_asgi, token=agent.token)
    assert first["id"] == again["id"]
    assert first["items"][0]["url"].startswith(live_asgi)
    assert InboxItem.objects.get().tool_call["name"] == "sendEmail"


def test_post_run_raises_with_the_inboxs_reason(live_asgi, agent):
    with pytest.raises(InboxError) as error:
        post_run([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}], base_url=live_asgi, token=agent.token)
    assert error.value.status == 400 and error.value.body["rule"] == "ends_with_run_finished"
    with pytest.raises(InboxError) as error:
        post_run(demo_events("email"), base_url=live_asgi, token="agi_wrong")
    assert error.value.status == 401


def test_the_wrapper_passes_every_event_through_and_forwards_the_interrupt(live_asgi, agent):
    events = demo_events("parallel")
    answers: list[dict] = []
    passed = list(forward_interrupts(iter(events), base_url=live_asgi, token=agent.token, on_posted=answers.append))
    assert passed == events
    run = Run.objects.get(pk=answers[0]["id"])
    assert run.items.count() == 3


def test_the_wrapper_forwards_nothing_for_a_run_without_interrupts(live_asgi, agent):
    events = demo_events("hello")
    assert list(forward_interrupts(iter(events), base_url=live_asgi, token=agent.token)) == events
    assert not Run.objects.exists()


def test_the_async_wrapper_accepts_sse_encoded_strings(live_asgi, agent):
    encoder = EventEncoder()
    encoded = [encoder.encode(event) for event in demo_events("email", "async-thread")]

    async def stream():
        for chunk in encoded:
            yield chunk

    async def consume() -> list[str]:
        return [chunk async for chunk in aforward_interrupts(stream(), base_url=live_asgi, token=agent.token)]

    assert run_async(consume()) == encoded
    assert Run.objects.get().thread.thread_id == "async-thread"


def _tool_call_run(thread_id: str) -> list[dict]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": "tc-9", "toolCallName": "sendEmail"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-9", "delta": '{"to": "a@b.com"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "tc-9"},
        {
            "type": "RUN_FINISHED",
            "threadId": thread_id,
            "runId": "r-9",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i-9", "reason": "tool_call", "toolCallId": "tc-9"}],
            },
        },
    ]


def test_the_run_input_is_posted_so_a_resume_carries_the_agents_conversation(live_asgi, agent, alice):
    from inbox.decisions.services import decision_submit
    from inbox.resumes.input import build_resume_input

    question = {"id": "u-9", "role": "user", "content": "Email a@b.com"}
    run_input = {
        "threadId": "own-thread",
        "runId": "r-9",
        "state": {},
        "messages": [question],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    answers: list[dict] = []
    list(
        forward_interrupts(
            iter(_tool_call_run("own-thread")),
            base_url=live_asgi,
            token=agent.token,
            run_input=run_input,
            on_posted=answers.append,
        )
    )
    run = Run.objects.get(pk=answers[0]["id"])
    assert run.input["messages"] == [question]
    item = run.items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    item.refresh_from_db()
    sent = build_resume_input(run=run, items=[item], next_run_id="r-10")
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant"] and sent["messages"][0] == question


def test_include_messages_false_keeps_the_conversation_from_the_inbox(live_asgi, agent):
    answer = post_run(
        load_events("email-interrupted-run.jsonl"), base_url=live_asgi, token=agent.token, include_messages=False
    )
    run = Run.objects.get(pk=answer["id"])
    assert run.messages_snapshot is None and not (run.input or {}).get("messages")
