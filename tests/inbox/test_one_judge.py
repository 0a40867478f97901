"""One judge of what a decision means (issue 47.1): ``inbox.decisions.shapes.outcome_for`` reads an answer in the
item's own schema when it is made, stores the verdict on the decision (and on the item it closes), and every
reader reads the stored verdict: the quorum, the self-approval rule, the toast, the item's history, the policy
backtest, the tool-call trail, the thread timeline, the stats, review quality, the audit log and the exports.

The case that made the issue: a schema whose yes and no are the enum ``["accept", "reject"]``. Its Deny sends
``{"decision": "reject"}``, which the old word list did not know, so that Deny counted as an approval."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.apps import apps
from django.test import Client

from inbox.audit.record import Actor, audit
from inbox.audit.review import build_review
from inbox.audit.stats import build_report
from inbox.audit.trail import build_trail
from inbox.decisions.rules import DecisionError
from inbox.decisions.services import decision_submit
from inbox.decisions.shapes import outcome_for
from inbox.models import Decision, InboxItem
from inbox.policies.selectors import human_verdict
from tests.inbox.conftest import interrupt_run

ACCEPT_REJECT = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}},
    "required": ["decision"],
}
REJECT = {"decision": "reject"}
ACCEPT = {"decision": "accept"}
PROPOSED = {"path": "/tmp/x"}
CALL_EVENTS = [
    {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "deleteFile"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": json.dumps(PROPOSED)},
    {"type": "TOOL_CALL_END", "toolCallId": "tc-1"},
]


def item_with(
    agent, ingest, schema: Any, *, run: str = "r-1", reason: str = "tool_call", metadata=None, call: bool = True
) -> InboxItem:
    interrupt: dict[str, Any] = {"id": f"{run}-i", "reason": reason, "message": "Delete it?"}
    if call:
        interrupt["toolCallId"] = "tc-1"
    if schema is not None:
        interrupt["responseSchema"] = schema
    if metadata is not None:
        interrupt["metadata"] = metadata
    response = ingest(agent, interrupt_run(f"t-{run}", run, [interrupt], CALL_EVENTS))
    assert response.status_code == 201, response.content
    return InboxItem.objects.get(interrupt_id=f"{run}-i")


@pytest.fixture
def quorum_of_two(make_agent):
    return make_agent("strict", approvals_required=2)


def test_the_api_says_what_the_decision_means(client: Client, quorum_of_two, ingest, alice):
    item = item_with(quorum_of_two, ingest, ACCEPT_REJECT)
    client.force_login(alice)
    body = {"status": "resolved", "payload": REJECT}
    response = client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["decision"]["outcome"] == "denied"


def test_deny_in_an_accept_reject_schema_is_a_denial_not_one_approval_of_two(quorum_of_two, ingest, alice):
    item = item_with(quorum_of_two, ingest, ACCEPT_REJECT)
    outcome = decision_submit(item_id=item.pk, user=alice, status="resolved", payload=REJECT)
    assert outcome.closed, f"counted as {outcome.approvals} of {outcome.required} approvals"
    item.refresh_from_db()
    assert (item.status, item.outcome, item.response_payload) == ("resolved", "denied", REJECT)
    decision = item.decisions.get()
    assert (decision.outcome, decision.is_denial, decision.is_approval, decision.final) == ("denied", True, False, True)


def test_accept_in_the_same_schema_still_needs_two_approvers(quorum_of_two, ingest, alice, bob):
    item = item_with(quorum_of_two, ingest, ACCEPT_REJECT)
    first = decision_submit(item_id=item.pk, user=alice, status="resolved", payload=ACCEPT)
    assert (first.closed, first.approvals, first.required) == (False, 1, 2)
    assert first.decision.outcome == "approved"
    second = decision_submit(item_id=item.pk, user=bob, status="resolved", payload=ACCEPT)
    assert second.closed
    item.refresh_from_db()
    assert item.outcome == "approved"


def test_the_requester_may_reject_their_own_action_but_not_accept_it(agent, ingest, alice):
    requested = {"requestedBy": "alice"}
    rejected = item_with(agent, ingest, ACCEPT_REJECT, run="r-1", metadata=requested)
    accepted = item_with(agent, ingest, ACCEPT_REJECT, run="r-2", metadata=requested)
    assert decision_submit(item_id=rejected.pk, user=alice, status="resolved", payload=REJECT).closed
    with pytest.raises(DecisionError) as refused:
        decision_submit(item_id=accepted.pk, user=alice, status="resolved", payload=ACCEPT)
    assert refused.value.code == "self_approval"


def test_the_page_deny_says_denied_in_its_toast_and_history(client: Client, agent, ingest, alice):
    item = item_with(agent, ingest, ACCEPT_REJECT)
    client.force_login(alice)
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"}, follow=True)
    html = response.content.decode()
    assert "Denied: “Delete it?”" in html, html[:3000]
    item.refresh_from_db()
    assert item.response_payload == REJECT and item.outcome == "denied"
    page = client.get(item.get_absolute_url()).content.decode()
    assert "alice</strong> denied" in page or "alice denied" in " ".join(page.split())


def test_the_readers_of_a_decided_item_read_its_stored_outcome(client: Client, agent, ingest, alice):
    item = item_with(agent, ingest, ACCEPT_REJECT)
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload=REJECT)
    item.refresh_from_db()
    # The policy backtest compares a policy with what people decided.
    assert human_verdict(item) == "denied"
    # The tool-call trail, and its page's vote colour.
    assert build_trail(item).approved is False
    # The stats: decided, not approved.
    report = build_report(user=alice)
    assert (report.agents[0].decided, report.agents[0].approved) == (1, 0)
    # Review quality.
    review = build_review(Decision.objects.all(), since=None, until=None)
    assert (review.total.approvals, review.total.denials) == (0, 1)
    client.force_login(alice)
    # The thread timeline.
    timeline = client.get(f"/audit/threads/{item.thread_id}/").content.decode()
    assert f"alice denied {item.interrupt_id}" in timeline
    # The audit log's outcome pill.
    log = client.get("/audit/?verb=item.resolved").content.decode()
    assert 'data-outcome="denied"' in log
    # The decisions export.
    export = client.get("/audit/export/decisions.json")
    rows = json.loads(b"".join(export.streaming_content))["rows"]
    assert [(row["outcome"], row["approved"], row["edited"]) for row in rows] == [("denied", False, False)]


def test_an_audit_event_from_before_decisions_carried_their_outcome_shows_its_items(
    client: Client, agent, ingest, alice
):
    item = item_with(agent, ingest, ACCEPT_REJECT)
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload=REJECT)
    # An event as it was recorded before: no outcome in its data (the log is append-only; this one is added).
    audit(actor=Actor.for_user(alice), verb="item.resolved", obj=item, data={"status": "resolved", "payload": REJECT})
    client.force_login(alice)
    log = client.get("/audit/?verb=item.resolved").content.decode()
    assert log.count('data-outcome="denied"') == 2 and 'data-outcome="answered"' not in log


def test_a_form_is_judged_by_its_own_yes_no_property(agent, ingest, alice):
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "amount": {"type": "number"}},
        "required": ["approved", "amount"],
    }
    denied = item_with(agent, ingest, schema, run="r-1", reason="input_required")
    approved = item_with(agent, ingest, schema, run="r-2", reason="input_required")
    decision_submit(item_id=denied.pk, user=alice, status="resolved", payload={"approved": False, "amount": 3})
    decision_submit(item_id=approved.pk, user=alice, status="resolved", payload={"approved": True, "amount": 3})
    denied.refresh_from_db()
    approved.refresh_from_db()
    assert (denied.outcome, approved.outcome) == ("denied", "approved")


def test_an_answer_without_a_schema_is_an_answer_whatever_its_words(agent, ingest, alice):
    """No word list: an ``input_required`` item without a schema takes any JSON, and ``{"approved": false}`` or
    ``"deny"`` typed into it is somebody's answer, not a denial."""
    words = item_with(agent, ingest, None, run="r-1", reason="input_required", call=False)
    flag = item_with(agent, ingest, None, run="r-2", reason="input_required", call=False)
    decision_submit(item_id=words.pk, user=alice, status="resolved", payload="deny")
    decision_submit(item_id=flag.pk, user=alice, status="resolved", payload={"approved": False})
    words.refresh_from_db()
    flag.refresh_from_db()
    assert (words.outcome, flag.outcome) == ("answered", "answered")


