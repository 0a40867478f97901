"""A 201 means the answer will be sent: a decision closer to its run's first ``expiresAt`` than the sender needs
(``INBOX_DECISION_SEND_MARGIN_SECONDS``) is refused with a 409 before anything is stored (API, page and bulk,
which reports it per item), instead of being accepted and then expiring unsent."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from inbox.models import AuditEvent, Decision, InboxItem, Resume
from tests.conftest import spec_example


def interrupted(thread: str, *, seconds_left: float) -> dict:
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    body["threadId"], body["runId"] = thread, f"run-{thread}"
    body["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(seconds=seconds_left)).isoformat()
    return body


def item_of(thread: str) -> InboxItem:
    return InboxItem.objects.get(run__thread__thread_id=thread)


def approve(client: Client, item: InboxItem):
    return client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True}}),
        content_type="application/json",
    )


def test_a_decision_inside_the_send_margin_is_a_409_and_nothing_is_stored(client, agent, ingest, alice, settings):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 30
    assert ingest(agent, interrupted("close", seconds_left=20)).status_code == 201
    item = item_of("close")
    client.force_login(alice)

    response = approve(client, item)
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["error"] == "too_close_to_deadline"
    assert "too close to its deadline to reach the agent" in body["detail"]
    assert body["marginSeconds"] == 30
    item.refresh_from_db()
    assert item.status == "open"
    assert not Decision.objects.exists() and not Resume.objects.exists()
    assert not AuditEvent.objects.filter(verb__startswith="item.resolved").exists()


def test_a_decision_outside_the_margin_is_accepted_and_queued(client, agent, ingest, alice, settings):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 30
    assert ingest(agent, interrupted("far", seconds_left=90)).status_code == 201
    client.force_login(alice)
    assert approve(client, item_of("far")).status_code == 201
    assert Resume.objects.get().state == "pending"


def test_the_margin_is_never_less_than_what_the_sender_checks(client, agent, ingest, alice, settings):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 0
    settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS = 40
    assert ingest(agent, interrupted("sender", seconds_left=20)).status_code == 201
    client.force_login(alice)
    response = approve(client, item_of("sender"))
    assert response.status_code == 409 and response.json()["marginSeconds"] == 40


def test_bulk_reports_the_refusal_per_item_and_decides_the_rest(client, make_agent, ingest, alice, settings):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 30
    assert ingest(make_agent("near"), interrupted("near", seconds_left=20)).status_code == 201
    assert ingest(make_agent("later"), interrupted("later", seconds_left=600)).status_code == 201
    near, later = item_of("near"), item_of("later")
    client.force_login(alice)

    response = client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [near.pk, later.pk], "action": "approve"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [(r["id"], r["ok"], r.get("error")) for r in results] == [
        (near.pk, False, "too_close_to_deadline"),
        (later.pk, True, None),
    ]
    assert "too close to its deadline to reach the agent" in results[0]["detail"]
    assert InboxItem.objects.get(pk=near.pk).status == "open"
    assert InboxItem.objects.get(pk=later.pk).status == "resolved"


def test_the_page_says_why_and_keeps_the_item_open(client, agent, ingest, alice, settings):
    settings.INBOX_DECISION_SEND_MARGIN_SECONDS = 30
    assert ingest(agent, interrupted("page", seconds_left=20)).status_code == 201
    item = item_of("page")
    client.force_login(alice)
    response = client.post(f"{item.get_absolute_url()}decide/", {"action": "approve"})
    assert response.status_code == 409
    assert "too close to its deadline to reach the agent" in response.content.decode()
    item.refresh_from_db()
    assert item.status == "open"
