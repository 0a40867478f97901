"""The requester never chooses its own approver: an escalation rule hands items only to people who already
decide them, unless staff set it (then it is audited as a grant of access); an agent's token names no one.
Each attack below made someone of another team, or of none, a decider of the agent's items."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox import access
from inbox.models import AuditEvent, Escalation, EscalationRule
from inbox.teams.escalations import escalation_sweep
from tests.factories import TeamFactory, UserFactory, interrupted_run


def post_rule(client: Client, path: str, body: dict, **extra):
    return client.post(path, data=json.dumps(body), content_type="application/json", **extra)


@pytest.fixture
def due_items(agent):
    """Three open items of the agent's (team ops), arrived two hours ago: every rule of one minute is due."""
    arrived = timezone.now() - timedelta(hours=2)
    return [interrupted_run(agent.agent, f"t-{n}", f"r-{n}", 600, now=arrived).items.get() for n in range(3)]


def items_of(user) -> int:
    return access.visible_items(user).count()


@pytest.mark.parametrize(("body", "field"), [({"toUser": "carol"}, "toUser"), ({"toTeam": "elsewhere"}, "toTeam")])
def test_an_agents_token_names_no_person_or_team(agent, carol, due_items, body, field):
    response = post_rule(Client(), "/api/v1/agent/escalation-rules", {"afterMinutes": 1, **body}, **agent.auth)

    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not EscalationRule.objects.exists()
    escalation_sweep()
    assert items_of(carol) == 0


def test_an_agents_token_is_refused_before_it_learns_whether_a_name_exists(agent, due_items):
    response = post_rule(
        Client(), "/api/v1/agent/escalation-rules", {"afterMinutes": 1, "toUser": "nobody-by-this-name"}, **agent.auth
    )
    assert response.status_code == 400
    assert response.json()["field"] == "toUser" and "no such" not in response.json()["detail"]


def test_a_member_cannot_make_someone_in_no_team_a_decider(alice, due_items):
    dave = UserFactory(username="dave")  # in no team
    client = Client()
    client.force_login(alice)

    response = post_rule(client, "/api/v1/escalation-rules", {"team": "ops", "afterMinutes": 1, "toUser": "dave"})

    assert response.status_code == 403, response.content
    assert response.json()["field"] == "toUser"
    assert not EscalationRule.objects.exists()
    escalation_sweep()
    assert items_of(dave) == 0


def test_a_member_cannot_hand_the_agents_items_to_another_team(alice, carol, agent, due_items):
    client = Client()
    client.force_login(alice)
    response = post_rule(
        client, "/api/v1/escalation-rules", {"agent": agent.agent.slug, "afterMinutes": 1, "toTeam": "elsewhere"}
    )
    assert response.status_code == 403 and response.json()["field"] == "toTeam"
    assert not EscalationRule.objects.exists()


def test_the_page_refuses_the_same_rule_beside_the_person_field(alice, team, due_items):
    UserFactory(username="dave")
    client = Client()
    client.force_login(alice)
    response = client.post(
        "/inbox/settings/escalation/",
        {"scope": f"team:{team.pk}", "step": "1", "trigger": "after", "minutes": "1", "to_user": "dave"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "<code>to_user</code>" in page and "only staff may set a rule that gives them access" in page
    assert not EscalationRule.objects.exists()


def test_staff_may_widen_access_and_it_is_audited_as_a_grant(staff, carol, due_items):
    client = Client()
    client.force_login(staff)
    response = post_rule(client, "/api/v1/escalation-rules", {"team": "ops", "afterMinutes": 1, "toUser": "carol"})

    assert response.status_code == 201, response.content
    assert response.json()["grantsAccess"] is True
    grant = AuditEvent.objects.get(verb="escalation_rule.access_granted")
    assert (grant.actor_user, grant.data["to"], grant.data["scope"]) == (staff, "carol", "ops")
    escalation_sweep()
    assert items_of(carol) == 3


def test_a_rule_naming_someone_who_already_decides_says_it_changes_nothing(alice, bob, due_items):
    client = Client()
    client.force_login(alice)
    response = post_rule(client, "/api/v1/escalation-rules", {"team": "ops", "afterMinutes": 1, "toUser": "bob"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["grantsAccess"] is False
    assert (
        body["note"] == "bob already decides ops's items: the rule tells them, and changes nothing in who may decide."
    )
    assert not AuditEvent.objects.filter(verb="escalation_rule.access_granted").exists()


def test_a_rule_no_staff_set_does_not_fire_for_someone_who_does_not_decide(agent, carol, alice, due_items):
    """A rule stored before the check (by an agent's token, or by a member), or whose person has since left the
    team: access is checked again when it fires."""
    EscalationRule.objects.create(agent=agent.agent, after_minutes=1, to_user=carol)
    EscalationRule.objects.create(team=TeamFactory(name="ops"), after_minutes=1, to_user=carol, created_by=alice)

    assert escalation_sweep() == 0
    assert not Escalation.objects.exists()
    assert items_of(carol) == 0
