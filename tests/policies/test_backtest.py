"""Backtesting a policy over the items people decided: exact counts and listed items over a seeded history, a
draft against the saved version, the period's bounds, the page and the API, and the evidence a promotion records."""

from __future__ import annotations

import json

import pytest

from inbox import limits
from inbox.models import AuditEvent
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest
from inbox.policies.backtest import backtest_run, backtest_start
from inbox.policies.services import policy_create
from tests.factories import AgentFactory
from tests.policies.history import INTERNAL, seed_history


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


def listed(backtest: PolicyBacktest, kind: str) -> set[str]:
    return {f.item.tool_call_id.removeprefix("tc-") for f in backtest.findings.filter(kind=kind).select_related("item")}


def test_a_backtest_counts_what_the_saved_version_would_have_done_to_what_people_decided(staff, policy, history):
    backtest = backtest_start(user=staff, policy=policy)
    assert backtest.state == "done" and not backtest.draft and backtest.policy_version == 1 and backtest.days == 30
    # ann bob cy dee eve hal jo kay: fay is older than 30 days, gus open, ian decided by a policy, oto another agent's.
    assert backtest.decided == 8
    assert backtest.total == backtest.scanned == 6  # the sendEmail ones: the database leaves hal and kay out
    assert backtest.matched == 5  # ann bob cy dee jo: eve wrote to @evil.com
    assert backtest.outcomes == {"approved": 2, "denied": 1, "approved_with_edits": 1, "cancelled": 1}
    assert (backtest.compared, backtest.agreed, backtest.disagreed) == (5, 2, 3)
    assert listed(backtest, BacktestFinding.Kind.DISAGREED) == {"bob", "cy", "dee"}
    # jo was approved, then the agent's next step on its run (kay) was denied by a person.
    assert backtest.found_wrong == 1 and listed(backtest, BacktestFinding.Kind.FOUND_WRONG) == {"jo"}


def test_a_longer_period_reaches_older_items(staff, policy, history):
    backtest = backtest_start(user=staff, policy=policy, days=60)
    assert backtest.matched == 6 and backtest.agreed == 3  # fay, approved 41 days ago
    assert backtest.decided == 9


def test_a_draft_is_tested_without_being_saved_and_the_saved_version_is_not(staff, policy, history):
    draft = backtest_start(
        user=staff,
        policy=policy,
        draft_fields={"match_schema": {"properties": {"to": {"pattern": "@evil\\.com$"}}}, "action": "deny"},
    )
    assert draft.draft and draft.rules["action"] == "deny"
    assert draft.rules["matchSchema"] == {"properties": {"to": {"pattern": "@evil\\.com$"}}}
    assert (draft.matched, draft.compared, draft.agreed, draft.found_wrong) == (1, 1, 1, 0)  # eve, denied
    assert draft.outcomes == {"denied": 1}
    policy.refresh_from_db()
    assert policy.version == 1 and policy.action == "approve" and policy.match_schema == INTERNAL
    saved = backtest_start(user=staff, policy=policy)
    assert (saved.matched, saved.agreed) == (5, 2)


def test_a_route_policy_matches_but_compares_with_nothing(staff, policy, history, team):
    backtest = backtest_start(
        user=staff, policy=policy, draft_fields={"action": "route", "route_team": team, "match_schema": None}
    )
    assert backtest.matched == 6 and backtest.compared == 0 and backtest.agreement is None
    assert not backtest.findings.exists()