def test_earlier_decisions_are_judged_once_by_the_migration(quorum_of_two, ingest, alice, bob):
    """Decisions stored before they carried an outcome: the migration judges them with the same judge (a closing
    one takes its item's stored outcome, a vote is judged in its item's schema, a cancel is cancelled)."""
    voted = item_with(quorum_of_two, ingest, ACCEPT_REJECT, run="r-1")
    closed = item_with(quorum_of_two, ingest, ACCEPT_REJECT, run="r-2")
    cancelled = item_with(quorum_of_two, ingest, ACCEPT_REJECT, run="r-3")
    decision_submit(item_id=voted.pk, user=alice, status="resolved", payload=ACCEPT)
    decision_submit(item_id=closed.pk, user=bob, status="resolved", payload=REJECT)
    decision_submit(item_id=cancelled.pk, user=bob, status="cancelled")
    Decision.objects.update(outcome="")
    migration = importlib.import_module("inbox.migrations.0006_decision_outcome")
    migration.judge_earlier_decisions(apps, None)
    assert dict(Decision.objects.values_list("item__interrupt_id", "outcome")) == {
        "r-1-i": "approved",
        "r-2-i": "denied",
        "r-3-i": "cancelled",
    }


@pytest.mark.parametrize(
    ("status", "payload", "outcome"),
    [("cancelled", None, "cancelled"), ("expired", None, "expired"), ("open", None, "")],
)
def test_the_judge_names_a_closed_status_without_reading_a_payload(agent, ingest, status, payload, outcome):
    item = item_with(agent, ingest, ACCEPT_REJECT)
    assert outcome_for(item, status, payload) == outcome


