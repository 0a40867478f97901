"""A policy's page in the API (issue 49, point 1): its backtests listed, its recent matches beside what people
decided, the stats page's rows, and the backtest it was promoted on, which stays linked after the version moves
on."""

from __future__ import annotations

import pytest

from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent
from inbox.models.policies import Policy
from inbox.policies.backtest import backtest_start
from inbox.policies.services import policy_create
from tests.factories import AgentFactory
from tests.policies.history import INTERNAL, seed_history
from tests.policies.runs import post_tool_run


@pytest.fixture
def policy(staff, agent) -> Policy:
    return policy_create(
        user=staff,
        fields={
            "name": "Internal email",
            "agent": agent.agent,
            "reason": "tool_call",
            "tool_name": "sendEmail",
            "match_schema": INTERNAL,
            "action": "approve",
        },
    )


@pytest.fixture
def history(agent, alice, staff, policy) -> dict:
    machine = policy_create(user=staff, fields={"name": "Machine", "agent": agent.agent, "action": "approve"})
    return seed_history(agent.agent, AgentFactory(slug="other"), alice, machine.service_user)


@pytest.fixture
def as_staff(client, staff):
    client.force_login(staff)
    return client


def test_a_policys_backtests_are_listed_newest_first(as_staff, staff, policy, history):
    first = backtest_start(user=staff, policy=policy, days=7)
    second = backtest_start(user=staff, policy=policy, draft_fields={"action": "deny"})
    response = as_staff.get(f"/api/v1/policies/{policy.pk}/backtests")
    assert response.status_code == 200  # was 405: only POST
    body = response.json()
    assert (body["count"], body["page"], body["pages"]) == (2, 1, 1)
    assert [(row["id"], row["draft"], row["days"]) for row in body["results"]] == [
        (second.pk, True, 30),
        (first.pk, False, 7),
    ]
    assert body["results"][1]["matched"] == first.matched and body["results"][1]["url"].endswith(
        f"/api/v1/policies/{policy.pk}/backtests/{first.pk}"
    )
    page = as_staff.get(policy.get_absolute_url()).content.decode()
    assert f"Backtest {first.pk}" in page and f"Backtest {second.pk}" in page
    assert as_staff.get(f"/api/v1/policies/{policy.pk}/backtests?page=3").json()["errors"][0]["path"] == "page"
    assert as_staff.get("/api/v1/policies/999999/backtests").status_code == 404


def test_a_policys_recent_matches_say_what_people_decided_and_whether_they_agreed(
    as_staff, ingest, agent, alice, staff
):
    watcher = policy_create(
        user=staff,
        fields={"name": "Deny all mail", "agent": agent.agent, "tool_name": "sendEmail", "action": "deny"},
    )
    approved = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "a@ourco.com"})).items.get()
    denied = post_tool_run(ingest, agent, "t2", "r2", ("sendEmail", {"to": "b@ourco.com"})).items.get()
    still_open = post_tool_run(ingest, agent, "t3", "r3", ("sendEmail", {"to": "c@ourco.com"})).items.get()
    decision_submit(item_id=approved.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=denied.pk, user=alice, status="resolved", payload={"approved": False})

    body = as_staff.get(f"/api/v1/policies/{watcher.pk}/matches").json()
    assert body["count"] == 3
    assert [
        (row["item"]["id"], row["outcome"], row["effect"], row["peopleDecided"], row["agrees"])
        for row in body["results"]
    ] == [
        (still_open.pk, "shadow", "Would have denied", None, None),
        (denied.pk, "shadow", "Would have denied", "denied", True),
        (approved.pk, "shadow", "Would have denied", "approved", False),
    ]
    assert body["results"][1]["item"]["decidedBy"] == "alice"
    page = as_staff.get(watcher.get_absolute_url()).content.decode()
    assert page.count(">agrees<") == 1 and page.count(">disagrees<") == 1


def test_the_stats_api_gives_the_stats_pages_rows(as_staff, ingest, agent, alice, staff):
    watcher = policy_create(
        user=staff,
        fields={"name": "Deny all mail", "agent": agent.agent, "tool_name": "sendEmail", "action": "deny"},
    )
    quiet = policy_create(user=staff, fields={"name": "Quiet", "agent": agent.agent, "action": "deny", "position": 1})
    item = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "a@ourco.com"})).items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": False})

    rows = as_staff.get("/api/v1/policies/stats").json()
    assert [(row["policy"], row["name"], row["mode"]) for row in rows] == [
        (quiet.pk, "Quiet", "shadow"),
        (watcher.pk, "Deny all mail", "shadow"),
    ]
    row = rows[1]
    assert (row["matches"], row["compared"], row["agreed"], row["agreement"]) == (1, 1, 1, 1.0)
    assert row["timeSavedSeconds"] >= 0 and row["url"].endswith(f"/api/v1/policies/{watcher.pk}")
    page = as_staff.get("/policies/stats/").content.decode()
    assert f'data-policy="{watcher.pk}"' in page and "100%" in page


def test_the_backtest_a_policy_was_promoted_on_stays_linked_after_its_version_moves_on(
    as_staff, staff, policy, history
):
    backtest = backtest_start(user=staff, policy=policy)
    assert as_staff.get(f"/api/v1/policies/{policy.pk}").json()["evidence"] is None

    promoted = as_staff.patch(f"/api/v1/policies/{policy.pk}", {"mode": "enforce"}, content_type="application/json")
    body = promoted.json()
    assert body["version"] == 2 and body["backtest"] is None  # no backtest of version 2
    assert body["evidence"]["id"] == backtest.pk and body["evidence"]["version"] == 1
    assert body["evidence"]["matched"] == 5 and body["evidence"]["agreed"] == 2

    as_staff.patch(f"/api/v1/policies/{policy.pk}", {"description": "Our own domain"}, content_type="application/json")
    later = as_staff.get(f"/api/v1/policies/{policy.pk}").json()
    assert later["version"] == 3 and later["evidence"]["id"] == backtest.pk
    audited = AuditEvent.objects.get(verb="policy.promoted")
    assert audited.data["backtest"]["id"] == later["evidence"]["id"]
    page = as_staff.get(policy.get_absolute_url()).content.decode()
    assert f'Promoted on <a href="{backtest.get_absolute_url()}">backtest {backtest.pk}</a> of version 1' in page


def test_a_policy_promoted_untested_says_so(as_staff, staff, policy):
    as_staff.patch(f"/api/v1/policies/{policy.pk}", {"mode": "enforce"}, content_type="application/json")
    assert as_staff.get(f"/api/v1/policies/{policy.pk}").json()["evidence"] is None
    assert "Promoted without a backtest" in as_staff.get(policy.get_absolute_url()).content.decode()


def test_the_new_operations_are_staff_only(client, alice, policy):
    client.force_login(alice)
    for path in (
        f"/api/v1/policies/{policy.pk}/backtests",
        f"/api/v1/policies/{policy.pk}/matches",
        "/api/v1/policies/stats",
        "/api/v1/policies/backtests",
    ):
        assert client.get(path).status_code == 403, path
