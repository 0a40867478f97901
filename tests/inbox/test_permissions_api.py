"""The team rule through the API: owner-team member, other-team member, staff and anonymous, for
GET /api/v1/items, /items/<id> and /runs/<id>. What a user may not see is a 404, never a 403."""

from __future__ import annotations

import copy

import pytest
from django.contrib.auth.models import Group

from inbox.models import ApiToken
from tests.conftest import spec_example


@pytest.fixture
def other_team_agent(make_agent):
    """An agent decided by team 'finance' only (make_agent puts agents in 'ops'; move it)."""
    made = make_agent("ledger")
    made.agent.teams.set([Group.objects.create(name="finance")])
    return made


@pytest.fixture
def two_runs(agent, other_team_agent, ingest):
    ops_run = ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval"))).json()
    finance_run = ingest(other_team_agent, copy.deepcopy(spec_example("parallel_interrupts"))).json()
    return ops_run, finance_run


def as_user(client, user):
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("alice", {"int-abc123"}),  # ops member: the ops agent's items only
        ("dave", {"i-1", "i-2", "i-3"}),  # finance member: the finance agent's items only
        ("carol", set()),  # in a team that decides nothing
        ("staff", {"int-abc123", "i-1", "i-2", "i-3"}),
    ],
)
def test_the_item_list_shows_only_the_items_of_the_users_teams(
    who, expected, two_runs, alice, dave, carol, staff, client
):
    user = {"alice": alice, "dave": dave, "carol": carol, "staff": staff}[who]
    response = as_user(client, user).get("/api/v1/items")
    assert response.status_code == 200
    assert {row["interruptId"] for row in response.json()["results"]} == expected


def test_filtering_by_another_teams_agent_does_not_leak_its_items(two_runs, alice, client):
    response = as_user(client, alice).get("/api/v1/items?agent=ledger")
    assert response.status_code == 200 and response.json()["count"] == 0
    response = client.get("/api/v1/items?thread=thread-3")
    assert response.json()["count"] == 0


@pytest.mark.parametrize(
    ("who", "ops_status", "finance_status"),
    [("alice", 200, 404), ("dave", 404, 200), ("carol", 404, 404), ("staff", 200, 200)],
)
def test_item_and_run_details_are_404_outside_the_users_teams(
    who, ops_status, finance_status, two_runs, alice, dave, carol, staff, client
):
    ops_run, finance_run = two_runs
    client = as_user(client, {"alice": alice, "dave": dave, "carol": carol, "staff": staff}[who])
    for run, expected in ((ops_run, ops_status), (finance_run, finance_status)):
        item_response = client.get(f"/api/v1/items/{run['items'][0]['id']}")
        run_response = client.get(f"/api/v1/runs/{run['id']}")
        assert (item_response.status_code, run_response.status_code) == (expected, expected)
        if expected == 404:
            body = item_response.json()
            # Nothing of the hidden item is echoed back.
            assert "interruptId" not in body and "message" not in body
        else:
            assert item_response.json()["interruptId"] == run["items"][0]["interruptId"]
            assert run_response.json()["runId"] == run["runId"]


def test_an_unknown_id_and_a_hidden_id_look_the_same(two_runs, alice, client):
    _, finance_run = two_runs
    client = as_user(client, alice)
    hidden = client.get(f"/api/v1/items/{finance_run['items'][0]['id']}")
    missing = client.get("/api/v1/items/999999")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


@pytest.mark.parametrize("path", ["/api/v1/items", "/api/v1/items/{item}", "/api/v1/runs/{run}"])
def test_anonymous_requests_are_refused_with_a_json_401_or_403(path, two_runs, client):
    ops_run, _ = two_runs
    response = client.get(path.format(item=ops_run["items"][0]["id"], run=ops_run["id"]))
    assert response.status_code in (401, 403)
    assert response["Content-Type"].startswith("application/json")
    assert "int-abc123" not in response.content.decode()


def test_an_agent_token_cannot_read_items_even_its_own(agent, two_runs, client):
    ops_run, _ = two_runs
    response = client.get(f"/api/v1/items/{ops_run['items'][0]['id']}", **agent.auth)
    assert response.status_code in (401, 403)


def test_a_drf_token_sees_exactly_what_the_session_sees(two_runs, dave, client):
    _, key = ApiToken.issue(dave)
    response = client.get("/api/v1/items", HTTP_AUTHORIZATION=f"Token {key}")
    assert {row["interruptId"] for row in response.json()["results"]} == {"i-1", "i-2", "i-3"}


def test_adding_a_user_to_the_agents_team_grants_access_and_removing_revokes_it(two_runs, carol, client):
    ops_run, _ = two_runs
    url = f"/api/v1/runs/{ops_run['id']}"
    client = as_user(client, carol)
    assert client.get(url).status_code == 404
    carol.groups.add(Group.objects.get(name="ops"))
    assert client.get(url).status_code == 200
    carol.groups.remove(Group.objects.get(name="ops"))
    assert client.get(url).status_code == 404


def test_an_agent_in_two_teams_is_visible_to_both(two_runs, other_team_agent, alice, dave, client):
    other_team_agent.agent.teams.add(Group.objects.get(name="ops"))
    assert as_user(client, alice).get("/api/v1/items?agent=ledger").json()["count"] == 3
    assert as_user(client, dave).get("/api/v1/items?agent=ledger").json()["count"] == 3
