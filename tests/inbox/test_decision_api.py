"""POST /api/v1/items/<id>/decision: every outcome, including two approvers racing for one item."""

from __future__ import annotations

import copy
import json
import threading
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.utils import timezone

from inbox.models import ApiToken, AuditEvent, Decision, InboxItem
from tests.conftest import spec_example


def decide(client: Client, item: InboxItem, body, **extra):
    return client.post(
        f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json", **extra
    )


def quarterly_filing(hours: int = 2) -> dict:
    body = copy.deepcopy(spec_example("non_tool_input_request"))
    body["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=hours)).isoformat()
    return body


@pytest.fixture
def email_item(agent, ingest) -> InboxItem:
    assert ingest(agent, spec_example("minimal_tool_approval")).status_code == 201
    return InboxItem.objects.get(interrupt_id="int-abc123")


@pytest.fixture
def filing_item(agent, ingest) -> InboxItem:
    assert ingest(agent, quarterly_filing()).status_code == 201
    return InboxItem.objects.get(interrupt_id="int-form")


def test_an_approval_is_stored_with_who_when_payload_comment_and_an_audit_event(client, alice, email_item):
    client.force_login(alice)
    response = decide(client, email_item, {"status": "resolved", "payload": {"approved": True}, "comment": "fine"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["item"]["status"] == "resolved"
    assert body["decision"] == body["decision"] | {
        "status": "resolved",
        "payload": {"approved": True},
        "comment": "fine",
        "user": "alice",
        "final": True,
    }
    assert body["closed"] is True
    decision = Decision.objects.get(item=email_item)
    assert (decision.user, decision.payload, decision.comment) == (alice, {"approved": True}, "fine")
    assert decision.created_at is not None
    email_item.refresh_from_db()
    assert email_item.status == "resolved"
    assert email_item.decided_by == alice
    assert email_item.response_payload == {"approved": True}
    assert email_item.decision_comment == "fine"
    event = AuditEvent.objects.get(verb="item.resolved", object_id=str(email_item.pk))
    assert event.actor_user == alice
    assert event.data["payload"] == {"approved": True}


def test_a_denial_is_a_resolved_decision_with_approved_false(client, alice, email_item):
    client.force_login(alice)
    response = decide(client, email_item, {"status": "resolved", "payload": {"approved": False}})
    assert response.status_code == 201
    email_item.refresh_from_db()
    assert (email_item.status, email_item.response_payload) == ("resolved", {"approved": False})


def test_a_cancellation_stores_no_payload(client, alice, email_item):
    client.force_login(alice)
    response = decide(client, email_item, {"status": "cancelled"})
    assert response.status_code == 201
    email_item.refresh_from_db()
    assert email_item.status == "cancelled"
    assert email_item.response_payload is None
    assert AuditEvent.objects.filter(verb="item.cancelled", object_id=str(email_item.pk)).count() == 1


def test_a_cancellation_with_a_payload_is_refused(client, alice, email_item):
    client.force_login(alice)
    response = decide(client, email_item, {"status": "cancelled", "payload": {"approved": True}})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "payload"


def test_approve_with_edits_stores_the_edited_arguments(client, alice, agent, ingest):
    ingest(agent, spec_example("approve_with_edits"))
    item = InboxItem.objects.get(interrupt_id="int-email-edit")
    client.force_login(alice)
    payload = {"approved": True, "editedArgs": {"to": "a@b.com", "subject": "Hi", "body": "Hi (revised per my note)"}}
    response = decide(client, item, {"status": "resolved", "payload": payload})
    assert response.status_code == 201
    assert Decision.objects.get(item=item).payload == payload


def test_an_invalid_payload_is_refused_with_each_jsonschema_path_and_nothing_is_stored(client, alice, filing_item):
    client.force_login(alice)
    response = decide(client, filing_item, {"status": "resolved", "payload": {"quarter": "Q5", "year": 1999}})

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_payload"
    assert sorted(error["path"] for error in body["errors"]) == ["quarter", "revenue", "year"]
    assert "2000" in next(error["message"] for error in body["errors"] if error["path"] == "year")
    assert not Decision.objects.exists()
    filing_item.refresh_from_db()
    assert filing_item.status == "open"
    assert not AuditEvent.objects.filter(verb__startswith="item.resolved").exists()


def test_a_valid_form_answer_is_accepted(client, alice, filing_item):
    client.force_login(alice)
    payload = {"quarter": "Q1", "year": 2026, "revenue": 4200000}
    response = decide(client, filing_item, {"status": "resolved", "payload": payload})
    assert response.status_code == 201
    filing_item.refresh_from_db()
    assert filing_item.response_payload == payload


def test_a_confirmation_without_schema_takes_the_boolean_default(client, alice, agent, ingest):
    ingest(
        agent,
        {
            "type": "RUN_FINISHED",
            "threadId": "t-c",
            "runId": "r-c",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "c-1", "reason": "confirmation", "message": "Restart?"}],
            },
        },
    )
    item = InboxItem.objects.get(interrupt_id="c-1")
    client.force_login(alice)
    refused = decide(client, item, {"status": "resolved", "payload": {"approved": "yes"}})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["path"] == "approved"
    assert decide(client, item, {"status": "resolved", "payload": {"approved": True}}).status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "approved"}, "status"),
        ({"payload": {"approved": True}}, "status"),
        ({"status": "resolved", "payload": {"approved": True}, "comment": 42}, "comment"),
        (["resolved"], "body"),
    ],
)
def test_a_malformed_body_is_refused_naming_the_field(client, alice, email_item, body, field):
    client.force_login(alice)
    response = decide(client, email_item, body)
    assert response.status_code == 400
    data = response.json()
    assert data["errors"][0]["path"] == field
    assert not Decision.objects.exists()


