"""Google ADK (``ag-ui-adk``, ``emit_interrupt_outcome=True``) round trip: a tool confirmation arrives as
``reason: "confirmation"`` on the synthetic ``adk_request_confirmation`` call; the item shows the real
call (``metadata.adk.originalFunctionCall``) as its proposal and files the real call's result."""

from __future__ import annotations

import json

import pytest

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import assert_label_tells_what_ran, last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def adk_server(tmp_path_factory):
    server = start_framework_server("adk", "tests.frameworks.servers.adk_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, adk_server):
    return round_trip(adk_server, "adk")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "confirmation"
    original = item.metadata["adk"]["originalFunctionCall"]
    # The proposal shown is the real call, not adk_request_confirmation.
    assert (item.tool_call["id"], item.tool_call["name"], item.tool_call["args"]) == (
        original["id"],
        "send_email",
        PROPOSED,
    )
    assert item.tool_call_id != original["id"] and item.linked_call_id == original["id"]
    return run, item


def test_approve_runs_the_real_call_and_its_result_is_filed_on_the_item(trip, adk_server):
    run, item = interrupted(trip)
    page = trip.client.get(f"/inbox/items/{item.pk}/").content.decode()
    proposal = page.split("data-proposal", 1)[1].split("</section>", 1)[0]
    assert "send_email" in proposal and item.linked_call_id in proposal and "bob@example.com" in proposal
    assert "adk_request_confirmation" not in proposal

    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(adk_server, item.linked_call_id) == [{"toolCallId": item.linked_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.tool_result["toolCallId"] == item.linked_call_id
    assert json.loads(json.loads(item.tool_result["content"])["result"])["status"] == "sent"
    assert_label_tells_what_ran(adk_server, item)
    assert item.outcome_label == "Approved"
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    # ADK ends the resumed run with the legacy success shape (no outcome).
    assert (resumed.outcome, resumed.outcome_omitted) == ("success", True)
    assert item.tool_result["runId"] == resumed.run_id
    report = trip.conformance()
    assert report["interrupt_reason"] == {"confirmation_original_call"}
    assert report["tool_result_filing"] == {"named_call"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}
    assert report["boundary_snapshots"] == {"none"} and report["response_schema"] == {"absent"}


def test_deny_is_not_executed(trip, adk_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "resolved", {"approved": False})
    assert trip.resume(run["id"]) == "delivered"
    assert last_input(adk_server)["resume"][0]["payload"] == {"approved": False}
    assert sent(adk_server) == []
    assert_label_tells_what_ran(adk_server, item)
    assert item.outcome_label == "Denied"


def test_cancel_is_not_executed(trip, adk_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "cancelled")
    assert trip.resume(run["id"]) == "delivered"
    assert sent(adk_server) == []
    assert_label_tells_what_ran(adk_server, item)


def test_edits_are_refused_without_a_schema_and_the_label_tells_what_ran(trip, adk_server):
    """ADK sends no responseSchema: nothing offers edits, so the inbox refuses them (the agent would run the
    original arguments) and shows no edit control; the approval reads "Approved"."""
    run, item = interrupted(trip)
    edited = {**PROPOSED, "to": "carol@example.com"}
    response = trip.client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True, "editedArgs": edited}}),
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["error"] == "edits_not_offered"
    assert 'name="edited_args"' not in trip.client.get(f"/inbox/items/{item.pk}/").content.decode()
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(adk_server, item.linked_call_id) == [{"toolCallId": item.linked_call_id, "args": PROPOSED}]
    assert_label_tells_what_ran(adk_server, item)
    assert item.outcome_label == "Approved"