def test_the_tool_call_trail_says_answered_for_a_form_answer(client: Client, agent, ingest, alice):
    """A tool call asked with a form that has no yes or no: its answer is Answered on the item page, so on the
    tool-call trail too (not "Approved", which it read for anything but a denial)."""
    form = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    item = item_with(agent, ingest, form)
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"note": "use the other disk"})
    item.refresh_from_db()
    assert item.outcome == "answered"
    client.force_login(alice)
    trail = client.get(f"/audit/tool-calls/{item.tool_call_id}/").content.decode()
    decision = " ".join(trail.split('id="decision"')[1].split('id="result"')[0].split())
    assert "Answered by" in decision and "Approved" not in decision, decision


def test_an_answered_question_is_no_approval_in_the_stats_or_the_review_figures(agent, ingest, alice, staff):
    """The stats page's approval rate and the review figures counted anything resolved and not denied as an
    approval: an answer to "which disk?" raised an agent's approval rate and an approver's streak."""
    question = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    asked = item_with(agent, ingest, question, run="r-asked", reason="input_required", call=False)
    decision_submit(item_id=asked.pk, user=alice, status="resolved", payload={"note": "the other disk"})
    approved = item_with(agent, ingest, None, run="r-approved")
    decision_submit(item_id=approved.pk, user=alice, status="resolved", payload={"approved": True})
    denied = item_with(agent, ingest, None, run="r-denied")
    decision_submit(item_id=denied.pk, user=alice, status="resolved", payload={"approved": False})

    (row,) = build_report(user=staff, days=30).agents
    assert (row.decided, row.approved, row.answered) == (3, 1, 1)
    assert row.approval_rate == 0.5  # one of the two yes-or-no decisions, not two of three

    figures = build_review(Decision.objects.all(), since=None, until=None).total.as_dict()
    assert (figures["decisions"], figures["approvals"], figures["denials"]) == (3, 1, 1)
