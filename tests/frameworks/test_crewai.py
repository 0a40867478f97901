"""CrewAI (``ag-ui-crewai``, ``@human_feedback`` flows, ``emit_interrupt_outcome=True``) round trip: the
interrupt id is the threadId, so a flow that pauses twice on a thread repeats it; each pause is its own
inbox item and each resume answers its own. A step without ``emit`` outcomes asks for feedback in words: the
inbox sends the words as the payload, which the flow receives as its feedback text."""

from __future__ import annotations

import json

import pytest

from inbox.models import InboxItem, Resume, Run
from tests.frameworks.conftest import last_input, sent, start_framework_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def crewai_server(tmp_path_factory):
    server = start_framework_server("crewai", "tests.frameworks.servers.crewai_flow", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def trip(round_trip, crewai_server):
    return round_trip(crewai_server, "crewai")


def test_two_pauses_on_one_thread_are_two_items_each_answered_by_its_own_resume(trip, crewai_server):
    run = trip.start("Write the launch post")
    (first,) = InboxItem.objects.filter(pk__in=[i["id"] for i in run["items"]])
    assert (first.interrupt_id, first.reason) == (run["threadId"], "crewai:human_feedback")
    assert first.metadata["crewai"]["methodName"] == "outline"
    trip.answer(first.pk, "shorter intro")
    assert trip.resume(run["id"]) == "delivered"

    resumed = Resume.objects.get(run_id=run["id"]).resumed_run
    assert resumed.outcome == "interrupt"
    second = resumed.items.get()
    assert second.pk != first.pk and second.interrupt_id == first.interrupt_id == run["threadId"]
    assert second.metadata["crewai"]["methodName"] == "draft" and second.is_open
    trip.answer(second.pk, "ship it")
    assert trip.resume(resumed.pk) == "delivered"

    # Each step received the words as its feedback text (not a JSON object encoded as text).
    assert [entry["args"]["feedback"] for entry in sent(crewai_server)] == ["shorter intro", "ship it"]
    for item in (first, second):
        item.refresh_from_db()
        assert item.outcome_label == "Answered", item.outcome_label
    final = Resume.objects.get(run=resumed).resumed_run
    assert final.outcome == "success"
    report = trip.conformance()
    assert report["interrupt_id_unique"] == {"thread_id"} and report["interrupt_reason"] == {"custom_namespaced"}
    assert Run.objects.filter(thread__thread_id=run["threadId"]).count() == 3


def test_feedback_is_asked_for_in_words_and_the_step_receives_them(trip, crewai_server):
    """A ``@human_feedback`` step without ``emit`` outcomes asks for feedback: its page leads with the step's
    message and an answer field, offers no Approve / Deny, and the API refuses ``{"approved": …}`` (the flow
    would read the text ``'{"approved": false}'`` as its feedback)."""
    run = trip.start("Write the launch post")
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    refused = trip.client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": False}}),
        content_type="application/json",
    )
    assert refused.status_code == 400, refused.content
    page = trip.answer(item.pk, "Cut the second section")
    assert "data-question>Approve this outline?</p>" in page
    assert 'data-action="approve"' not in page and 'data-action="deny"' not in page
    assert trip.resume(run["id"]) == "delivered"
    assert [entry["args"]["feedback"] for entry in sent(crewai_server)] == ["Cut the second section"]
    assert last_input(crewai_server)["resume"] == [
        {"interruptId": item.interrupt_id, "status": "resolved", "payload": "Cut the second section"}
    ]


def test_cancel_resumes_the_flow_with_empty_feedback(trip, crewai_server):
    run = trip.start("Write the launch post")
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    trip.decide(item.pk, "cancelled")
    assert trip.resume(run["id"]) == "delivered"
    assert last_input(crewai_server)["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    item.refresh_from_db()
    assert item.outcome_label == "Cancelled", item.outcome_label
    # CrewAI has no "abort a pending feedback": the flow goes on with empty feedback.
    assert [entry["args"]["feedback"] for entry in sent(crewai_server)] == [""]
