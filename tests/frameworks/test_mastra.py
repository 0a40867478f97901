"""Mastra (``@ag-ui/mastra`` ``MastraAgent`` over ``@mastra/core``, TypeScript) round trip: a tool that
suspends itself with ``suspend()`` ends the run with an interrupt outcome by default (``reason:
mastra:tool_suspend``, id ``<runId>::<toolCallId>``, the tool's ``resumeSchema`` as ``responseSchema``).

The adapter sends no ``TOOL_CALL_*`` before the interrupt (the proposed call is in ``metadata.mastra``) and no
snapshot; on the resume it reads only the first entry (``payload`` becomes the tool's ``resumeData``, a
cancellation ends the run at once) and answers with a ``TOOL_CALL_RESULT`` for the original call.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import last_input, sent, start_node_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def mastra_server(tmp_path_factory):
    server = start_node_server("mastra_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, mastra_server):
    return round_trip(mastra_server, "mastra")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "mastra:tool_suspend"
    # The id is Mastra's runId (the inbox's runId of the started run) and the tool call's id.
    assert item.interrupt_id == f"{item.run.run_id}::{item.tool_call_id}"
    assert item.metadata["mastra"]["suspendPayload"] == {"message": 'Send "Lunch" to bob@example.com?'}
    # No TOOL_CALL_* came before the interrupt: the proposal shown is the call in metadata.mastra.
    assert item.run.tool_calls == []
    assert (item.tool_call["id"], item.tool_call["name"], item.tool_call["args"]) == (
        item.tool_call_id,
        "sendEmail",
        PROPOSED,
    )
    assert item.offers_edits  # the tool's resumeSchema has editedArgs
    return run, item


def decide_on_page(trip, item: InboxItem, action: str, edited: dict | None = None) -> str:
    """What a person does on the item page: its Approve / Deny buttons, or "Approve with these edits"."""
    page = trip.client.get(reverse("inbox:item", args=[item.pk])).content.decode()
    assert "Tool approval" in page and "sendEmail" in page and "bob@example.com" in page
    assert f'data-action="{action}"' in page
    form = {"action": action} | ({"edited_args": json.dumps(edited)} if edited is not None else {})
    response = trip.client.post(reverse("inbox:item_decide", args=[item.pk]), form)
    assert response.status_code == 302, response.content
    return page


def resumed(trip, run: dict) -> Resume:
    assert trip.resume(run["id"]) == "delivered"
    return Resume.objects.get(run_id=run["id"])


def test_approve_on_the_page_resumes_the_suspended_tool_and_the_email_is_sent(trip, mastra_server):
    run, item = interrupted(trip)
    decide_on_page(trip, item, "approve")
    resume = resumed(trip, run)
    # The id comes back unchanged: Mastra splits it into its runId and the toolCallId.
    assert last_input(mastra_server)["resume"] == [
        {"interruptId": item.interrupt_id, "status": "resolved", "payload": {"approved": True}}
    ]
    assert sent(mastra_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved"
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    assert resume.resumed_run.outcome == "success" and item.tool_result["runId"] == resume.resumed_run.run_id
    report = trip.conformance()
    assert report["interrupt_reason"] == {"custom_namespaced"} and report["response_schema"] == {"with_edits"}
    assert report["tool_result_filing"] == {"original_call"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}  # the resumed run's RUN_FINISHED has no outcome
    # Mastra sends no snapshot (the inbox rebuilds the resume's messages; Mastra reads its own store): the
    # report's only "deviates" line, and a deserved one.
    assert trip.deviating() == {"boundary_snapshots"}


def test_bulk_approve_from_the_list_sends_the_email(trip, mastra_server):
    run, item = interrupted(trip)
    response = trip.client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [item.pk], "action": "approve"}),
        content_type="application/json",
    )
    assert response.json()["results"][0]["ok"] is True, response.content
    resumed(trip, run)
    assert sent(mastra_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved" and item.response_payload == {"approved": True}


def test_approve_with_edits_on_the_page_sends_the_edited_email(trip, mastra_server):
    run, item = interrupted(trip)
    edited = {"to": "carol@example.com", "subject": "Lunch (moved)", "body": "1pm instead"}
    decide_on_page(trip, item, "edit", edited)
    resumed(trip, run)
    assert last_input(mastra_server)["resume"][0]["payload"] == {"approved": True, "editedArgs": edited}
    assert sent(mastra_server) == [{"toolCallId": item.tool_call_id, "args": edited}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved with edits"
    assert json.loads(item.tool_result["content"])["args"] == edited


def test_deny_on_the_page_is_not_executed_and_the_denial_is_filed(trip, mastra_server):
    run, item = interrupted(trip)
    decide_on_page(trip, item, "deny")
    resume = resumed(trip, run)
    assert last_input(mastra_server)["resume"][0]["payload"] == {"approved": False}
    assert sent(mastra_server) == []
    item.refresh_from_db()
    assert item.outcome_label == "Denied"
    assert json.loads(item.tool_result["content"]) == {"status": "not sent", "reason": "denied by a person"}
    assert resume.resumed_run.outcome == "success"


def test_cancel_ends_the_run_without_executing(trip, mastra_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "cancelled")
    resume = resumed(trip, run)
    assert last_input(mastra_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert sent(mastra_server) == []
    item.refresh_from_db()
    assert item.outcome_label == "Cancelled" and item.tool_result is None
    assert resume.resumed_run.outcome == "success" and resume.resumed_run.outcome_omitted
