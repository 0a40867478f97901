"""Team leads without staff rights: a lead writes the shadow policies of the teams they lead and of those teams'
agents, backtests them, and sets their escalation rules; promoting a policy to enforce needs staff, or a second
lead with a finished backtest of the version, and the audit log records who promoted it on what evidence. The
lead role widens no one's access to items."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from inbox.models import AuditEvent, InboxItem, TeamLead
from inbox.models.policies import Policy
from tests.factories import UserFactory, interrupted_run
from tests.policies.history import INTERNAL, decided_item


def post(client: Client, path: str, body: dict, method: str = "post"):
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json")


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def stranger(make_agent, carol):
    """An agent of carol's team only."""
    agent = make_agent("stranger").agent
    agent.teams.set([carol.groups.get()])
    return agent


@pytest.fixture
def lena(team):
    """Leads ops, the mailer agent's team."""
    person = UserFactory(username="lena", teams=[team])
    TeamLead.objects.create(team=team, user=person)
    return person


@pytest.fixture
def leo(team):
    """A second lead of ops."""
    person = UserFactory(username="leo", teams=[team])
    TeamLead.objects.create(team=team, user=person)
    return person


@pytest.fixture
def shadow(lena, agent):
    created = post(
        as_user(lena),
        "/api/v1/policies",
        {
            "name": "Internal email",
            "agent": "mailer",
            "toolName": "sendEmail",
            "matchSchema": INTERNAL,
            "action": "approve",
        },
    )
    assert created.status_code == 201, created.content
    return created.json()


def test_a_lead_creates_a_shadow_policy_for_the_teams_agent_and_backtests_it(lena, agent, alice, shadow):
    assert (shadow["mode"], shadow["agent"]) == ("shadow", "mailer")
    decided_item(agent.agent, "bob", by=alice)
    started = post(as_user(lena), f"/api/v1/policies/{shadow['id']}/backtests", {"days": 30})
    assert started.status_code == 201, started.content
    assert (started.json()["state"], started.json()["matched"]) == ("done", 1)
    page = as_user(lena).get(f"/policies/{shadow['id']}/")
    assert page.status_code == 200 and "Internal email" in page.content.decode()


def test_an_approver_who_leads_nothing_still_has_no_policy_pages(alice, shadow):
    client = as_user(alice)
    assert client.get("/policies/").status_code == 404
    assert client.get("/api/v1/policies").status_code == 403
    assert post(client, f"/api/v1/policies/{shadow['id']}/backtests", {}).status_code == 403
    assert "Policies</a>" not in client.get("/inbox/").content.decode()
    assert "Policies</a>" in as_user(alice.__class__.objects.get(username="lena")).get("/inbox/").content.decode()


@pytest.mark.parametrize(
    ("body", "field", "status"),
    [
        ({"mode": "enforce"}, "mode", 403),
        ({"agent": "stranger"}, "agent", 403),
        ({"agent": None, "team": "elsewhere"}, "team", 403),
        ({"action": "route", "routeTeam": "elsewhere"}, "routeTeam", 403),
    ],
)
def test_a_lead_is_refused_what_reaches_past_their_team(lena, agent, make_agent, carol, body, field, status):
    stranger(make_agent, carol)
    fields = {"name": "Mine", "agent": "mailer", "action": "approve", **body}
    response = post(as_user(lena), "/api/v1/policies", {k: v for k, v in fields.items() if v is not None})
    assert response.status_code == status, response.content
    assert response.json()["field"] == field
    assert not Policy.objects.exists()


def test_a_lead_routes_only_to_their_own_team(lena, team, agent):
    response = post(
        as_user(lena), "/api/v1/policies", {"name": "To ops", "agent": "mailer", "action": "route", "routeTeam": "ops"}
    )
    assert response.status_code == 201, response.content


def test_the_lead_who_wrote_a_version_cannot_promote_it(lena, shadow):
    refused = post(as_user(lena), f"/api/v1/policies/{shadow['id']}", {"mode": "enforce"}, method="patch")
    assert refused.status_code == 403
    assert refused.json()["field"] == "mode" and "you wrote this version" in refused.json()["detail"]
    page = as_user(lena).post(f"/policies/{shadow['id']}/promote/")
    assert page.status_code == 403 and "a second lead of the team, or staff, promotes it" in page.content.decode()
    assert Policy.objects.get().mode == "shadow"


def test_a_second_lead_promotes_on_a_backtest_and_the_audit_keeps_the_evidence(lena, leo, agent, alice, shadow):
    second = as_user(leo)
    untested = post(second, f"/api/v1/policies/{shadow['id']}", {"mode": "enforce"}, method="patch")
    assert untested.status_code == 409 and "backtest version 1 first" in untested.json()["detail"]

    decided_item(agent.agent, "bob", by=alice)
    backtest = post(as_user(lena), f"/api/v1/policies/{shadow['id']}/backtests", {}).json()
    promoted = second.post(f"/policies/{shadow['id']}/promote/")
    assert promoted.status_code == 302

    policy = Policy.objects.get()
    assert (policy.mode, policy.version) == ("enforce", 2)
    event = AuditEvent.objects.get(verb="policy.promoted")
    assert (event.actor_label, event.data["promotedBy"], event.data["versionBy"]) == ("leo", "second lead", "lena")
    assert (event.data["backtest"]["id"], event.data["backtest"]["matched"]) == (backtest["id"], 1)


