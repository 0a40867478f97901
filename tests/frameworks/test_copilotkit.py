"""CopilotKit (``@copilotkit/runtime`` ``BuiltInAgent``, TypeScript) round trips, both ways it asks a person:

- classic (a model and tools; the AI SDK's own ``MockLanguageModelV3``): an ``interrupt: true`` tool
  (``confirmEmail``) ends the run with an interrupt whose id is the call's id, after the call's ``TOOL_CALL_*``;
  no ``responseSchema``, so the inbox asks ``{approved}`` and offers no edits. The answer becomes that call's
  result, and the model then calls ``sendEmail`` (a new call, executed by the agent) or sends nothing.
- a ``custom`` agent factory (no model) asking with ``ctx.interrupt([...])``, its own ``responseSchema`` offering
  ``editedArgs``.

``BuiltInAgent`` keeps no state between runs: the resume works only because it carries the whole conversation
(the inbox rebuilds it: the start input's messages and the proposed calls, as no snapshot was sent).
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import RoundTrip, last_input, sent, start_node_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def copilotkit_server(tmp_path_factory):
    server = start_node_server("copilotkit_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trips(client, alice, make_agent, copilotkit_server) -> dict[str, RoundTrip]:
    client.force_login(alice)
    copilotkit_server.reset()
    make_agent("copilotkit", endpoint=copilotkit_server.url)
    make_agent("copilotkit-factory", endpoint=f"{copilotkit_server.url}factory")
    return {"classic": RoundTrip(client, "copilotkit"), "factory": RoundTrip(client, "copilotkit-factory")}


def interrupted(trip: RoundTrip, tool_name: str) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1), run
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "tool_call" and item.tool_call["name"] == tool_name and item.tool_call["args"] == PROPOSED
    return run, item


def decide_on_page(trip: RoundTrip, item: InboxItem, action: str, edited: dict | None = None) -> None:
    page = trip.client.get(reverse("inbox:item", args=[item.pk])).content.decode()
    assert f'data-action="{action}"' in page and "bob@example.com" in page
    form = {"action": action} | ({"edited_args": json.dumps(edited)} if edited is not None else {})
    response = trip.client.post(reverse("inbox:item_decide", args=[item.pk]), form)
    assert response.status_code == 302, response.content


def resumed(trip: RoundTrip, run: dict) -> Resume:
    assert trip.resume(run["id"]) == "delivered"
    return Resume.objects.get(run_id=run["id"])


def emails(server) -> list[dict]:
    return [entry["args"] for entry in sent(server)]


# Classic: an interrupt: true tool.


def test_classic_approve_resumes_with_the_whole_conversation_and_the_model_sends_the_email(trips, copilotkit_server):
    trip = trips["classic"]
    run, item = interrupted(trip, "confirmEmail")
    assert item.interrupt_id == item.tool_call_id and item.message == "Send this email?"
    assert item.response_schema is None and not item.offers_edits
    decide_on_page(trip, item, "approve")
    resume = resumed(trip, run)
    sent_input = last_input(copilotkit_server)
    assert sent_input["resume"] == [
        {"interruptId": item.interrupt_id, "status": "resolved", "payload": {"approved": True}}
    ]
    # No server state: the call the answer belongs to is in the messages the resume carries.
    assert [m["role"] for m in sent_input["messages"]] == ["user", "assistant"]
    assert sent_input["messages"][1]["toolCalls"][0]["id"] == item.tool_call_id
    assert emails(copilotkit_server) == [PROPOSED]
    item.refresh_from_db()
    assert item.outcome_label == "Approved"
    resumed_run = resume.resumed_run
    assert resumed_run.outcome == "success"
    # What the agent then did: a new sendEmail call and its result, streamed in the resumed run.
    (call,) = resumed_run.tool_calls
    assert call["name"] == "sendEmail" and call["args"] == PROPOSED and call["id"] != item.tool_call_id
    assert json.loads(resumed_run.tool_results[0]["content"])["status"] == "sent"
    report = trip.conformance()
    assert report["tool_call_binding"] == {"matched"} and report["interrupt_reason"] == {"tool_call"}
    assert report["response_schema"] == {"absent"} and report["reemitted_tool_calls"] == {"not_reemitted"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}
    # The person's answer is the interrupt tool's result: it is not streamed back (deserved), nor any snapshot.
    assert trip.deviating() == {"boundary_snapshots", "tool_result_filing"}


def test_classic_deny_sends_nothing(trips, copilotkit_server):
    trip = trips["classic"]
    run, item = interrupted(trip, "confirmEmail")
    decide_on_page(trip, item, "deny")
    resume = resumed(trip, run)
    assert last_input(copilotkit_server)["resume"][0]["payload"] == {"approved": False}
    assert emails(copilotkit_server) == []
    item.refresh_from_db()
    assert item.outcome_label == "Denied"
    assert resume.resumed_run.outcome == "success" and resume.resumed_run.tool_calls == []


def test_classic_cancel_sends_nothing(trips, copilotkit_server):
    trip = trips["classic"]
    run, item = interrupted(trip, "confirmEmail")
    trip.decide(item.pk, "cancelled")
    resumed(trip, run)
    assert last_input(copilotkit_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert emails(copilotkit_server) == []
    item.refresh_from_db()
    assert item.outcome_label == "Cancelled"


# A custom factory: ctx.interrupt().


def test_factory_approve_executes_the_proposed_call(trips, copilotkit_server):
    trip = trips["factory"]
    run, item = interrupted(trip, "sendEmail")
    assert item.interrupt_id == f"approve-{item.tool_call_id}" and item.offers_edits
    decide_on_page(trip, item, "approve")
    resumed(trip, run)
    assert sent(copilotkit_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved"
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    report = trip.conformance()
    assert report["tool_result_filing"] == {"original_call"} and report["response_schema"] == {"with_edits"}
    assert report["run_outcome"] == {"interrupt", "legacy_success"}
    assert trip.deviating() == {"boundary_snapshots"}


def test_factory_approve_with_edits_sends_the_edited_email(trips, copilotkit_server):
    trip = trips["factory"]
    run, item = interrupted(trip, "sendEmail")
    edited = {"to": "carol@example.com", "subject": "Lunch (moved)", "body": "1pm instead"}
    decide_on_page(trip, item, "edit", edited)
    resumed(trip, run)
    assert sent(copilotkit_server) == [{"toolCallId": item.tool_call_id, "args": edited}]
    item.refresh_from_db()
    assert item.outcome_label == "Approved with edits"


def test_factory_deny_and_cancel_are_not_executed(trips, copilotkit_server):
    trip = trips["factory"]
    for decision in ("deny", "cancel"):
        run, item = interrupted(trip, "sendEmail")
        if decision == "deny":
            decide_on_page(trip, item, "deny")
        else:
            trip.decide(item.pk, "cancelled")
        resumed(trip, run)
        item.refresh_from_db()
        assert item.outcome_label == {"deny": "Denied", "cancel": "Cancelled"}[decision]
        assert json.loads(item.tool_result["content"])["status"] == "not sent"
    assert sent(copilotkit_server) == []
