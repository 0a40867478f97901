"""Claude Agent SDK (``ag-ui-claude-sdk``) round trip. The Claude Code session is a fake at the SDK's client
(``FakeClaudeCode`` in the server module: the CLI and its model cannot run here); the adapter, its session
binding, its recovery of the deferred call on resume and its reading of the resume are the released code.

A tool in ``defer_tools`` stops the turn; the run ends with a ``tool_approval`` interrupt whose id is the
``toolCallId``, with no schema. Its resume code requires ``{"behavior": "allow" | "deny"}`` (a cancel it turns
into a denial itself): the inbox knows it from its ``metadata.source`` (``inbox.agui.emitters``) and answers so;
the spec's default ``{"approved": true}`` would be refused by the adapter ("Approval payload requires behavior").
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from inbox.agui.emitters import CLAUDE_SDK_SCHEMA
from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def claude_server(tmp_path_factory):
    server = start_framework_server("claude-sdk", "tests.frameworks.servers.claude_sdk_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, claude_server):
    return round_trip(claude_server, "claude-sdk")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1), run
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert (item.reason, item.interrupt_id, item.response_schema) == ("tool_approval", item.tool_call_id, None)
    assert item.metadata["source"] == "claude-sdk-deferred"
    assert (item.tool_call["name"], item.tool_call["args"]) == ("mcp__mail__send_email", PROPOSED)
    return run, item


def resumed_with(server, item: InboxItem) -> dict:
    """The one resume entry the agent received; a resolved payload in the shape its resume code reads."""
    (entry,) = last_input(server)["resume"]
    assert entry["interruptId"] == item.interrupt_id
    if entry["status"] == "resolved":
        jsonschema.validate(entry["payload"], CLAUDE_SDK_SCHEMA)
    return entry


def decisions(server) -> list[dict]:
    """The PreToolUse decisions the (fake) Claude Code session received from the adapter's hook."""
    return server.record()["hooks"]


def test_approve_sends_allow_and_the_tool_runs(trip, claude_server):
    run, item = interrupted(trip)
    assert sent(claude_server) == []
    page = trip.press(item.pk, "approve")
    assert "Approve sends <code>{&quot;behavior&quot;: &quot;allow&quot;}</code>" in page
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(claude_server, item)["payload"] == {"behavior": "allow"}
    assert decisions(claude_server)[-1] == {"tool_use_id": item.tool_call_id, "decision": "allow"}
    assert sent(claude_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED and item.outcome_label == "Approved"
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    resume = Resume.objects.get(run_id=run["id"])
    assert resume.state == Resume.State.DELIVERED and resume.resumed_run.outcome == "success"
    report = trip.conformance()
    assert report["interrupt_reason"] == {"custom_plain"} and report["response_schema"] == {"absent"}
    assert report["boundary_snapshots"] == {"both"} and report["tool_result_filing"] == {"original_call"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"} and trip.deviating() == set()


def test_deny_sends_deny_and_nothing_runs(trip, claude_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "deny")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(claude_server, item)["payload"] == {"behavior": "deny"}
    assert decisions(claude_server)[-1] == {"tool_use_id": item.tool_call_id, "decision": "deny"}
    assert sent(claude_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.DENIED and item.outcome_label == "Denied"
    assert "Permission denied" in item.tool_result["content"]


def test_cancel_is_turned_into_a_denial_by_the_adapter(trip, claude_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "cancel")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(claude_server, item) == {"interruptId": item.interrupt_id, "status": "cancelled"}
    assert decisions(claude_server)[-1] == {"tool_use_id": item.tool_call_id, "decision": "deny"}
    assert sent(claude_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.CANCELLED


def test_approve_with_edits_runs_the_edited_call(trip, claude_server):
    """``updatedInput`` is what the adapter's hook hands the SDK to run with: the inbox offers it as edits."""
    run, item = interrupted(trip)
    assert "Approve with edits" in trip.client.get(f"/inbox/items/{item.pk}/").content.decode()
    edited = {**PROPOSED, "to": "carol@example.com"}
    trip.decide(item.pk, "resolved", {"behavior": "allow", "updatedInput": edited})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(claude_server) == [{"toolCallId": item.tool_call_id, "args": edited}]
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED_WITH_EDITS


def test_the_spec_default_is_refused_before_it_reaches_the_agent(trip, claude_server):
    run, item = interrupted(trip)
    response = trip.client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True}}),
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_payload", response.content
    assert InboxItem.objects.get(pk=item.pk).is_open