@pytest.mark.parametrize("days", [0, -1, 366, "ten", 2.5, True])
def test_a_bad_period_is_a_400_naming_days_and_stores_nothing(as_staff, policy, days):
    response = as_staff.post(
        f"/api/v1/policies/{policy.pk}/backtests", data=json.dumps({"days": days}), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "days"
    assert not PolicyBacktest.objects.exists()


def test_a_bad_period_on_the_page_says_so_next_to_the_form(as_staff, policy):
    response = as_staff.post(f"/policies/{policy.pk}/backtests/", {"days": "400"})
    assert response.status_code == 400
    assert "must be a whole number of days from 1 to 365" in response.content.decode()
    assert not PolicyBacktest.objects.exists()


def test_a_bad_draft_is_a_400_naming_its_field(as_staff, policy):
    body = {"draft": {"matchSchema": {"type": "strng"}}}
    response = as_staff.post(
        f"/api/v1/policies/{policy.pk}/backtests", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["field"] == "draft.matchSchema.type"
    assert not PolicyBacktest.objects.exists()


def test_the_api_runs_a_draft_and_lists_disagreements_a_page_at_a_time(as_staff, policy, history, monkeypatch):
    body = {"days": 30, "draft": {"matchSchema": None}}
    response = as_staff.post(
        f"/api/v1/policies/{policy.pk}/backtests", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["state"] == "done" and created["draft"] is True and created["rules"]["matchSchema"] is None
    assert (created["matched"], created["compared"], created["agreed"], created["disagreed"]) == (6, 6, 2, 4)
    assert created["foundWrong"] == 1 and created["percent"] == 100
    monkeypatch.setattr("inbox.api.policies.FINDINGS_PER_PAGE", 3)
    first = as_staff.get(created["url"]).json()
    assert first["findings"]["kind"] == "disagreed"
    assert (first["findings"]["count"], first["findings"]["pages"], first["findings"]["page"]) == (4, 2, 1)
    second = as_staff.get(created["url"] + "?page=2").json()["findings"]
    names = {entry["message"].split(" for ")[1].rstrip("?") for entry in first["findings"]["items"] + second["items"]}
    assert names == {"bob", "cy", "dee", "eve"}
    assert {entry["outcome"] for entry in second["items"] + first["findings"]["items"]} == {
        "denied",
        "approved_with_edits",
        "cancelled",
    }
    wrong = as_staff.get(created["url"] + "?kind=found_wrong").json()["findings"]
    assert [entry["url"].endswith(f"/inbox/items/{history['jo'].pk}/") for entry in wrong["items"]] == [True]
    assert as_staff.get(created["url"] + "?kind=nope").json()["field"] == "kind"
    assert as_staff.get(created["url"] + "?page=9").json()["field"] == "page"


def test_the_policy_api_shows_the_latest_backtest_of_its_version(as_staff, staff, policy, history):
    assert as_staff.get(f"/api/v1/policies/{policy.pk}").json()["backtest"] is None
    backtest_start(user=staff, policy=policy, draft_fields={"match_schema": None})  # a draft is not the version's
    saved = backtest_start(user=staff, policy=policy)
    body = as_staff.get(f"/api/v1/policies/{policy.pk}").json()
    assert body["backtest"]["id"] == saved.pk and body["backtest"]["matched"] == 5


def test_promoting_records_the_versions_latest_backtest_as_evidence(as_staff, staff, policy, history):
    backtest = backtest_start(user=staff, policy=policy)
    response = as_staff.patch(
        f"/api/v1/policies/{policy.pk}", data=json.dumps({"mode": "enforce"}), content_type="application/json"
    )
    assert response.status_code == 200
    event = AuditEvent.objects.get(verb="policy.promoted")
    evidence = event.data["backtest"]
    assert evidence["id"] == backtest.pk and evidence["version"] == 1
    assert (evidence["matched"], evidence["agreed"], evidence["disagreed"], evidence["foundWrong"]) == (5, 2, 3, 1)
    assert evidence["url"] == f"/policies/{policy.pk}/backtests/{backtest.pk}/"


def test_promoting_an_untested_version_records_no_evidence(as_staff, staff, policy, history):
    backtest_start(user=staff, policy=policy)
    as_staff.post(f"/policies/{policy.pk}/edit/", {**_form(policy), "description": "changed"})
    policy.refresh_from_db()
    assert policy.version == 2
    as_staff.post(f"/policies/{policy.pk}/promote/")
    assert AuditEvent.objects.get(verb="policy.promoted").data["backtest"] is None


def _form(policy: Policy) -> dict:
    return {
        "name": policy.name,
        "description": policy.description,
        "agent": policy.agent.slug,
        "position": policy.position,
        "enabled": "on",
        "reason": policy.reason,
        "tool_name": policy.tool_name,
        "subject": policy.subject,
        "match_schema": json.dumps(policy.match_schema),
        "action": policy.action,
        "mode": policy.mode,
    }


def test_the_page_runs_the_saved_version_and_shows_the_result_with_links(as_staff, policy, history):
    response = as_staff.post(f"/policies/{policy.pk}/backtests/", {"days": "30"})
    backtest = PolicyBacktest.objects.get()
    assert response.status_code == 302 and response.url == backtest.get_absolute_url()
    page = as_staff.get(response.url).content.decode()
    assert 'data-backtest-state="done"' in page and "http-equiv" not in page
    assert 'data-stat="matched">5<' in page and "40% (2 of 5)" in page
    for name in ("bob", "cy", "dee", "jo"):
        assert f'href="{history[name].get_absolute_url()}"' in page
    assert f'href="{history["ann"].get_absolute_url()}"' not in page
    detail = as_staff.get(policy.get_absolute_url()).content.decode()
    assert f'Promoting records <a href="{backtest.get_absolute_url()}">backtest {backtest.pk}</a>' in detail


def test_the_edit_form_shows_the_policys_agent_selected(as_staff, policy):
    page = as_staff.get(f"/policies/{policy.pk}/edit/").content.decode()
    assert '<option value="mailer" selected>' in page


def test_the_edit_form_backtests_its_unsaved_values(as_staff, policy, history):
    values = {**_form(policy), "match_schema": "", "days": "60", "draft": "1"}
    response = as_staff.post(f"/policies/{policy.pk}/backtests/", values)
    backtest = PolicyBacktest.objects.get()
    assert response.status_code == 302 and backtest.draft and backtest.days == 60
    assert backtest.matched == 7  # fay too; eve now as well
    policy.refresh_from_db()
    assert policy.match_schema == INTERNAL and policy.version == 1
    bad = as_staff.post(f"/policies/{policy.pk}/backtests/", {**values, "match_schema": '{"type": "strng"}'})
    assert bad.status_code == 400 and 'data-field-error="match_schema"' in bad.content.decode()


def test_a_long_period_is_queued_and_its_page_shows_progress_until_a_worker_reads_it(
    as_staff, staff, policy, history, monkeypatch
):
    monkeypatch.setattr(limits, "BACKTEST_INLINE_ITEMS", 3)
    backtest = backtest_start(user=staff, policy=policy)
    assert backtest.state == "pending"
    page = as_staff.get(backtest.get_absolute_url()).content.decode()
    assert 'data-backtest-state="pending"' in page and 'http-equiv="refresh"' in page and "<progress" in page
    monkeypatch.setattr(limits, "BACKTEST_CHUNK", 2)  # several chunks, each writing its findings
    assert backtest_run(backtest.pk) == "done"
    assert backtest_run(backtest.pk) == "gone"  # claimed once
    backtest.refresh_from_db()
    assert (backtest.scanned, backtest.matched, backtest.agreed, backtest.found_wrong) == (6, 5, 2, 1)
    assert backtest.findings.count() == 4
    page = as_staff.get(backtest.get_absolute_url()).content.decode()
    assert 'data-backtest-state="done"' in page and "http-equiv" not in page


def test_backtests_are_staff_only(client, alice, policy):
    client.force_login(alice)
    assert client.post(f"/api/v1/policies/{policy.pk}/backtests", {}).status_code == 403
    assert client.post(f"/policies/{policy.pk}/backtests/", {}).status_code == 404


def test_a_backtest_that_cannot_be_queued_says_so_on_its_page(
    as_staff, staff, policy, history, monkeypatch, django_capture_on_commit_callbacks
):
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(limits, "BACKTEST_INLINE_ITEMS", 1)
    monkeypatch.setattr("celery.current_app.send_task", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        backtest = backtest_start(user=staff, policy=policy)
    backtest.refresh_from_db()
    assert backtest.state == "failed"
    page = as_staff.get(backtest.get_absolute_url()).content.decode()
    assert "its queue is unreachable" in page and "http-equiv" not in page
