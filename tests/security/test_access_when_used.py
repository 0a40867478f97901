"""Access is checked when it is used, and the API checks what the page checks.

- A decision link e-mailed to alice showed the item (agent, reason, message, expiry) to her after she left the
  team (its POST was already 404, its GET 200).
- ``PUT /api/v1/away`` took a delegate from another team or from no team (the page offers teammates only): the
  person's held items were silently released and every later assignment to them refused.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox.decisions.links import link_path, make_token
from inbox.models import AwayStatus, InboxItem
from tests.factories import InboxItemFactory, RunFactory, UserFactory


@pytest.fixture
def item(agent) -> InboxItem:
    return InboxItemFactory(run=RunFactory(agent=agent.agent), message="Refund 900 EUR to order 77?")


def test_a_decision_link_opened_after_leaving_the_team_is_404_and_shows_nothing(item, alice, team):
    path = link_path(make_token(item=item, action="approve", user=alice))
    client = Client()
    client.force_login(alice)
    assert client.get(path).status_code == 200  # while she is in the team

    alice.groups.remove(team)
    response = client.get(path)

    assert response.status_code == 404
    page = response.content.decode()
    assert "Refund 900 EUR" not in page and item.agent.name not in page
    assert client.post(path).status_code == 404
    item.refresh_from_db()
    assert item.status == InboxItem.Status.OPEN


def away_body(delegate: str) -> str:
    now = timezone.now()
    return json.dumps({"from": now.isoformat(), "until": (now + timedelta(days=3)).isoformat(), "delegate": delegate})


@pytest.mark.parametrize("delegate", ["carol", "loner"])
def test_the_api_refuses_a_delegate_the_page_would_not_offer(alice, bob, carol, item, delegate):
    UserFactory(username="loner")  # in no team
    InboxItem.objects.filter(pk=item.pk).update(claimed_by=alice, claimed_at=timezone.now())
    client = Client()
    client.force_login(alice)

    response = client.put("/api/v1/away", data=away_body(delegate), content_type="application/json")

    assert response.status_code == 400, response.content
    assert response.json()["field"] == "delegate"
    assert response.json()["error"] == "invalid_away"
    assert not AwayStatus.objects.exists()
    item.refresh_from_db()
    assert item.claimed_by == alice  # nothing released
    # A teammate, the page's only choice, is taken.
    response = client.put("/api/v1/away", data=away_body("bob"), content_type="application/json")
    assert response.status_code == 200, response.content
    assert AwayStatus.objects.get(user=alice).delegate == bob