def test_staff_promote_a_leads_policy_without_a_backtest(staff, shadow):
    promoted = post(as_user(staff), f"/api/v1/policies/{shadow['id']}", {"mode": "enforce"}, method="patch")
    assert promoted.status_code == 200
    event = AuditEvent.objects.get(verb="policy.promoted")
    assert (event.data["promotedBy"], event.data["versionBy"], event.data["backtest"]) == ("staff", "lena", None)


def test_a_lead_may_take_an_enforced_policy_out_of_force_but_not_change_it(lena, staff, shadow):
    post(as_user(staff), f"/api/v1/policies/{shadow['id']}", {"mode": "enforce"}, method="patch")
    client = as_user(lena)
    for change in ({"toolName": "sendSms"}, {"matchSchema": None}, {"mode": "shadow", "matchSchema": None}):
        changed = post(client, f"/api/v1/policies/{shadow['id']}", change, method="patch")
        assert changed.status_code == 403 and changed.json()["field"] == "mode", change
    assert Policy.objects.get().match_schema == INTERNAL
    back = post(client, f"/api/v1/policies/{shadow['id']}", {"mode": "shadow"}, method="patch")
    assert back.status_code == 200 and back.json()["mode"] == "shadow"


def test_a_lead_sees_only_the_policies_of_the_teams_they_lead(lena, staff, make_agent, carol, shadow):
    stranger(make_agent, carol)
    other = post(as_user(staff), "/api/v1/policies", {"name": "Theirs", "agent": "stranger", "action": "deny"}).json()
    client = as_user(lena)
    assert [entry["name"] for entry in client.get("/api/v1/policies").json()] == ["Internal email"]
    assert client.get(f"/api/v1/policies/{other['id']}").status_code == 404
    assert post(client, f"/api/v1/policies/{other['id']}/backtests", {}).status_code == 404
    assert client.get(f"/policies/{other['id']}/").status_code == 404
    listing = client.get("/policies/").content.decode()
    assert "Internal email" in listing and "Theirs" not in listing


def test_a_leads_stats_matches_and_backtest_lists_are_their_teams_and_the_ordered_set_is_staffs(
    lena, staff, make_agent, carol, shadow
):
    stranger(make_agent, carol)
    other = post(as_user(staff), "/api/v1/policies", {"name": "Theirs", "agent": "stranger", "action": "deny"}).json()
    client = as_user(lena)
    assert [row["name"] for row in client.get("/api/v1/policies/stats").json()] == ["Internal email"]
    assert [row["name"] for row in as_user(staff).get("/api/v1/policies/stats").json()] == ["Internal email", "Theirs"]
    for path in ("matches", "backtests"):
        assert client.get(f"/api/v1/policies/{shadow['id']}/{path}").status_code == 200, path
        assert client.get(f"/api/v1/policies/{other['id']}/{path}").status_code == 404, path
    stats_page = client.get("/policies/stats/").content.decode()
    assert "Internal email" in stats_page and "Theirs" not in stats_page

    # The enforced policies in order are every team's: staff's alone, and the lead's pages do not offer it.
    assert client.get("/api/v1/policies/backtests").status_code == 403
    assert post(client, "/api/v1/policies/backtests", {"policy": shadow["id"]}).status_code == 403
    assert client.post("/policies/backtests/", {"days": "30", "policy": shadow["id"]}).status_code == 404
    for page in ("/policies/", f"/policies/{shadow['id']}/"):
        assert "data-set-backtest-form" not in client.get(page).content.decode(), page
        assert "data-set-backtest-form" in as_user(staff).get(page).content.decode(), page


def test_leading_a_team_one_has_left_counts_for_nothing(lena, team, shadow):
    lena.groups.remove(team)
    assert as_user(lena).get("/api/v1/policies").status_code == 403
    assert as_user(lena).get(f"/policies/{shadow['id']}/").status_code == 404


def test_the_lead_role_widens_no_ones_access_to_items(lena, agent, make_agent, carol, team):
    theirs = interrupted_run(stranger(make_agent, carol), "t-x", "r-x", 60).items.get()
    client = as_user(lena)
    assert client.get(theirs.get_absolute_url()).status_code == 404
    # An escalation rule that would hand ops's items to carol, of another team: staff's alone, as for any member.
    refused = post(client, "/api/v1/escalation-rules", {"team": "ops", "afterMinutes": 30, "toUser": "carol"})
    assert refused.status_code == 403 and refused.json()["field"] == "toUser"
    # A rule that names a teammate who decides the items already is hers to set, and says it changes nothing.
    mine = post(client, "/api/v1/escalation-rules", {"team": "ops", "afterMinutes": 30, "toUser": "lena"})
    assert mine.status_code == 201 and mine.json()["grantsAccess"] is False
    assert "already decides" in mine.json()["note"]
    assert InboxItem.objects.filter(pk=theirs.pk, status="open").exists()
