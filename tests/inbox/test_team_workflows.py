"""Team review rules: claims, quorum, no self-approval, comments and bulk decisions (API level)."""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client

from inbox.models import AuditEvent, Decision, InboxItem
from tests.conftest import spec_example


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, url: str, body: dict | None = None):
    return client.post(url, data=json.dumps(body or {}), content_type="application/json")


def decide(client: Client, item: InboxItem, status: str = "resolved", payload=None, **extra):
    body = {"status": status, **extra}
    if payload is not None:
        body["payload"] = payload
    from inbox.decisions.rules import DecisionError
    from inbox.decisions.services import decision_submit

    user = client.session.get("_auth_user_id")
    from django.contrib.auth.models import User

    try:
        outcome = decision_submit(
            item_id=item.pk,
            user=User.objects.get(pk=user),
            status=status,
            payload=payload,
            comment=extra.get("comment", ""),
        )
    except DecisionError as error:
        return error
    return outcome


@pytest.fixture
def email_item(agent, ingest) -> InboxItem:
    assert ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval"))).status_code == 201
    return InboxItem.objects.get()


# --- claims ----------------------------------------------------------------------------------------


def test_a_claimed_item_shows_its_holder_and_only_the_holder_decides_it(email_item, alice, bob):
    response = post(client_for(alice), f"/api/v1/items/{email_item.pk}/claim")
    assert response.status_code == 200 and response.json()["claimedBy"] == "alice"

    refused = decide(client_for(bob), email_item, payload={"approved": True})
    assert refused.status == 403 and refused.code == "claimed"
    assert decide(client_for(alice), email_item, payload={"approved": True}).closed


def test_someone_else_cannot_claim_a_held_item_but_staff_can_decide_it_and_it_is_audited(email_item, alice, bob, staff):
    post(client_for(alice), f"/api/v1/items/{email_item.pk}/claim")
    assert post(client_for(bob), f"/api/v1/items/{email_item.pk}/claim").status_code == 409

    assert decide(client_for(staff), email_item, payload={"approved": False}).closed
    event = AuditEvent.objects.get(verb="item.resolved")
    assert event.actor_label == "staff" and event.data["overrodeClaimOf"] == "alice"


def test_the_holder_can_unclaim_and_then_anyone_decides(email_item, alice, bob):
    post(client_for(alice), f"/api/v1/items/{email_item.pk}/claim")
    assert post(client_for(bob), f"/api/v1/items/{email_item.pk}/unclaim").status_code == 403
    assert post(client_for(alice), f"/api/v1/items/{email_item.pk}/unclaim").json()["claimedBy"] is None
    assert decide(client_for(bob), email_item, payload={"approved": True}).closed


def test_assigning_hands_the_item_to_a_teammate(email_item, alice, bob, carol):
    response = post(client_for(alice), f"/api/v1/items/{email_item.pk}/assign", {"assignee": "bob"})
    assert response.status_code == 200 and response.json()["claimedBy"] == "bob"

    outsider = post(client_for(bob), f"/api/v1/items/{email_item.pk}/assign", {"assignee": "carol"})
    assert outsider.status_code == 400 and outsider.json()["errors"][0]["path"] == "assignee"
    missing = post(client_for(bob), f"/api/v1/items/{email_item.pk}/assign", {})
    assert missing.status_code == 400 and missing.json()["field"] == "assignee"


def test_an_outsider_cannot_claim_or_even_see_the_item(email_item, carol):
    assert post(client_for(carol), f"/api/v1/items/{email_item.pk}/claim").status_code == 404


# --- quorum ----------------------------------------------------------------------------------------


@pytest.fixture
def quorum_item(make_agent, ingest) -> InboxItem:
    strict = make_agent("strict", approvals_required=2)
    ingest(strict, copy.deepcopy(spec_example("approve_with_edits")))
    return InboxItem.objects.get()


