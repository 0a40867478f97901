"""Microsoft Agent Framework (``agent-framework-ag-ui``, ``approval_mode="always_require"``) round trip:
``tool_call`` interrupts on the real call id with an ``editedArgs`` schema; approve, edit, deny, cancel."""

from __future__ import annotations

import pytest

from inbox.models import InboxItem, Resume
from tests.frameworks.conftest import assert_label_tells_what_ran, last_input, sent, start_framework_server

pytestmark = pytest.mark.integration

MESSAGE = "Email bob@example.com subject: Lunch body: Are we on?"
PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}


@pytest.fixture(scope="module")
def af_server(tmp_path_factory):
    server = start_framework_server(
        "agent-framework", "tests.frameworks.servers.agent_framework_agent", tmp_path_factory
    )
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, af_server):
    return round_trip(af_server, "agent-framework")


def interrupted(trip) -> tuple[dict, InboxItem]:
    run = trip.start(MESSAGE)
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "tool_call" and item.offers_edits
    assert (item.tool_call["name"], item.tool_call["args"]) == ("send_email", PROPOSED)
    return run, item


def test_approve_sends_the_email_and_files_the_result(trip, af_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "resolved", {"approved": True})
    assert trip.resume(run["id"]) == "delivered"
    assert [entry["args"] for entry in sent(af_server)] == [PROPOSED]
    assert_label_tells_what_ran(af_server, item)
    assert item.outcome_label == "Approved"
    item.refresh_from_db()
    assert item.tool_result is not None and "sent" in item.tool_result["content"]
    assert item.tool_result["runId"] == Resume.objects.get(run_id=run["id"]).resumed_run.run_id
    report = trip.conformance()
    assert report["tool_call_binding"] == {"matched"} and report["response_schema"] == {"with_edits"}
    # Its resumed run repeats the conversation in MESSAGES_SNAPSHOT: that re-emits no TOOL_CALL_* (it was
    # reported as "re-emitted"). No line of its report deviates.
    assert report["reemitted_tool_calls"] == {"not_reemitted"} and report["same_thread"] == {"same"}
    assert trip.deviating() == set()


def test_approve_with_edits_sends_the_edited_email(trip, af_server):
    run, item = interrupted(trip)
    edited = {"to": "bob@example.com", "subject": "Moved", "body": "1pm"}
    trip.decide(item.pk, "resolved", {"approved": True, "editedArgs": edited})
    assert trip.resume(run["id"]) == "delivered"
    assert [entry["args"] for entry in sent(af_server)] == [edited]
    assert_label_tells_what_ran(af_server, item)
    assert item.outcome_label == "Approved with edits"
    assert trip.deviating() == set()


def test_deny_is_not_executed(trip, af_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "resolved", {"approved": False})
    assert trip.resume(run["id"]) == "delivered"
    assert sent(af_server) == []
    assert_label_tells_what_ran(af_server, item)
    assert item.outcome_label == "Denied"
    assert trip.deviating() == set()


def test_cancel_is_not_executed(trip, af_server):
    run, item = interrupted(trip)
    trip.decide(item.pk, "cancelled")
    assert trip.resume(run["id"]) == "delivered"
    assert last_input(af_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert sent(af_server) == []
    assert_label_tells_what_ran(af_server, item)
    assert trip.deviating() == set()
