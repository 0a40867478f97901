"""Deciding from the notification: signed, single-use Approve / Deny links bound to the recipient (email) or
the team (webhook), a confirmation page (a GET never decides), and every rule of the decision service."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
import time_machine

from inbox.decisions.links import make_token
from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, InboxItem, NotificationPreference, Run
from inbox.models.links import DecisionLinkUse
from inbox.teams.claims import item_claim
from inbox.teams.notifications import announce_runs
from inbox.teams.tasks import send_digests
from inbox.teams.webhooks import webhook_body
from tests.policies.runs import post_tool_run

LINK = re.compile(r"https://inbox\.example\.com(/inbox/decide/[^/\s\"]+/)")


@pytest.fixture
def site(settings):
    settings.SITE_URL = "https://inbox.example.com"


@pytest.fixture
def email_item(ingest, agent) -> InboxItem:
    return post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "a@b.c"})).items.get()


def links_in(text: str) -> list[str]:
    return LINK.findall(text)


def alices_links(mailoutbox) -> dict[str, str]:
    message = next(m for m in mailoutbox if m.to == ["alice@example.com"])
    approve, deny = links_in(message.body)
    assert links_in(message.alternatives[0][0]) == [approve, deny]
    return {"approve": approve, "deny": deny}


def test_new_item_emails_carry_approve_and_deny_links_for_yes_no_items_only(site, ingest, agent, alice, mailoutbox):
    yes_no = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {}))
    form = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "why": {"type": "string"}},
        "required": ["approved", "why"],
    }
    needs_input = post_tool_run(ingest, agent, "t2", "r2", ("sendEmail", {}), responseSchema=form)
    announce_runs([yes_no.pk])
    announce_runs([needs_input.pk])
    first, second = [m for m in mailoutbox if m.to == ["alice@example.com"]]
    assert len(links_in(first.body)) == 2 and "Approve:" in first.body
    assert links_in(second.body) == []


def test_a_get_never_decides_and_the_confirmation_post_does(site, client, email_item, alice, mailoutbox):
    announce_runs([email_item.run_id])
    links = alices_links(mailoutbox)
    anonymous = client.get(links["approve"])
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    client.force_login(alice)
    page = client.get(links["approve"])
    assert page.status_code == 200 and b"Confirm: Approve" in page.content
    client.get(links["approve"])  # scanners, previews, a second look: still nothing decided
    email_item.refresh_from_db()
    assert email_item.status == "open" and not DecisionLinkUse.objects.exists()
    done = client.post(links["approve"])
    assert done.status_code == 302 and done["Location"] == email_item.get_absolute_url()
    email_item.refresh_from_db()
    assert email_item.status == "resolved" and email_item.response_payload == {"approved": True}
    assert email_item.decided_by == alice
    assert AuditEvent.objects.filter(verb="item.link_used", actor_label="alice").exists()


def test_a_used_link_cannot_be_reused(site, client, make_agent, ingest, alice, mailoutbox):
    quorum = make_agent("quorum", approvals_required=2)
    item = post_tool_run(ingest, quorum, "t1", "r1", ("sendEmail", {})).items.get()
    announce_runs([item.run_id])
    links = alices_links(mailoutbox)
    client.force_login(alice)
    assert client.post(links["approve"]).status_code == 302  # 1 of 2: the item stays open
    again = client.post(links["approve"])
    assert again.status_code == 409 and b"already used" in again.content
    assert client.get(links["approve"]).status_code == 409
    assert item.decisions.count() == 1


def test_a_link_forwarded_to_another_user_does_nothing(site, client, email_item, alice, bob, mailoutbox):
    announce_runs([email_item.run_id])
    links = alices_links(mailoutbox)
    client.force_login(bob)
    for response in (client.get(links["approve"]), client.post(links["approve"])):
        assert response.status_code == 403 and b"sent to someone else" in response.content
    email_item.refresh_from_db()
    assert email_item.status == "open" and not DecisionLinkUse.objects.exists()
    # ... and it still works for alice.
    client.force_login(alice)
    assert client.post(links["deny"]).status_code == 302
    email_item.refresh_from_db()
    assert email_item.response_payload == {"approved": False}


def test_a_link_for_a_decided_item_says_so(site, client, email_item, alice, bob, mailoutbox):
    announce_runs([email_item.run_id])
    links = alices_links(mailoutbox)
    decision_submit(item_id=email_item.pk, user=bob, status="resolved", payload={"approved": False})
    client.force_login(alice)
    for response in (client.get(links["approve"]), client.post(links["approve"])):
        assert response.status_code == 409 and b"already resolved by bob" in response.content
    email_item.refresh_from_db()
    assert email_item.response_payload == {"approved": False}


def test_a_link_for_an_expired_item_says_so(site, client, email_item, alice, mailoutbox):
    announce_runs([email_item.run_id])
    links = alices_links(mailoutbox)
    client.force_login(alice)
    with time_machine.travel(email_item.expires_at + timedelta(seconds=1)):
        for response in (client.get(links["approve"]), client.post(links["approve"])):
            assert response.status_code == 409 and b"expired" in response.content
    email_item.refresh_from_db()
    assert email_item.status == "open"  # the sweep closes it; the link decided nothing


def test_a_link_keeps_every_rule_of_the_decision_service(site, client, ingest, agent, alice, bob, mailoutbox):
    mine = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {}), metadata={"requestedBy": "alice"}).items.get()
    claimed = post_tool_run(ingest, agent, "t2", "r2", ("sendEmail", {})).items.get()
    item_claim(item_id=claimed.pk, user=bob)
    client.force_login(alice)
    self_approval = client.post(f"/inbox/decide/{make_token(item=mine, action='approve', user=alice)}/")
    assert self_approval.status_code == 403 and b"someone else must approve" in self_approval.content
    held = client.post(f"/inbox/decide/{make_token(item=claimed, action='approve', user=alice)}/")
    assert held.status_code == 403 and b"bob holds this item" in held.content
    assert InboxItem.objects.filter(status="open").count() == 2


def test_a_tampered_link_is_refused(site, client, email_item, alice):
    token = make_token(item=email_item, action="approve", user=alice)
    client.force_login(alice)
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert client.get(f"/inbox/decide/{forged}/").status_code == 400
    assert client.post(f"/inbox/decide/{forged}/").status_code == 400


def test_the_digest_carries_links_too(site, ingest, agent, alice, mailoutbox):
    NotificationPreference.objects.create(user=alice, email_mode="digest")
    post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {}))
    send_digests()
    assert len(links_in(mailoutbox[-1].body)) == 2


def test_the_team_webhook_carries_decision_urls_any_team_member_can_use_once(
    site, client, ingest, agent, team, alice, carol
):
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {}))
    item = run.items.get()
    body = json.loads(webhook_body(agent=agent.agent, team_name=team.name, items=[item], team_id=team.pk))
    urls = body["items"][0]["decisionUrls"]
    approve = LINK.match(urls["approve"]).group(1)
    client.force_login(carol)
    assert client.post(approve).status_code == 403
    client.force_login(alice)
    assert client.post(approve).status_code == 302
    assert client.post(approve).status_code == 409
    item.refresh_from_db()
    assert item.status == "resolved" and item.decided_by == alice
    assert Run.objects.get(pk=run.pk).resume.state in ("pending", "sending", "failed", "delivered")


def test_a_link_stops_working_after_its_maximum_lifetime_whatever_the_items_expiry(client, email_item, alice, settings):
    """An agent may set expiresAt years ahead; a link still dies INBOX_DECISION_LINK_MAX_AGE_DAYS after it was made."""
    from datetime import UTC, datetime

    settings.INBOX_DECISION_LINK_MAX_AGE_DAYS = 7
    InboxItem.objects.filter(pk=email_item.pk).update(expires_at=datetime(8999, 12, 31, tzinfo=UTC))
    email_item.refresh_from_db()
    client.force_login(alice)
    made = email_item.created_at
    with time_machine.travel(made, tick=False):
        path = f"/inbox/decide/{make_token(item=email_item, action='approve', user=alice)}/"
    with time_machine.travel(made + timedelta(days=6, hours=23)):
        assert client.get(path).status_code == 200
    with time_machine.travel(made + timedelta(days=7, minutes=1)):
        refused = client.post(path)
        assert refused.status_code == 410 and b"more than 7 days old" in refused.content
    email_item.refresh_from_db()
    assert email_item.is_open and not DecisionLinkUse.objects.exists()
