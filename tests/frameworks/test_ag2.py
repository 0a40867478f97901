"""ag2 (``ag2.ag_ui.AGUIStream``) round trip: ``approval_required()`` tool approvals, put to the client by
default (no ``hitl_hook``), answered with a bare ``true`` / ``false`` (schema ``{"type": ["string",
"boolean"]}``: no edits offered); ``context.input()`` questions answered with a string; a cancel; and a run
from another client on a thread that still holds a question, which ag2 refuses with ``RUN_ERROR
INTERRUPT_NOT_COVERED``.

The question lives in the serving process (a suspended coroutine): every resume here goes to the process
that asked. Every resume echoes the interrupt's ``metadata.ag2.proof`` in ``ResumeEntry.metadata``; a second
server runs with ``require_resume_proof=True``, which refuses a resume without it.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from inbox.models import InboxItem, Resume, Run
from tests.frameworks.conftest import last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def ag2_server(tmp_path_factory):
    server = start_framework_server("ag2", "tests.frameworks.servers.ag2_agent", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, ag2_server):
    return round_trip(ag2_server, "ag2")


def interrupted(trip, message: str = MESSAGE, thread_id: str | None = None) -> tuple[dict, InboxItem]:
    run = trip.start(message, thread_id)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1), run
    return run, InboxItem.objects.get(pk=run["items"][0]["id"])


def resumed_with(server, item: InboxItem) -> dict:
    """The one resume entry the agent received; its payload valid against the item's schema."""
    (entry,) = last_input(server)["resume"]
    assert entry["interruptId"] == item.interrupt_id
    if entry["status"] == "resolved":
        jsonschema.validate(entry["payload"], item.response_schema)
    return entry


def finished(run: Run) -> dict:
    """The RUN_FINISHED (or RUN_ERROR) the agent ended ``run`` with, as it sent it."""
    return next(e for e in reversed(run.events) if e.get("type") in ("RUN_FINISHED", "RUN_ERROR"))


def test_approve_runs_the_call_once_and_files_its_result(trip, ag2_server):
    run, item = interrupted(trip)
    assert (item.reason, item.tool_call["name"], item.tool_call["args"]) == ("tool_call", "sendEmail", PROPOSED)
    assert item.response_schema["type"] == ["string", "boolean"] and not item.offers_edits
    assert set(item.metadata["ag2"]) == {"proof"} and not item.expires_at_defaulted
    assert sent(ag2_server) == []  # nothing ran before the decision

    page = trip.press(item.pk, "approve")
    assert "sends <code>true</code>" in page and "Approve with edits" not in page
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(ag2_server, item) == {
        "interruptId": item.interrupt_id,
        "status": "resolved",
        "payload": True,
        "metadata": {"ag2": {"proof": item.metadata["ag2"]["proof"]}},
    }
    assert sent(ag2_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]

    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED
    assert json.loads(item.tool_result["content"])["status"] == "sent"
    resume = Resume.objects.get(run_id=run["id"])
    assert resume.state == Resume.State.DELIVERED and resume.resumed_run.outcome == "success"
    assert item.tool_result["runId"] == resume.resumed_run.run_id
    report = trip.conformance()
    assert report["interrupt_reason"] == {"tool_call"} and report["tool_call_binding"] == {"matched"}
    assert report["tool_result_filing"] == {"original_call"} and report["reemitted_tool_calls"] == {"not_reemitted"}
    assert report["run_outcome"] == {"interrupt", "success"} and report["expires_at"] == {"set"}
    # The one deviation it earns: no STATE_SNAPSHOT / MESSAGES_SNAPSHOT before the interrupt (the spec's "must";
    # ag2 keeps the turn as a suspended coroutine instead).
    assert report["boundary_snapshots"] == {"none"} and trip.deviating() == {"boundary_snapshots"}


