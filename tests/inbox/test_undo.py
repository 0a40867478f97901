"""Undo: a decision is held for INBOX_UNDO_SECONDS; undone within it, the item is open again and nothing is sent;
the decision and its undo both stay in the audit log. The API's undo, its refusals, and the opt-out."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from inbox.decisions.services import decision_submit, decision_undo
from inbox.models import AuditEvent, Decision, InboxItem, Resume, Run
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import Reply
from tests.factories import interrupted_run

UNDO = 10.0


@pytest.fixture(autouse=True)
def undo_on(settings):
    settings.INBOX_UNDO_SECONDS = UNDO


def decide(client: Client, item: InboxItem, body: dict):
    return client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")


def undo(client: Client, item: InboxItem, body: str = ""):
    return client.post(f"/api/v1/items/{item.pk}/decision/undo", data=body, content_type="application/json")


def one_item_run(agent, name: str = "r1", minutes: float = 60) -> Run:
    return interrupted_run(agent.agent, f"t-{name}", name, minutes)


def verbs(item: InboxItem) -> list[str]:
    run_events = AuditEvent.objects.filter(object_type="resume").values_list("verb", flat=True)
    item_events = AuditEvent.objects.filter(object_type="inboxitem", object_id=str(item.pk)).values_list(
        "verb", flat=True
    )
    return sorted([*item_events, *run_events])


def agent_on(scripted, agent, thread: str = "t-r1"):
    """The agent answers every resume with a finished run: a real HTTP agent on loopback that records what it got."""
    finished = {"type": "RUN_FINISHED", "threadId": thread, "runId": "resumed", "outcome": {"type": "success"}}
    server = scripted(Reply(sse=[{"type": "RUN_STARTED", "threadId": thread, "runId": "resumed"}, finished]))
    agent.agent.endpoint_url = server.url
    agent.agent.save(update_fields=["endpoint_url"])
    return server


APPROVE = {"status": "resolved", "payload": {"approved": True}}
DENY = {"status": "resolved", "payload": {"approved": False}}


def test_a_decision_holds_its_resume_until_the_undo_window_closes(client, alice, agent):
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)

    response = decide(client, item, DENY)

    assert response.status_code == 201, response.content
    until = response.json()["undoUntil"]
    resume = Resume.objects.get(run=run)
    assert resume.state == "pending" and resume.next_attempt_at.isoformat() == until
    assert timedelta(seconds=UNDO - 1) < resume.next_attempt_at - timezone.now() <= timedelta(seconds=UNDO)
    # Run by a worker now, the dispatch claims nothing: the row is not due.
    assert resume_dispatch(resume_id=resume.pk) == "not claimed"
    assert Resume.objects.get(pk=resume.pk).attempts == 0


def test_undo_within_the_window_opens_the_item_again_and_withdraws_the_unsent_resume(client, alice, agent):
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)
    assert decide(client, item, DENY).status_code == 201
    before = AuditEvent.objects.count()

    response = undo(client, item)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reopened"] is True
    assert body["item"]["status"] == "open"
    assert body["decision"]["withdrawn_at"] is not None
    item.refresh_from_db()
    assert (item.status, item.outcome, item.decided_by, item.response_payload) == ("open", "", None, None)
    assert not Resume.objects.filter(run=run).exists()
    decision = Decision.objects.get(item=item)  # kept on record, withdrawn
    assert decision.withdrawn_at is not None and decision.counts is False
    # Append-only: the decision, the resume's creation, its withdrawal and the undo are all in the log.
    assert AuditEvent.objects.count() == before + 2
    assert verbs(item) == ["item.decision_undone", "item.resolved", "resume.created", "resume.withdrawn"]
    undone = AuditEvent.objects.get(verb="item.decision_undone")
    assert undone.actor_label == "alice"
    assert undone.data["payload"] == {"approved": False} and undone.data["was"]["outcome"] == "denied"


def test_the_item_can_be_decided_again_after_an_undo_and_that_resume_leaves(client, alice, agent, scripted):
    server = agent_on(scripted, agent)
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)
    assert decide(client, item, DENY).status_code == 201
    assert undo(client, item).status_code == 200

    assert decide(client, item, APPROVE).status_code == 201
    resume = Resume.objects.get(run=run)
    with time_machine.travel(resume.next_attempt_at + timedelta(seconds=1)):
        assert resume_dispatch(resume_id=resume.pk) == "delivered"

    assert [entry["payload"] for entry in server.received[0]["resume"]] == [{"approved": True}]
    assert len(server.received) == 1


def test_after_the_window_the_undo_is_refused_and_the_resume_leaves(client, alice, agent, scripted):
    server = agent_on(scripted, agent)
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)
    assert decide(client, item, DENY).status_code == 201
    resume = Resume.objects.get(run=run)

    with time_machine.travel(resume.next_attempt_at + timedelta(seconds=1)):
        response = undo(client, item)
        assert resume_dispatch(resume_id=resume.pk) == "delivered"

    assert response.status_code == 409
    assert response.json()["error"] == "too_late"
    assert "Too late to undo" in response.json()["detail"]
    item.refresh_from_db()
    assert item.outcome == "denied"
    assert [entry["payload"] for entry in server.received[0]["resume"]] == [{"approved": False}]


def test_an_undo_that_loses_the_race_to_a_worker_is_told_it_was_already_sent(client, alice, agent, scripted):
    """A worker whose clock runs ahead claims the resume inside the window as this web process sees it: the claim
    won, the undo is a 409 and the item stays decided."""
    server = agent_on(scripted, agent)
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)
    assert decide(client, item, APPROVE).status_code == 201
    resume = Resume.objects.get(run=run)
    with time_machine.travel(resume.next_attempt_at + timedelta(seconds=1)):
        assert resume_dispatch(resume_id=resume.pk) == "delivered"

    response = undo(client, item)

    assert response.status_code == 409, response.content
    assert response.json()["error"] == "too_late"
    assert response.json()["detail"].startswith("Already sent — too late to undo")
    item.refresh_from_db()
    assert item.status == "resolved"
    assert Resume.objects.get(run=run).state == "delivered"
    assert not Decision.objects.filter(item=item, withdrawn_at__isnull=False).exists()
    assert len(server.received) == 1


def test_the_api_can_opt_out_and_the_resume_leaves_at_once(client, alice, agent, scripted):
    server = agent_on(scripted, agent)
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)

    response = decide(client, item, {**APPROVE, "undoable": False})

    assert response.status_code == 201
    assert response.json()["undoUntil"] is None
    resume = Resume.objects.get(run=run)
    assert resume.next_attempt_at <= timezone.now()
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    assert len(server.received) == 1
    refused = undo(client, item)
    assert refused.status_code == 409 and refused.json()["error"] == "nothing_to_undo"


@pytest.mark.parametrize("value", ["no", 0, None, [], {"x": 1}])
def test_an_undoable_that_is_not_a_boolean_is_a_400_naming_the_field(client, alice, agent, value):
    item = one_item_run(agent).items.get()
    client.force_login(alice)

    response = decide(client, item, {**APPROVE, "undoable": value})

    assert response.status_code == 400, response.content
    assert response.json()["field"] == "undoable"
    assert response.json()["error"] == "invalid_undoable"
    assert InboxItem.objects.get(pk=item.pk).status == "open"


def test_undo_refusals_are_4xx_with_a_reason(client, alice, bob, carol, agent):
    item = one_item_run(agent).items.get()
    client.force_login(alice)
    nothing = undo(client, item)
    assert nothing.status_code == 409 and nothing.json()["error"] == "nothing_to_undo"
    assert decide(client, item, DENY).status_code == 201

    client.force_login(bob)  # only the decider undoes
    assert undo(client, item).json()["error"] == "nothing_to_undo"
    client.force_login(carol)  # who cannot see the item gets a 404
    assert undo(client, item).status_code == 404
    assert undo(client, InboxItem(pk=999999)).status_code == 404
    client.force_login(alice)
    assert client.get(f"/api/v1/items/{item.pk}/decision/undo").status_code == 405
    assert undo(client, item, body="{not json").status_code == 400
    assert undo(client, item, body="[1]").json()["field"] == "body"
    assert undo(client, item).status_code == 200
    again = undo(client, item)
    assert again.status_code == 409 and again.json()["error"] == "nothing_to_undo"


def test_a_quorum_undo_withdraws_only_my_approval(client, alice, bob, staff, agent):
    agent.agent.approvals_required = 2
    agent.agent.save(update_fields=["approvals_required"])
    run = one_item_run(agent)
    item = run.items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True}, undoable=True)
    decision_submit(item_id=item.pk, user=bob, status="resolved", payload={"approved": True}, undoable=True)
    assert InboxItem.objects.get(pk=item.pk).status == "resolved"
    assert Resume.objects.filter(run=run).exists()

    outcome = decision_undo(item_id=item.pk, user=alice)

    assert outcome.reopened is True
    item.refresh_from_db()
    assert item.status == "open"
    assert not Resume.objects.filter(run=run).exists()
    counting = Decision.objects.filter(item=item, counts=True)
    assert [decision.user.username for decision in counting] == ["bob"]
    # Another approver completes the quorum again with bob's approval.
    decided = decision_submit(item_id=item.pk, user=staff, status="resolved", payload={"approved": True})
    assert decided.closed and decided.approvals == 2
    assert Resume.objects.filter(run=run, state="pending").exists()


def test_a_vote_undone_on_an_item_someone_else_denied_leaves_it_denied(alice, bob, agent):
    agent.agent.approvals_required = 2
    agent.agent.save(update_fields=["approvals_required"])
    run = one_item_run(agent)
    item = run.items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True}, undoable=True)
    decision_submit(item_id=item.pk, user=bob, status="resolved", payload={"approved": False}, undoable=True)

    outcome = decision_undo(item_id=item.pk, user=alice)

    assert outcome.reopened is False
    item.refresh_from_db()
    assert (item.status, item.outcome) == ("resolved", "denied")
    assert Resume.objects.filter(run=run, state="pending").exists()


def test_undoing_the_last_decision_of_a_batch_keeps_the_batch_from_leaving(alice, bob, agent):
    run = interrupted_run(agent.agent, "t-batch", "r-batch", 60, 60)
    first, second = run.items.order_by("position")
    decision_submit(item_id=first.pk, user=bob, status="resolved", payload={"approved": True}, undoable=True)
    decision_submit(item_id=second.pk, user=alice, status="cancelled", undoable=True)
    resume = Resume.objects.get(run=run)
    assert [entry["status"] for entry in resume.input["resume"]] == ["resolved", "cancelled"]

    decision_undo(item_id=second.pk, user=alice)

    assert not Resume.objects.filter(run=run).exists()
    assert InboxItem.objects.get(pk=first.pk).status == "resolved"  # bob's decision stands
    assert InboxItem.objects.get(pk=second.pk).status == "open"
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert not Resume.objects.filter(run=run).exists()  # nothing leaves while an item is open


def test_an_earlier_decision_of_the_batch_holds_the_resume_for_its_own_window(alice, bob, agent):
    run = interrupted_run(agent.agent, "t-held", "r-held", 60, 60)
    first, second = run.items.order_by("position")
    alice_decision = decision_submit(
        item_id=first.pk, user=alice, status="resolved", payload={"approved": True}, undoable=True
    ).decision
    with time_machine.travel(timezone.now() - timedelta(seconds=3)):  # bob answers "earlier" and opts out
        decision_submit(item_id=second.pk, user=bob, status="resolved", payload={"approved": True})

    assert Resume.objects.get(run=run).next_attempt_at == alice_decision.undo_until


def test_near_the_deadline_the_window_is_shortened_so_the_resume_still_leaves_in_time(settings, client, alice, agent):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 10.0
    run = interrupted_run(agent.agent, "t-near", "r-near", 15 / 60)  # expires in 15 s
    item = run.items.get()
    client.force_login(alice)

    response = decide(client, item, DENY)

    assert response.status_code == 201, response.content
    resume = Resume.objects.get(run=run)
    latest_send = item.expires_at - timedelta(seconds=10)
    assert resume.next_attempt_at <= latest_send
    assert resume.next_attempt_at < timezone.now() + timedelta(seconds=UNDO)
    assert response.json()["undoUntil"] == resume.next_attempt_at.isoformat()


def test_with_undo_turned_off_nothing_is_held(settings, client, alice, agent):
    settings.INBOX_UNDO_SECONDS = 0
    run = one_item_run(agent)
    item = run.items.get()
    client.force_login(alice)

    response = decide(client, item, DENY)

    assert response.json()["undoUntil"] is None
    assert Resume.objects.get(run=run).next_attempt_at <= timezone.now()
    assert undo(client, item).json()["error"] == "nothing_to_undo"


def test_the_openapi_document_names_the_opt_out_and_the_undo(client, alice):
    client.force_login(alice)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    body = schema["paths"]["/api/v1/items/{id}/decision"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["undoable"]["type"] == "boolean"
    undo_op = schema["paths"]["/api/v1/items/{id}/decision/undo"]["post"]
    assert {"200", "404", "409"} <= set(undo_op["responses"])


def test_the_item_page_offers_undo_on_the_next_page_and_the_undo_reopens_it(client, alice, agent):
    item = one_item_run(agent).items.get()
    client.force_login(alice)

    decided = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"}, follow=True)

    page = decided.content.decode()
    assert "data-undo-toast" in page and f"Denied: “{item.short_title}”" in page
    assert f'name="ids" value="{item.pk}"' in page
    undone = client.post("/inbox/undo/", {"ids": [item.pk], "next": "/inbox/"}, follow=True)
    assert f"Undone: “{item.short_title}” is open again. Nothing was sent." in undone.content.decode()
    assert InboxItem.objects.get(pk=item.pk).status == "open"
    assert "data-undo-toast" not in client.get("/inbox/").content.decode()  # the offer is spent


def test_a_stale_undo_form_says_it_is_too_late_and_changes_nothing(client, alice, agent):
    item = one_item_run(agent).items.get()
    client.force_login(alice)
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"})
    until = Decision.objects.get(item=item).undo_until

    with time_machine.travel(until + timedelta(seconds=1)):
        assert "data-undo-toast" not in client.get("/inbox/").content.decode()  # the window closed
        response = client.post("/inbox/undo/", {"ids": [item.pk]}, follow=True)

    assert "Too late to undo" in response.content.decode()
    assert InboxItem.objects.get(pk=item.pk).outcome == "denied"
