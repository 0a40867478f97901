"""Claude Managed Agents (``ag-ui-claude-managed-agents``) round trip. The managed session is a fake of the
Managed Agents API at the SDK boundary (``FakeManagedAgents`` in the server module: the hosted agent cannot run
here); the adapter, its session store and its recovery of a parked session on resume are the released code.

A tool whose permission evaluates to "ask" parks the session and the run ends with an interrupt by default
(``reason: tool-approval``, schema ``{"type": "string", "enum": ["allow", "deny"]}``: no edits offered); the
resume's bare ``"allow"`` / ``"deny"`` becomes the session's ``user.tool_confirmation``, and a cancel is sent
as ``deny``.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}
SCHEMA = {"type": "string", "enum": ["allow", "deny"]}


@pytest.fixture(scope="module")
def managed_server(tmp_path_factory):
    server = start_framework_server(
        "claude-managed-agents", "tests.frameworks.servers.claude_managed_agents_agent", tmp_path_factory
    )
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, managed_server):
    return round_trip(managed_server, "claude-managed-agents")


def interrupted(trip, message: str = MESSAGE) -> tuple[dict, InboxItem]:
    run = trip.start(message)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1), run
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert (item.reason, item.interrupt_id, item.response_schema) == ("tool-approval", item.tool_call_id, SCHEMA)
    assert not item.offers_edits
    return run, item


def resumed_with(server, item: InboxItem) -> dict:
    """The one resume entry the agent received; its payload valid against the item's schema."""
    (entry,) = last_input(server)["resume"]
    assert entry["interruptId"] == item.interrupt_id
    if entry["status"] == "resolved":
        jsonschema.validate(entry["payload"], item.response_schema)
    return entry


def confirmations(server) -> list[dict]:
    """The user.tool_confirmation events the (fake) managed session received from the adapter."""
    return server.record()["confirmations"]


def test_allow_runs_the_mcp_tool_and_files_its_result(trip, managed_server):
    run, item = interrupted(trip)
    assert (item.tool_call["name"], item.tool_call["args"]) == ("mail: send_email", PROPOSED)
    assert item.metadata["type"] == "agent.mcp_tool_use" and item.metadata["mcpServerName"] == "mail"
    assert sent(managed_server) == []

    page = trip.press(item.pk, "approve")
    assert "sends <code>&quot;allow&quot;</code>" in page and "Approve with edits" not in page
    assert "mail: send_email" in page  # shown as the tool approval it is, whatever its reason
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(managed_server, item)["payload"] == "allow"
    assert confirmations(managed_server) == [{"tool_use_id": item.tool_call_id, "result": "allow"}]
    assert sent(managed_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]

    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    resume = Resume.objects.get(run_id=run["id"])
    assert resume.state == Resume.State.DELIVERED and item.tool_result["runId"] == resume.resumed_run.run_id
    report = trip.conformance()
    assert report["tool_result_filing"] == {"original_call"} and report["reemitted_tool_calls"] == {"not_reemitted"}
    assert report["interrupt_reason"] == {"custom_plain"}  # "tool-approval": neither core nor namespaced, a note
    # Only a STATE_SNAPSHOT before the interrupt (the spec wants MESSAGES_SNAPSHOT too; the session keeps the
    # conversation): the one deviation it earns.
    assert report["boundary_snapshots"] == {"state_only"} and trip.deviating() == {"boundary_snapshots"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}


def test_deny_runs_nothing(trip, managed_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "deny")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(managed_server, item)["payload"] == "deny"
    assert confirmations(managed_server) == [{"tool_use_id": item.tool_call_id, "result": "deny"}]
    assert sent(managed_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.DENIED and item.tool_result is None
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert resumed.outcome == "success"


def test_bulk_deny_from_the_list_sends_deny(trip, managed_server):
    run, item = interrupted(trip)
    trip.bulk([item.pk], "deny")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(managed_server, item)["payload"] == "deny"
    assert confirmations(managed_server) == [{"tool_use_id": item.tool_call_id, "result": "deny"}]
    assert sent(managed_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.DENIED


def test_cancel_is_sent_to_the_session_as_deny(trip, managed_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "cancel")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(managed_server, item) == {"interruptId": item.interrupt_id, "status": "cancelled"}
    assert confirmations(managed_server) == [{"tool_use_id": item.tool_call_id, "result": "deny"}]
    assert sent(managed_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.CANCELLED


def test_allow_runs_a_built_in_tool(trip, managed_server):
    run, item = interrupted(trip, "Run ls /tmp")
    assert (item.tool_call["name"], item.tool_call["args"]) == ("bash", {"command": "ls /tmp"})
    trip.press(item.pk, "approve")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(managed_server, item)["payload"] == "allow"
    assert managed_server.record()["commands"] == [{"toolCallId": item.tool_call_id, "command": "ls /tmp"}]
    item.refresh_from_db()
    assert item.tool_result["content"] == "ok"
