"""Away, end to end: the delegate is told (a push to their pages and an e-mail) when items are handed to them; the
person away gets no one-click decision links for what their delegate now holds, and a link sent before says where
the item went; claiming while away says so too."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone

from inbox.decisions.links import link_path, make_token
from inbox.models import InboxItem, Notice
from inbox.teams import outbox
from inbox.teams.away import away_set, delegation_sweep
from inbox.teams.claims import item_claim
from inbox.teams.reminders import snoozes_wake
from inbox.teams.snooze import item_snooze
from inbox.teams.summaries import item_summary, with_decision_links
from tests.factories import UserFactory, interrupted_run
from tests.helpers.websockets import connected, run_scenario, session_cookie


@pytest.fixture
def carl(team):
    return UserFactory(username="carl", teams=[team])


@pytest.fixture
def item(agent) -> InboxItem:
    return interrupted_run(agent.agent, "t-1", "r-1", 240).items.get()


def away(user, delegate, *, starts_in=timedelta(0), lasts=timedelta(days=2)):
    start = timezone.now() + starts_in
    return away_set(user=user, starts_at=start, ends_at=start + lasts, delegate=delegate, set_by=user)


@pytest.mark.django_db(transaction=True)
def test_the_delegate_hears_live_and_by_email_when_items_are_handed_over(agent, item, bob, carl, mailoutbox):
    item_claim(item_id=item.pk, user=bob)
    cookie = session_cookie(carl)

    async def scenario() -> None:
        socket = await connected(cookie)
        status = await sync_to_async(away)(bob, carl)
        message = await socket.receive_json_from(timeout=5)
        while message["event"] != "items.delegated":
            message = await socket.receive_json_from(timeout=5)
        until = timezone.localtime(status.ends_at)
        assert message["payload"] == {
            "items": [item.pk],
            "count": 1,
            "from": "bob",
            "message": f"“{item.short_title}” is yours while bob is away (until {until:%Y-%m-%d %H:%M}).",
        }
        await socket.disconnect()

    run_scenario(scenario)
    outbox.send_due(Notice.Channel.EMAIL)
    [mail] = [message for message in mailoutbox if message.to == ["carl@example.com"]]
    assert mail.subject == f"[Inbox] “{item.short_title}” handed to you: bob is away"
    assert "bob is away until" in mail.body and "named you their delegate" in mail.body
    assert f"/inbox/items/{item.pk}/" in mail.body
    assert "Approve: " in mail.body  # bound to carl, who holds it now


def test_the_sweep_tells_the_delegate_of_every_item_it_hands_over(
    agent, bob, carl, mailoutbox, django_capture_on_commit_callbacks
):
    items = [interrupted_run(agent.agent, f"t-{n}", f"r-{n}", 240).items.get() for n in range(3)]
    for each in items:
        item_claim(item_id=each.pk, user=bob)
    away(bob, carl, starts_in=timedelta(hours=1))
    assert mailoutbox == []

    with django_capture_on_commit_callbacks(execute=True):
        assert delegation_sweep(now=timezone.now() + timedelta(hours=2)) == 3

    [mail] = mailoutbox
    assert (mail.to, mail.subject) == (["carl@example.com"], "[Inbox] 3 items handed to you: bob is away")
    assert "these 3 items they held are yours now" in mail.body
    assert Notice.objects.get().kind == Notice.Kind.DELEGATION


def test_a_delegate_who_turned_mail_off_is_told_only_on_their_pages(item, bob, carl):
    from inbox.teams.preferences import preferences_set_email_mode

    preferences_set_email_mode(user=carl, mode="off")
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl)
    assert not Notice.objects.exists()


def test_the_away_person_gets_no_decision_links_for_what_the_delegate_holds(
    item, bob, carl, mailoutbox, django_capture_on_commit_callbacks
):
    item_snooze(item_id=item.pk, user=bob, choice="1h")
    item_claim(item_id=item.pk, user=bob)
    assert "decisionUrls" in with_decision_links(item_summary(item), item, user=bob)
    away(bob, carl)
    item.refresh_from_db()
    assert item.claimed_by == carl
    assert "decisionUrls" not in with_decision_links(item_summary(item), item, user=bob)
    assert "decisionUrls" in with_decision_links(item_summary(item), item, user=carl)

    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert snoozes_wake(now=timezone.now() + timedelta(hours=2)) == 1
    [back] = [message for message in mailoutbox if message.to == ["bob@example.com"]]
    assert f"/inbox/items/{item.pk}/" in back.body
    assert "Approve:" not in back.body and "/inbox/decide/" not in back.body


def test_a_link_sent_before_the_hand_over_says_where_the_item_went(item, bob, carl):
    token = make_token(item=item, action="approve", user=bob)
    item_claim(item_id=item.pk, user=bob)
    away(bob, carl)
    client = Client()
    client.force_login(bob)

    for response in (client.get(link_path(token)), client.post(link_path(token))):
        assert response.status_code == 403
        page = response.content.decode()
        assert "Someone else holds this item" in page
        assert "carl, your delegate, holds this item and decides it" in page
    item.refresh_from_db()
    assert item.status == InboxItem.Status.OPEN


def test_claiming_while_away_says_where_the_item_went(item, bob, carl):
    away(bob, carl)
    client = Client()
    client.force_login(bob)

    response = client.post(f"/api/v1/items/{item.pk}/claim")
    assert response.status_code == 200
    body = response.json()
    assert (body["claimedBy"], body["delegatedTo"]) == ("carl", "carl")
    assert body["delegationMessage"] == "You are away: carl, your delegate, holds this item."
    assert body["message"] == item.message  # the item's own message is not overwritten by the notice
    assert Notice.objects.get(user=carl).kind == Notice.Kind.DELEGATION  # carl is told

    again = client.post(f"/api/v1/items/{item.pk}/claim")
    assert again.status_code == 409
    assert again.json()["detail"].startswith("You are away: carl, your delegate, holds this item until ")

    page = client.post(f"/inbox/items/{item.pk}/claim/", follow=True).content.decode()
    assert "You are away: carl, your delegate, holds this item until" in page


def test_an_item_assigned_to_someone_away_tells_their_delegate(item, alice, bob, carl):
    away(bob, carl)
    client = Client()
    client.force_login(alice)
    response = client.post(
        f"/api/v1/items/{item.pk}/assign", data=json.dumps({"assignee": "bob"}), content_type="application/json"
    )
    assert response.json()["claimedBy"] == "carl"
    notice = Notice.objects.get(user=carl)
    assert notice.subject == f"[Inbox] “{item.short_title}” handed to you: bob is away"


def test_the_delegates_open_pages_show_the_hand_over_as_a_toast(item, bob, carl):
    from inbox.web.fragments import LiveView, render

    payload = {"items": [item.pk], "count": 1, "from": "bob", "message": "“Go?” is yours while bob is away."}
    for view in (LiveView(kind="page"), LiveView(kind="list")):
        html = render(view, carl, [("items.delegated", payload)]).html
        assert f'<a href="/inbox/items/{item.pk}/">bob is away: “Go?” is yours while bob is away.</a>' in html
    several = {**payload, "items": [item.pk, item.pk + 1], "count": 2}
    assert '<a href="/inbox/">bob is away:' in render(LiveView(kind="page"), carl, [("items.delegated", several)]).html