def test_a_body_that_is_not_json_is_a_400_not_a_500(client, alice, email_item):
    client.force_login(alice)
    response = client.post(f"/api/v1/items/{email_item.pk}/decision", data="{oops", content_type="application/json")
    assert response.status_code == 400
    assert "error" in response.json()


def test_deciding_a_decided_item_is_a_409_naming_its_state_and_decision(client, alice, bob, email_item):
    client.force_login(alice)
    assert (
        decide(client, email_item, {"status": "resolved", "payload": {"approved": True}, "comment": "ok"}).status_code
        == 201
    )
    client.force_login(bob)
    response = decide(client, email_item, {"status": "cancelled"})

    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "not_open"
    assert body["state"] == "resolved"
    assert body["decision"]["decidedBy"] == "alice"
    assert body["decision"]["payload"] == {"approved": True}
    assert Decision.objects.count() == 1


def test_deciding_past_expires_at_is_a_409_expired_even_before_the_sweep_ran(client, alice, filing_item):
    client.force_login(alice)
    with time_machine.travel(filing_item.expires_at + timedelta(seconds=1), tick=False):
        response = decide(
            client, filing_item, {"status": "resolved", "payload": {"quarter": "Q1", "year": 2026, "revenue": 1}}
        )
    assert response.status_code == 409
    assert response.json()["error"] == "expired"
    assert not Decision.objects.exists()
    filing_item.refresh_from_db()
    assert filing_item.status == "expired"


def test_deciding_a_second_before_expiry_is_refused_as_too_late_to_send_and_outside_the_margin_works(
    client, alice, filing_item, settings
):
    client.force_login(alice)
    with time_machine.travel(filing_item.expires_at - timedelta(seconds=1), tick=False):
        response = decide(client, filing_item, {"status": "cancelled"})
    assert response.status_code == 409 and response.json()["error"] == "too_close_to_deadline"
    margin = settings.INBOX_DECISION_SEND_MARGIN_SECONDS
    with time_machine.travel(filing_item.expires_at - timedelta(seconds=margin + 1), tick=False):
        response = decide(client, filing_item, {"status": "cancelled"})
    assert response.status_code == 201


def test_an_outsider_gets_a_404_and_nothing_changes(client, carol, email_item):
    client.force_login(carol)
    response = decide(client, email_item, {"status": "resolved", "payload": {"approved": True}})
    assert response.status_code == 404
    email_item.refresh_from_db()
    assert email_item.status == "open"


def test_an_unknown_item_is_a_404(client, alice, email_item):
    client.force_login(alice)
    assert decide(client, email_item, {"status": "cancelled"}).status_code == 201
    response = client.post("/api/v1/items/999999/decision", data="{}", content_type="application/json")
    assert response.status_code == 404


def test_anonymous_requests_are_refused(client, email_item):
    response = decide(client, email_item, {"status": "cancelled"})
    assert response.status_code in (401, 403)
    email_item.refresh_from_db()
    assert email_item.status == "open"


def test_a_user_token_authenticates_a_decision(client, bob, email_item):
    _, key = ApiToken.issue(bob)
    response = decide(
        client,
        email_item,
        {"status": "resolved", "payload": {"approved": True}},
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 201
    email_item.refresh_from_db()
    assert email_item.decided_by == bob


def test_an_agent_token_cannot_decide(client, agent, email_item):
    response = decide(client, email_item, {"status": "cancelled"}, **agent.auth)
    assert response.status_code in (401, 403)


def test_the_openapi_schema_documents_the_decision_body_and_errors(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/items/{id}/decision"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["status"]["enum"] == ["resolved", "cancelled"]
    assert {"201", "400", "404", "409"} <= set(operation["responses"])


@pytest.mark.django_db(transaction=True)
def test_two_approvers_deciding_the_same_item_at_once_exactly_one_wins(make_agent, alice, bob):
    agent = make_agent("racer")
    ingest_client = Client()
    response = ingest_client.post(
        "/api/v1/runs",
        data=json.dumps(spec_example("minimal_tool_approval")),
        content_type="application/json",
        **agent.auth,
    )
    assert response.status_code == 201
    item = InboxItem.objects.get(interrupt_id="int-abc123")
    clients = {}
    for user in (alice, bob):
        clients[user.username] = Client()
        clients[user.username].force_login(user)
    barrier = threading.Barrier(2)
    results: dict[str, tuple[int, dict]] = {}

    def run(name: str, body: dict) -> None:
        try:
            barrier.wait(timeout=10)
            response = decide(clients[name], item, body)
            results[name] = (response.status_code, response.json())
        finally:
            connection.close()

    threads = [
        threading.Thread(target=run, args=("alice", {"status": "resolved", "payload": {"approved": True}})),
        threading.Thread(target=run, args=("bob", {"status": "resolved", "payload": {"approved": False}})),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    codes = sorted(code for code, _ in results.values())
    assert codes == [201, 409], results
    winner = next(name for name, (code, _) in results.items() if code == 201)
    loser_body = next(body for code, body in results.values() if code == 409)
    assert loser_body["state"] == "resolved"
    assert loser_body["decision"]["decidedBy"] == winner
    assert Decision.objects.filter(item=item).count() == 1
    item.refresh_from_db()
    assert item.decided_by.username == winner
    assert AuditEvent.objects.filter(verb="item.resolved", object_id=str(item.pk)).count() == 1
