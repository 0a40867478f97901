"""AWS Strands (``ag-ui-strands``) round trip: ``ToolBehavior(interrupt_on_call=True)`` tool approvals
(schema ``{approved}`` only: no edits offered) and a tool's own named ``tool_context.interrupt``
(reason = its name, no toolCallId), whose result the run page shows."""

from __future__ import annotations

import json

import pytest

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import assert_label_tells_what_ran, last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def strands_server(tmp_path_factory):
    server = start_framework_server("strands", "tests.frameworks.servers.strands_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, strands_server):
    return round_trip(strands_server, "strands")


def interrupted(trip, message: str = MESSAGE) -> tuple[dict, InboxItem]:
    run = trip.start(message)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    return run, InboxItem.objects.get(pk=run["items"][0]["id"])


def test_approve_executes_the_call_and_files_its_result(trip, strands_server):
    run, item = interrupted(trip)
    assert item.reason == "tool_call" and item.tool_call["args"] == PROPOSED
    assert not item.offers_edits  # the adapter's schema is {approved} only
    assert item.metadata["tool_name"] == "sendEmail"
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(strands_server, item.tool_call_id) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    # The agent sent MESSAGES_SNAPSHOT: the resume carries it as sent.
    assert last_input(strands_server)["messages"][-1]["toolCalls"][0]["id"] == item.tool_call_id
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    assert_label_tells_what_ran(strands_server, item)
    assert item.outcome_label == "Approved"
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert resumed.outcome == "success" and item.tool_result["runId"] == resumed.run_id
    report = trip.conformance()
    assert report["interrupt_reason"] == {"tool_call"} and report["tool_call_binding"] == {"matched"}
    assert report["boundary_snapshots"] == {"both"} and report["tool_result_filing"] == {"original_call"}
    # Its resumed run repeats the conversation in MESSAGES_SNAPSHOT: that re-emits no TOOL_CALL_* (it was
    # reported as "re-emitted"). No line of its report deviates.
    assert report["reemitted_tool_calls"] == {"not_reemitted"} and report["resume_linkage"] == {"continued"}
    assert trip.deviating() == set()


def test_deny_is_not_executed(trip, strands_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "resolved", {"approved": False})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(strands_server) == []
    assert trip.deviating() == set()
    item.refresh_from_db()
    assert item.tool_result is not None and "sent" not in item.tool_result["content"]
    assert_label_tells_what_ran(strands_server, item)
    assert item.outcome_label == "Denied"


def test_cancel_is_not_executed(trip, strands_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "cancelled")
    assert trip.resume(run["id"]) == "delivered"
    assert last_input(strands_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert sent(strands_server) == []
    assert trip.deviating() == set()
    assert_label_tells_what_ran(strands_server, item)


def test_edits_the_schema_does_not_offer_are_refused_and_the_label_tells_what_ran(trip, strands_server):
    """The adapter's schema is {approved}: edits would be ignored (the e-mail would go to bob, not carol), so the
    inbox refuses them, offers no edit control, and the approval that goes reads "Approved"."""
    run, item = interrupted(trip)
    edited = {**PROPOSED, "to": "carol@example.com"}
    response = trip.client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True, "editedArgs": edited}}),
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["error"] == "edits_not_offered"
    assert response.json()["errors"][0]["path"] == "editedArgs"
    assert 'name="edited_args"' not in trip.client.get(f"/inbox/items/{item.pk}/").content.decode()
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(strands_server, item.tool_call_id) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    assert_label_tells_what_ran(strands_server, item)
    assert item.outcome_label == "Approved"


def test_a_named_interrupt_is_answered_and_its_result_shows_on_the_run_page(trip, strands_server):
    run, item = interrupted(trip, "Budget 500")
    assert (item.reason, item.tool_call_id) == ("inbox:budget", "")
    assert item.metadata == {"reason": {"message": "Approve a budget of 500?"}}
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert [json.loads(r["content"]) for r in resumed.tool_results] == ["budget 500 approved"]
    page = trip.client.get(f"/inbox/runs/{run['id']}/")
    assert page.status_code == 200
    section = page.content.decode().split("data-resumed-results", 1)[1].split("</section>", 1)[0]
    assert "budget 500 approved" in section and resumed.tool_results[0]["toolCallId"] in section
    report = trip.conformance()
    assert report["interrupt_reason"] == {"custom_namespaced"} and report["response_schema"] == {"absent"}
    assert report["boundary_snapshots"] == {"both"}
    assert trip.deviating() == set()


def test_a_question_is_answered_in_words_and_the_tool_receives_them(trip, strands_server):
    """``ask_human`` asks with ``tool_context.interrupt("ask_human", reason={"question": …})``: no message, no
    schema. The item leads with the question and an answer field (no Approve: ``{"approved": true}`` is no answer
    to "Which colour?"), and the tool receives the words as they were typed."""
    run, item = interrupted(trip, "Ask Which colour should the button be?")
    assert (item.reason, item.message, item.response_schema) == ("ask_human", "", None)
    page = trip.answer(item.pk, "Teal, like the logo")
    heading = page[page.index('id="item-heading"') :].split("</h1>", 1)[0]
    assert heading.endswith(">Which colour should the button be?")
    assert 'data-action="approve"' not in page
    assert trip.resume(run["id"]) == "delivered"
    assert [entry["args"] for entry in sent(strands_server)] == [{"answer": "Teal, like the logo"}]
    item.refresh_from_db()
    assert item.response_payload == "Teal, like the logo" and item.outcome_label == "Answered"
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert [json.loads(r["content"]) for r in resumed.tool_results] == ["The person answered: Teal, like the logo"]
    assert trip.deviating() == set()
