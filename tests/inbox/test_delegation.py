"""Delegation while away: a person marks themselves away and names a delegate; the items assigned to or held by
them meanwhile go to the delegate, who is held to the same rules (never the requester's own approval)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox.decisions.rules import DecisionError
from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, AwayStatus, InboxItem
from inbox.teams.away import away_set, delegation_sweep
from inbox.teams.claims import item_assign, item_claim
from tests.factories import UserFactory, interrupted_run


@pytest.fixture
def carl(team):
    return UserFactory(username="carl", teams=[team])


@pytest.fixture
def item(agent):
    return interrupted_run(agent.agent, "t-1", "r-1", 240).items.get()


def away(user, delegate, *, starts_in=timedelta(0), lasts=timedelta(days=2)):
    start = timezone.now() + starts_in
    return away_set(user=user, starts_at=start, ends_at=start + lasts, delegate=delegate, set_by=user)


def test_an_item_assigned_to_someone_away_goes_to_their_delegate(item, alice, bob, carl):
    away(bob, carl)

    item_assign(item_id=item.pk, user=alice, assignee=bob)

    item.refresh_from_db()
    assert item.claimed_by == carl
    event = AuditEvent.objects.filter(verb="item.assigned", object_id=str(item.pk)).get()
    assert event.data["holder"] == "carl" and event.data["delegatedFrom"] == "bob"


def test_items_held_when_the_away_period_begins_go_to_the_delegate_once(item, bob, carl):
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl, starts_in=timedelta(hours=1))
    item.refresh_from_db()
    assert item.claimed_by == bob  # not yet away

    assert delegation_sweep(now=timezone.now() + timedelta(hours=2)) == 1
    assert delegation_sweep(now=timezone.now() + timedelta(hours=2)) == 0

    item.refresh_from_db()
    assert item.claimed_by == carl
    event = AuditEvent.objects.get(verb="item.delegated", object_id=str(item.pk))
    assert (event.data["from"], event.data["to"]) == ("bob", "carl")


def test_setting_an_away_status_in_force_hands_over_at_once_and_the_delegate_decides(item, bob, carl):
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl)

    item.refresh_from_db()
    assert item.claimed_by == carl
    outcome = decision_submit(item_id=item.pk, user=carl, status="resolved", payload={"approved": True})
    assert outcome.closed and outcome.item.decided_by == carl


def test_a_delegate_who_requested_the_action_is_refused_the_item(agent, alice, bob, carl):
    run = interrupted_run(agent.agent, "t-1", "r-1", 240)
    run.requested_by = "carl@example.com"
    run.save(update_fields=["requested_by"])
    item = run.items.get()
    away(bob, carl)

    client = Client()
    client.force_login(alice)
    response = client.post(
        f"/api/v1/items/{item.pk}/assign", data=json.dumps({"assignee": "bob"}), content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["field"] == "assignee"
    assert "carl asked for this action" in response.json()["detail"]
    item.refresh_from_db()
    assert item.claimed_by is None


def test_a_held_item_the_delegate_requested_is_released_not_handed_over(agent, bob, carl):
    run = interrupted_run(agent.agent, "t-1", "r-1", 240)
    run.requested_by = "carl"
    run.save(update_fields=["requested_by"])
    item = run.items.get()
    item_claim(item_id=item.pk, user=bob)

    away(bob, carl)

    item.refresh_from_db()
    assert item.claimed_by is None
    event = AuditEvent.objects.get(verb="item.delegation_refused", object_id=str(item.pk))
    assert event.data["why"] == "carl asked for this action, so they may not approve it"


def test_quorum_still_needs_distinct_people_when_a_delegate_decides(agent, item, alice, bob, carl):
    agent.agent.approvals_required = 2
    agent.agent.save(update_fields=["approvals_required"])
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl)  # carl holds it now, and votes once
    first = decision_submit(item_id=item.pk, user=carl, status="resolved", payload={"approved": True})
    assert not first.closed
    with pytest.raises(DecisionError, match="another approver must"):
        decision_submit(item_id=item.pk, user=carl, status="resolved", payload={"approved": True})
    assert InboxItem.objects.get(pk=item.pk).status == "open"


def put_away(client: Client, body, **extra):
    return client.put("/api/v1/away", data=json.dumps(body), content_type="application/json", **extra)


def test_the_away_api_sets_reads_and_clears_a_status(bob, carl):
    client = Client()
    client.force_login(bob)
    start = timezone.now()
    response = put_away(
        client, {"from": start.isoformat(), "until": (start + timedelta(days=1)).isoformat(), "delegate": "carl"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["delegate"] == "carl" and response.json()["inForce"] is True
    assert client.get("/api/v1/away").json()["delegate"] == "carl"
    assert AuditEvent.objects.filter(verb="away.set", actor_label="bob").exists()
    assert client.delete("/api/v1/away").status_code == 204
    assert not AwayStatus.objects.exists()
    assert client.get("/api/v1/away").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"until": "2099-01-02T00:00:00Z", "delegate": "carl"}, "from"),
        ({"from": "tomorrow", "until": "2099-01-02T00:00:00Z", "delegate": "carl"}, "from"),
        ({"from": "2099-01-02T00:00:00Z", "until": "2099-01-01T00:00:00Z", "delegate": "carl"}, "until"),
        ({"from": "2000-01-01T00:00:00Z", "until": "2000-01-02T00:00:00Z", "delegate": "carl"}, "until"),
        ({"from": "2099-01-01T00:00:00Z", "until": "2099-01-02T00:00:00Z"}, "delegate"),
        ({"from": "2099-01-01T00:00:00Z", "until": "2099-01-02T00:00:00Z", "delegate": "ghost"}, "delegate"),
        ({"from": "2099-01-01T00:00:00Z", "until": "2099-01-02T00:00:00Z", "delegate": "bob"}, "delegate"),
        ({"from": "2099-01-01T00:00:00Z", "until": "2099-01-02T00:00:00Z", "delegate": 7}, "delegate"),
    ],
)
def test_a_bad_away_status_is_refused_naming_the_field(bob, carl, body, field):
    client = Client()
    client.force_login(bob)
    response = put_away(client, body)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not AwayStatus.objects.exists()


def test_the_settings_page_sets_an_away_status_and_every_page_shows_the_banner(bob, carl):
    client = Client()
    client.force_login(bob)
    start = timezone.localtime()
    response = client.post(
        "/inbox/settings/away/",
        {
            "starts_at": start.strftime("%Y-%m-%dT%H:%M"),
            "ends_at": (start + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M"),
            "delegate": "carl",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    page = client.get("/inbox/").content.decode()
    assert "data-away-banner" in page
    assert "carl decides for you" in page
    refused = client.post("/inbox/settings/away/", {"starts_at": "", "ends_at": "", "delegate": "carl"})
    assert refused.status_code == 400


def test_the_banner_shows_an_away_period_to_come_and_none_once_it_has_ended(bob, carl):
    client = Client()
    client.force_login(bob)
    status = away(bob, carl, starts_in=timedelta(days=1))
    page = client.get("/inbox/").content.decode()
    assert "data-away-banner" in page
    assert "carl decides for you" in page
    AwayStatus.objects.filter(pk=status.pk).update(
        starts_at=timezone.now() - timedelta(days=2), ends_at=timezone.now() - timedelta(minutes=1)
    )
    assert "data-away-banner" not in client.get("/inbox/").content.decode()


def test_the_item_says_who_holds_it_for_whom(item, alice, bob, carl):
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl)
    client = Client()
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert "data-delegation" in page
    assert "carl holds this item for bob" in page


def test_staff_set_someone_away_in_the_admin(staff, bob, carl):
    client = Client()
    client.force_login(staff)
    start = timezone.localtime()
    end = start + timedelta(days=1)
    response = client.post(
        "/admin/inbox/awaystatus/add/",
        {
            "user": bob.pk,
            "starts_at_0": start.strftime("%Y-%m-%d"),
            "starts_at_1": start.strftime("%H:%M:%S"),
            "ends_at_0": end.strftime("%Y-%m-%d"),
            "ends_at_1": end.strftime("%H:%M:%S"),
            "delegate": carl.pk,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert AwayStatus.objects.get(user=bob).delegate == carl
    assert AuditEvent.objects.get(verb="away.set").actor_label == "staff"
