"""LangGraph JS (``@ag-ui/langgraph`` ``LangGraphAgent``, TypeScript) round trip: the twin of the Python
LangGraph test. ``LangGraphAgent`` talks to a LangGraph API server (here ``@langchain/langgraph-api``'s, the one
``langgraphjs dev`` runs, in-memory, in the agent's process); the graph's tool asks with ``interrupt({...})`` and
``emitInterruptOutcome: true`` ends the run with an interrupt outcome. The adapter ends each run under the LangGraph
server's run id while RUN_STARTED carries the input's; the server puts the input's back (the inbox refuses the
reply as released, tested on `/released`).

The LangGraph API wants UUID thread ids, so each run here is started on one.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.urls import reverse

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import last_input, sent, start_node_server
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def langgraph_js_server(tmp_path_factory):
    server = start_node_server("langgraph_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, langgraph_js_server):
    return round_trip(langgraph_js_server, "langgraph-js")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE, thread_id=str(uuid.uuid4()))
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1), run
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "tool_call" and item.tool_call["name"] == "sendEmail" and item.tool_call["args"] == PROPOSED
    assert item.message == "Send email to bob@example.com with subject 'Lunch'?" and item.offers_edits
    return run, item


def decide_on_page(trip, item: InboxItem, action: str, edited: dict | None = None) -> None:
    page = trip.client.get(reverse("inbox:item", args=[item.pk])).content.decode()
    assert f'data-action="{action}"' in page and "bob@example.com" in page
    form = {"action": action} | ({"edited_args": json.dumps(edited)} if edited is not None else {})
    response = trip.client.post(reverse("inbox:item_decide", args=[item.pk]), form)
    assert response.status_code == 302, response.content


def resumed(trip, run: dict) -> Resume:
    assert trip.resume(run["id"]) == "delivered"
    return Resume.objects.get(run_id=run["id"])


def test_approve_on_the_page_sends_the_email(trip, langgraph_js_server):
    run, item = interrupted(trip)
    decide_on_page(trip, item, "approve")
    resume = resumed(trip, run)
    assert last_input(langgraph_js_server)["resume"] == [
        {"interruptId": item.interrupt_id, "status": "resolved", "payload": {"approved": True}}
    ]
    assert sent(langgraph_js_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved"
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    resumed_run = resume.resumed_run
    assert resumed_run.outcome == "success"
    # As the Python adapter does, the resumed run streams the original call's TOOL_CALL_* again (events, not the
    # snapshot's history): the inbox keeps them as events, not as a new proposal.
    assert [(c["id"], c["source"], c.get("reemitted")) for c in resumed_run.tool_calls] == [
        (item.tool_call_id, "events", True)
    ]
    report = trip.conformance()
    assert report["tool_call_binding"] == {"matched"} and report["response_schema"] == {"with_edits"}
    assert report["tool_result_filing"] == {"original_call"} and report["boundary_snapshots"] == {"both"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}
    assert trip.deviating() == {"reemitted_tool_calls"}


def test_approve_with_edits_sends_the_edited_email(trip, langgraph_js_server):
    run, item = interrupted(trip)
    edited = {"to": "carol@example.com", "subject": "Lunch (moved)", "body": "1pm instead"}
    decide_on_page(trip, item, "edit", edited)
    resumed(trip, run)
    assert sent(langgraph_js_server) == [{"toolCallId": item.tool_call_id, "args": edited}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved with edits"
    assert json.loads(item.tool_result["content"])["args"] == edited


def test_deny_and_cancel_are_not_executed(trip, langgraph_js_server):
    for action, label, status in (("deny", "Denied", "denied"), ("cancel", "Cancelled", "cancelled")):
        run, item = interrupted(trip)
        if action == "deny":
            decide_on_page(trip, item, "deny")
        else:
            trip.decide(item.pk, "cancelled")
        resumed(trip, run)
        item.refresh_from_db()
        assert item.outcome_label == label
        assert json.loads(item.tool_result["content"])["status"] == status
    assert sent(langgraph_js_server) == []


def test_the_adapter_as_released_ends_its_run_under_another_run_id_and_the_inbox_refuses_it(
    client, alice, make_agent, langgraph_js_server
):
    client.force_login(alice)
    make_agent("langgraph-js-released", endpoint=f"{langgraph_js_server.url}released")
    response = start_run(client, "langgraph-js-released", {"message": MESSAGE, "threadId": str(uuid.uuid4())})
    assert response.status_code == 502
    assert response.json()["field"] == "events[0].runId"
    assert "RUN_STARTED and RUN_FINISHED name different threadId/runId" in response.json()["detail"]
    assert not InboxItem.objects.filter(agent__slug="langgraph-js-released").exists()