def test_deny_does_not_run_the_call(trip, ag2_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "deny")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(ag2_server, item)["payload"] is False
    assert sent(ag2_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.DENIED
    assert item.tool_result["content"] == "User denied the tool call request"


def test_bulk_approve_from_the_list_sends_a_bare_true(trip, ag2_server):
    run, item = interrupted(trip)
    trip.bulk([item.pk], "approve")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(ag2_server, item)["payload"] is True
    assert sent(ag2_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED


def test_cancel_stops_the_held_turn_and_nothing_runs(trip, ag2_server):
    run, item = interrupted(trip)
    trip.press(item.pk, "cancel")
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(ag2_server, item) == {
        "interruptId": item.interrupt_id,
        "status": "cancelled",
        "metadata": {"ag2": {"proof": item.metadata["ag2"]["proof"]}},
    }
    assert sent(ag2_server) == []
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.CANCELLED and item.tool_result is None
    # ag2 ends the resumed run as cancelled (ag-ui-protocol 1.0), and the inbox stores it so.
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert finished(resumed)["outcome"] == {"type": "cancelled"} and resumed.outcome == "cancelled"


def test_a_question_asked_with_context_input_is_answered_with_a_string(trip, ag2_server):
    run, item = interrupted(trip, "Budget 500")
    assert (item.reason, item.tool_call_id) == ("input_required", "")
    assert item.response_schema["type"] == "string" and "budget of 500" in item.message
    # A string schema is a question: its page has one answer field (no JSON editor, no Approve / Deny), and the
    # words go as the string itself.
    page = trip.answer(item.pk, "yes")
    assert "data-json-answer" not in page and 'data-action="approve"' not in page
    assert trip.resume(run["id"]) == "delivered"
    assert resumed_with(ag2_server, item)["payload"] == "yes"
    assert ag2_server.record()["budgets"] == [{"amount": 500, "answer": "yes"}]
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.ANSWERED
    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert [r["content"] for r in resumed.tool_results] == ["budget 500 approved"]
    assert trip.conformance()["interrupt_reason"] == {"input_required"}


def test_another_clients_run_on_a_held_thread_is_refused_and_the_inbox_still_resumes(trip, ag2_server):
    """The inbox starts no run on a thread with open items (409); another client that does gets ag2's
    RUN_ERROR INTERRUPT_NOT_COVERED, and the question stays held for the inbox's resume."""
    run, item = interrupted(trip)
    thread_id = Run.objects.get(pk=run["id"]).thread.thread_id
    other = ag2_server.post(
        {
            "threadId": thread_id,
            "runId": "other-client-run",
            "messages": [{"id": "m-other", "role": "user", "content": "Email carol@example.com subject: x body: y"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
    )
    assert [(e["type"], e.get("code")) for e in other] == [("RUN_ERROR", "INTERRUPT_NOT_COVERED")]
    trip.press(item.pk, "approve")
    assert trip.resume(run["id"]) == "delivered"
    assert sent(ag2_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]


@pytest.fixture(scope="module")
def ag2_proof_server(tmp_path_factory):
    """The same agent with ``require_resume_proof=True``: a resume must echo ``metadata.ag2.proof``."""
    server = start_framework_server(
        "ag2", "tests.frameworks.servers.ag2_agent", tmp_path_factory, env={"AG2_REQUIRE_RESUME_PROOF": "1"}
    )
    yield server
    server.stop()


def test_with_require_resume_proof_the_resume_echoes_the_proof_and_the_call_runs(round_trip, ag2_proof_server):
    trip = round_trip(ag2_proof_server, "ag2-proof")
    run, item = interrupted(trip)
    proof = item.metadata["ag2"]["proof"]
    # A resume without the proof (what a client that copies no metadata sends) is refused; the question stays.
    unproven = ag2_proof_server.post(
        last_input(ag2_proof_server)
        | {"runId": "unproven", "resume": [{"interruptId": item.interrupt_id, "status": "resolved", "payload": True}]}
    )
    assert [(e["type"], e.get("code")) for e in unproven] == [("RUN_ERROR", "INTERRUPT_NOT_PROVEN")]
    trip.press(item.pk, "approve")
    assert trip.resume(run["id"]) == "delivered"
    (entry,) = last_input(ag2_proof_server)["resume"]
    assert entry["metadata"] == {"ag2": {"proof": proof}}
    assert sent(ag2_proof_server) == [{"toolCallId": item.tool_call_id, "args": PROPOSED}]