def test_a_quorum_of_two_needs_two_distinct_approvers_of_the_same_answer(quorum_item, alice, bob):
    first = decide(client_for(alice), quorum_item, payload={"approved": True})
    assert (first.closed, first.approvals, first.required) == (False, 1, 2)
    assert InboxItem.objects.get().status == "open"

    again = decide(client_for(alice), quorum_item, payload={"approved": True})
    assert again.status == 409 and again.code == "already_approved"

    second = decide(client_for(bob), quorum_item, payload={"approved": True})
    assert second.closed and InboxItem.objects.get().status == "resolved"
    assert Decision.objects.filter(final=True).get().user == bob


def test_editing_the_answer_restarts_the_quorum_count(quorum_item, alice, bob, staff):
    decide(client_for(alice), quorum_item, payload={"approved": True})
    edited = {"approved": True, "editedArgs": {"to": "a@b.com", "subject": "Hi", "body": "revised"}}
    restarted = decide(client_for(bob), quorum_item, payload=edited)
    assert (restarted.closed, restarted.approvals) == (False, 1)

    closing = decide(client_for(staff), quorum_item, payload=edited)
    assert closing.closed and InboxItem.objects.get().response_payload == edited


def test_a_deny_from_any_approver_decides_a_quorum_item_at_once(quorum_item, alice, bob):
    decide(client_for(alice), quorum_item, payload={"approved": True})
    denial = decide(client_for(bob), quorum_item, payload={"approved": False})
    assert denial.closed and InboxItem.objects.get().response_payload == {"approved": False}


# --- no self-approval ------------------------------------------------------------------------------


def test_the_person_who_asked_for_the_action_cannot_approve_it(agent, ingest, alice, bob):
    finished = copy.deepcopy(spec_example("minimal_tool_approval"))
    finished["metadata"] = {"requestedBy": "alice@example.com"}
    ingest(agent, finished)
    item = InboxItem.objects.get()

    refused = decide(client_for(alice), item, payload={"approved": True})
    assert refused.status == 403 and refused.code == "self_approval"
    assert decide(client_for(bob), item, payload={"approved": True}).closed


def test_the_requester_may_still_deny_or_cancel_their_own_request(agent, ingest, alice):
    finished = copy.deepcopy(spec_example("minimal_tool_approval"))
    finished["outcome"]["interrupts"][0]["metadata"] = {"requestedBy": "alice"}
    ingest(agent, finished)
    assert decide(client_for(alice), InboxItem.objects.get(), payload={"approved": False}).closed


# --- comments --------------------------------------------------------------------------------------


def test_teammates_discuss_an_item_and_a_run(email_item, alice, bob, carol):
    assert (
        post(client_for(alice), f"/api/v1/items/{email_item.pk}/comments", {"body": "Is a@b.com right?"}).status_code
        == 201
    )
    assert (
        post(client_for(bob), f"/api/v1/runs/{email_item.run_id}/comments", {"body": "Looks fine"}).status_code == 201
    )

    thread = client_for(bob).get(f"/api/v1/items/{email_item.pk}/comments").json()
    assert [(c["user"], c["body"]) for c in thread] == [("alice", "Is a@b.com right?")]
    assert post(client_for(alice), f"/api/v1/items/{email_item.pk}/comments", {"body": "  "}).status_code == 400
    assert client_for(carol).get(f"/api/v1/items/{email_item.pk}/comments").status_code == 404


def test_an_overlong_comment_is_refused_naming_the_field_and_nothing_is_stored(email_item, alice):
    client = client_for(alice)
    for url in (f"/api/v1/items/{email_item.pk}/comments", f"/api/v1/runs/{email_item.run_id}/comments"):
        response = post(client, url, {"body": "x" * 10_001})
        assert response.status_code == 400
        assert response.json()["errors"] == [{"path": "body", "message": "must be at most 10000 characters"}]
    assert post(client, f"/api/v1/items/{email_item.pk}/comments", {"body": "x" * 10_000}).status_code == 201
    assert [len(c["body"]) for c in client.get(f"/api/v1/items/{email_item.pk}/comments").json()] == [10_000]
    assert AuditEvent.objects.filter(verb="comment.added").count() == 1

    decision = post(
        client,
        f"/api/v1/items/{email_item.pk}/decision",
        {"status": "resolved", "payload": {"approved": True}, "comment": "y" * 5001},
    )
    assert decision.status_code == 400 and decision.json()["field"] == "comment"
    bulk = post(
        client, "/api/v1/items/bulk-decision", {"ids": [email_item.pk], "action": "approve", "comment": "y" * 5001}
    )
    assert bulk.status_code == 400 and bulk.json()["errors"][0]["path"] == "comment"
    email_item.refresh_from_db()
    assert email_item.status == "open" and not email_item.decisions.exists()


