"""Pydantic AI (``pydantic-ai-slim[ag-ui]``, ``AGUIAdapter``, default history mode) round trip.

The adapter keeps no conversation of its own and sends no MESSAGES_SNAPSHOT: the resume works only
because the inbox rebuilds ``messages`` (the start input's messages and an assistant message whose
``toolCalls`` are the recorded proposals). Without them the agent answers RUN_ERROR "Tool call results
were provided, but the message history is empty."
"""

from __future__ import annotations

import json

import pytest

from inbox.models import InboxItem, Resume, Run
from tests.frameworks.conftest import assert_label_tells_what_ran, last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def pydantic_ai_server(tmp_path_factory):
    server = start_framework_server("pydantic-ai", "tests.frameworks.servers.pydantic_ai_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, pydantic_ai_server):
    return round_trip(pydantic_ai_server, "pydantic-ai")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "tool_call" and item.interrupt_id == f"int-{item.tool_call_id}"
    assert item.tool_call["name"] == "sendEmail" and item.tool_call["args"] == PROPOSED
    assert item.offers_edits
    return run, item


def test_approve_resumes_with_the_rebuilt_conversation_and_the_email_is_sent(trip, pydantic_ai_server):
    run, item = interrupted(trip)
    assert trip.run(run["id"])["messages_snapshot"] is None  # the adapter sends none
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"

    sent_input = last_input(pydantic_ai_server)
    assert [m["role"] for m in sent_input["messages"]] == ["user", "assistant"]
    assert sent_input["messages"][0]["content"] == MESSAGE
    call = sent_input["messages"][1]["toolCalls"][0]
    assert (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        item.tool_call_id,
        "sendEmail",
        PROPOSED,
    )
    assert sent(pydantic_ai_server, item.tool_call_id) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    assert_label_tells_what_ran(pydantic_ai_server, item)
    assert item.outcome_label == "Approved"
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    resume = Resume.objects.get(run_id=run["id"])
    assert resume.resumed_run.outcome == "success" and not resume.resumed_run.outcome_omitted
    assert item.tool_result["runId"] == resume.resumed_run.run_id
    report = trip.conformance()
    assert report["boundary_snapshots"] == {"none"}  # no snapshots: the inbox rebuilt the conversation
    assert report["tool_call_binding"] == {"matched"} and report["response_schema"] == {"with_edits"}
    assert report["run_outcome"] == {"interrupt", "success"}
    assert report["tool_result_filing"] == {"original_call"} and report["reemitted_tool_calls"] == {"not_reemitted"}


def test_approve_with_edits_sends_the_edited_email(trip, pydantic_ai_server):
    run, item = interrupted(trip)
    edited = {"to": "bob@example.com", "subject": "Lunch (moved)", "body": "1pm instead"}
    trip.decide(item.pk, "resolved", {"approved": True, "editedArgs": edited})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(pydantic_ai_server, item.tool_call_id) == [{"toolCallId": item.tool_call_id, "args": edited}]
    assert_label_tells_what_ran(pydantic_ai_server, item)
    assert item.outcome_label == "Approved with edits"
    assert json.loads(item.tool_result["content"])["args"] == edited
    assert item.tool_call["args"] == PROPOSED  # the proposal stays as proposed


def test_deny_is_not_executed_and_the_denial_is_filed(trip, pydantic_ai_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "resolved", {"approved": False, "reason": "not now"})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(pydantic_ai_server) == []
    assert_label_tells_what_ran(pydantic_ai_server, item)
    assert item.outcome_label == "Denied"
    assert "not now" in item.tool_result["content"]


def test_cancel_is_not_executed(trip, pydantic_ai_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "cancelled")
    assert trip.resume(run["id"]) == "delivered"
    assert last_input(pydantic_ai_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert sent(pydantic_ai_server) == []
    assert_label_tells_what_ran(pydantic_ai_server, item)
    assert item.tool_result is not None  # the agent answers the cancelled call with a result too


def test_a_call_left_to_the_client_comes_back_in_pending_tool_call_ids(trip, pydantic_ai_server):
    """The inbox declares AG-UI 1.0 (``RunAgentInput.protocolVersion``); the adapter names the calls a run left
    for its client in ``pendingToolCallIds`` only to a client that does (to others: ``[]``)."""
    run = trip.start("Show the chart for Q1")
    assert last_input(pydantic_ai_server)["protocolVersion"] == "1.0"
    assert (run["outcome"], run["items"]) == ("success", [])
    stored = trip.run(run["id"])
    pending = stored["pendingToolCallIds"]
    assert len(pending) == 1 and pending[0].startswith("call-")
    calls = Run.objects.get(pk=run["id"]).tool_calls
    assert [call["name"] for call in calls if call["id"] == pending[0]] == ["showChart"]
    assert trip.conformance()["run_outcome"] == {"success_pending_calls"}