# --- bulk ------------------------------------------------------------------------------------------


def test_bulk_approve_decides_each_item_with_its_own_audit_event(make_agent, ingest, alice):
    for n in range(10):
        finished = copy.deepcopy(spec_example("minimal_tool_approval"))
        finished["threadId"], finished["runId"] = f"thread-{n}", f"run-{n}"
        ingest(make_agent(f"bulk-{n}"), finished)
    ids = list(InboxItem.objects.values_list("pk", flat=True))

    response = post(client_for(alice), "/api/v1/items/bulk-decision", {"ids": ids, "action": "approve"})
    assert response.status_code == 200 and response.json()["decided"] == 10
    assert set(InboxItem.objects.values_list("status", flat=True)) == {"resolved"}
    assert AuditEvent.objects.filter(verb="item.resolved").count() == 10


def test_bulk_reports_each_failure_without_blocking_the_rest(agent, make_agent, ingest, alice):
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    form = copy.deepcopy(spec_example("non_tool_input_request"))
    form["outcome"]["interrupts"][0]["expiresAt"] = "2099-01-01T00:00:00Z"
    ingest(make_agent("forms"), form)
    tool = InboxItem.objects.get(reason="tool_call")
    needs_input = InboxItem.objects.get(reason="input_required")

    response = post(
        client_for(alice),
        "/api/v1/items/bulk-decision",
        {"ids": [needs_input.pk, 999_999, tool.pk], "action": "approve"},
    )
    results = response.json()["results"]
    assert [(r["id"], r["ok"], r.get("error")) for r in results] == [
        (needs_input.pk, False, "needs_input"),
        (999_999, False, "not_found"),
        (tool.pk, True, None),
    ]
    assert InboxItem.objects.get(pk=tool.pk).status == "resolved"
    assert InboxItem.objects.get(pk=needs_input.pk).status == "open"


@pytest.mark.parametrize(
    "body",
    [{}, {"ids": [], "action": "approve"}, {"ids": ["1"], "action": "approve"}, {"ids": [1], "action": "explode"}],
)
def test_bulk_refuses_bad_input_naming_the_field(alice, body, db):
    response = post(client_for(alice), "/api/v1/items/bulk-decision", body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] in ("ids", "action")


# --- expiry at the moment of deciding ---------------------------------------------------------------


def test_deciding_an_open_sibling_of_a_lapsed_item_is_refused_and_closes_the_run(agent, ingest, alice):
    import time_machine
    from django.utils import timezone

    finished = copy.deepcopy(spec_example("parallel_interrupts"))
    soon, later = timezone.now() + timezone.timedelta(minutes=5), timezone.now() + timezone.timedelta(hours=5)
    for interrupt, expires in zip(finished["outcome"]["interrupts"], (soon, later, later), strict=True):
        interrupt["expiresAt"] = expires.isoformat()
    ingest(agent, finished)
    first, second, third = InboxItem.objects.order_by("position")
    assert decide(client_for(alice), first, payload={"approved": True}).closed

    with time_machine.travel(soon + timezone.timedelta(minutes=1)):
        refused = decide(client_for(alice), second, payload={"approved": True})

    assert refused.status == 409 and refused.code == "expired"
    assert "can no longer be resumed" in refused.message
    statuses = dict(InboxItem.objects.values_list("interrupt_id", "status"))
    assert statuses == {"i-1": "resolved", "i-2": "expired", "i-3": "expired"}
