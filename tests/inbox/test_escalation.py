"""Escalation rules: an item still open after N minutes (or M minutes before its deadline) gains a second team or
a named person as deciders, once, with the reason on the item, in the audit log and in the target's mailbox."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test import Client

from inbox.models import AuditEvent, Escalation, EscalationRule, InboxItem
from inbox.teams.escalations import escalation_sweep
from tests.factories import TeamFactory, UserFactory
from tests.inbox.conftest import NOW


@pytest.fixture
def finance(db):
    return TeamFactory(name="Finance leads")


@pytest.fixture
def dave(finance):
    """A member of Finance leads only: he does not see the ops agent's items until one is escalated to him."""
    return UserFactory(username="dave", teams=[finance])


def granter():
    """The staff member who set the rules below: each hands items to people who do not decide them otherwise, a
    grant of access only staff may make (a rule no staff set fires only on its scope's own deciders)."""
    return UserFactory(username="staff", is_staff=True, is_superuser=True)


@pytest.fixture
def rule(team, finance):
    return EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=granter())


def decide(client: Client, item: InboxItem, body: dict):
    return client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")


def test_an_item_open_thirty_minutes_is_escalated_then_and_not_a_moment_before(stored_run, clock, rule, dave):
    item = stored_run("t-1", "r-1", 120).items.get()
    clock.shift(timedelta(minutes=30) - timedelta(microseconds=1))
    assert escalation_sweep() == 0
    assert not Escalation.objects.exists()

    clock.shift(timedelta(microseconds=1))
    assert escalation_sweep() == 1

    escalation = Escalation.objects.get()
    assert (escalation.item_id, escalation.to_team_id, escalation.step) == (item.pk, rule.to_team_id, 1)
    assert escalation.fired_at == NOW + timedelta(minutes=30)
    assert escalation.sentence == "Escalated to Finance leads at 10:30 — no decision from ops in 30 min"


def test_the_added_team_can_see_and_decide_the_escalated_item(stored_run, clock, rule, dave):
    item = stored_run("t-1", "r-1", 120).items.get()
    client = Client()
    client.force_login(dave)
    assert client.get(item.get_absolute_url()).status_code == 404
    assert decide(client, item, {"status": "resolved", "payload": True}).status_code == 404

    clock.shift(timedelta(minutes=31))
    escalation_sweep()

    page = client.get(item.get_absolute_url())
    assert page.status_code == 200
    assert "Escalated to Finance leads</strong> at <time" in page.content.decode()
    assert "no decision from ops in 30 min" in page.content.decode()
    response = decide(client, item, {"status": "resolved", "payload": {"approved": True}})
    assert response.status_code == 201, response.content
    item.refresh_from_db()
    assert (item.status, item.decided_by, item.outcome) == ("resolved", dave, "approved")
    assert client.get(f"/api/v1/runs/{item.run_id}").status_code == 200


def test_a_second_sweep_fires_nothing_and_each_escalation_is_audited_once(stored_run, clock, rule, dave):
    items = [stored_run(f"t-{n}", f"r-{n}", 120).items.get() for n in range(3)]
    clock.shift(timedelta(minutes=45))

    assert escalation_sweep() == 3
    assert escalation_sweep() == 0

    events = AuditEvent.objects.filter(verb="item.escalated").order_by("object_id")
    assert [event.object_id for event in events] == sorted(str(item.pk) for item in items)
    assert events[0].data == {
        "to": "Finance leads",
        "why": "no decision from ops in 30 min",
        "step": 1,
        "rule": rule.pk,
    }
    assert {event.actor_label for event in events} == {"escalation"}
    assert Escalation.objects.count() == 3


def test_the_target_team_is_emailed_once_with_the_items(
    stored_run, clock, rule, dave, alice, django_capture_on_commit_callbacks
):
    item = stored_run("t-1", "r-1", 120).items.get()
    clock.shift(timedelta(minutes=31))
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        escalation_sweep()
        escalation_sweep()

    assert [message.to for message in mail.outbox] == [["dave@example.com"]]
    assert mail.outbox[0].subject == f"[Inbox] Escalated to Finance leads: {item.short_title}"
    assert item.get_absolute_url() in mail.outbox[0].body
    assert "no decision from ops in 30 min" in mail.outbox[0].body


def test_decided_items_and_other_teams_items_are_not_escalated(stored_run, clock, rule, make_agent, alice):
    decided = stored_run("t-1", "r-1", 120).items.get()
    InboxItem.objects.filter(pk=decided.pk).update(status="resolved", outcome="approved")
    other_team = TeamFactory(name="elsewhere")
    elsewhere = make_agent("elsewhere-agent")
    elsewhere.agent.teams.set([other_team])
    from tests.factories import interrupted_run

    interrupted_run(elsewhere.agent, "t-2", "r-2", 120, now=NOW)
    clock.shift(timedelta(hours=1))

    assert escalation_sweep() == 0


def test_an_item_routed_to_the_team_is_the_teams_to_escalate(stored_run, clock, finance, make_agent):
    billing = TeamFactory(name="Billing")
    EscalationRule.objects.create(team=billing, after_minutes=10, to_team=finance, created_by=granter())
    item = stored_run("t-1", "r-1", 120).items.get()  # the ops agent's item, routed to Billing by a policy
    InboxItem.objects.filter(pk=item.pk).update(routed_team=billing)
    clock.shift(timedelta(minutes=11))

    assert escalation_sweep() == 1
    assert Escalation.objects.get().why == "no decision from Billing in 10 min"


def test_a_deadline_rule_fires_minutes_before_the_deadline(stored_run, clock, agent, dave, finance):
    EscalationRule.objects.create(agent=agent.agent, before_deadline_minutes=15, to_user=dave, created_by=granter())
    item = stored_run("t-1", "r-1", 60).items.get()
    clock.shift(timedelta(minutes=44))
    assert escalation_sweep() == 0
    clock.shift(timedelta(minutes=1))

    assert escalation_sweep() == 1
    escalation = Escalation.objects.get()
    assert (escalation.item_id, escalation.to_user_id, escalation.target_label) == (item.pk, dave.pk, "dave")
    assert escalation.why == f"no decision from {agent.agent.name} 15 min before the deadline"


def test_an_escalation_to_a_person_who_is_away_goes_to_their_delegate(
    stored_run, clock, agent, dave, finance, django_capture_on_commit_callbacks
):
    """Dave is away and named Erin: the item is escalated to Erin, who can open it, and Erin is told why she got
    it; Dave, away, gets nothing."""
    from inbox.models import AwayStatus

    erin = UserFactory(username="erin", teams=[finance])
    AwayStatus.objects.create(user=dave, delegate=erin, starts_at=NOW, ends_at=NOW + timedelta(days=7))
    EscalationRule.objects.create(agent=agent.agent, before_deadline_minutes=15, to_user=dave, created_by=granter())
    item = stored_run("t-1", "r-1", 60).items.get()
    clock.shift(timedelta(minutes=45))
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        assert escalation_sweep() == 1

    escalation = Escalation.objects.get()
    assert (escalation.to_user_id, escalation.target_label) == (erin.pk, "erin (for dave, away)")
    assert AuditEvent.objects.get(verb="item.escalated").data["to"] == "erin (for dave, away)"
    assert [message.to for message in mail.outbox] == [["erin@example.com"]]
    assert "dave, who is away and named you their delegate" in mail.outbox[0].body
    client = Client()
    client.force_login(erin)
    assert client.get(item.get_absolute_url()).status_code == 200


def test_the_second_step_goes_up_the_chain_only_after_the_first(stored_run, clock, team, rule, dave):
    ceo = UserFactory(username="ceo")
    second = EscalationRule.objects.create(team=team, step=2, after_minutes=20, to_user=ceo, created_by=granter())
    item = stored_run("t-1", "r-1", 120).items.get()
    client = Client()
    client.force_login(ceo)
    clock.shift(timedelta(minutes=25))  # step 2's time has come, but step 1 has not fired
    assert escalation_sweep() == 0

    # An item older than both steps: step 1 fires, and step 2 waits its own 20 minutes from then.
    clock.shift(timedelta(minutes=35))
    assert escalation_sweep() == 1
    assert list(Escalation.objects.values_list("rule_id", flat=True)) == [rule.pk]
    assert client.get(item.get_absolute_url()).status_code == 404

    clock.shift(timedelta(minutes=20) - timedelta(microseconds=1))
    assert escalation_sweep() == 0
    clock.shift(timedelta(microseconds=1))
    assert escalation_sweep() == 1
    first, then = Escalation.objects.order_by("step")
    assert [first.rule_id, then.rule_id] == [rule.pk, second.pk]
    assert then.fired_at - first.fired_at == timedelta(minutes=20)
    assert client.get(item.get_absolute_url()).status_code == 200


def test_a_deleted_rule_leaves_the_items_it_escalated_with_their_deciders(stored_run, clock, rule, dave, staff):
    item = stored_run("t-1", "r-1", 120).items.get()
    clock.shift(timedelta(minutes=31))
    escalation_sweep()
    client = Client()
    client.force_login(staff)
    assert client.delete(f"/api/v1/escalation-rules/{rule.pk}").status_code == 204
    assert not EscalationRule.objects.exists()
    dave_client = Client()
    dave_client.force_login(dave)
    assert dave_client.get(item.get_absolute_url()).status_code == 200
    assert AuditEvent.objects.filter(verb="escalation_rule.deleted", object_id=str(rule.pk)).exists()


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_fire_each_escalation_once(agent):
    """Two beats at the same moment, on PostgreSQL: the unique (item, rule) constraint is the claim."""
    from django.utils import timezone

    from tests.factories import interrupted_run

    finance = TeamFactory(name="Finance leads")
    team = agent.agent.teams.get()
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=granter())
    arrived = timezone.now() - timedelta(hours=1)
    items = [interrupted_run(agent.agent, f"t-{n}", f"r-{n}", 180, now=arrived).items.get() for n in range(40)]
    barrier = threading.Barrier(2)
    fired: list[int] = []

    def sweep() -> None:
        try:
            barrier.wait(timeout=10)
            fired.append(escalation_sweep())
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(fired)[1] >= 1 and sum(fired) == len(items), fired
    assert Escalation.objects.count() == len(items)
    assert AuditEvent.objects.filter(verb="item.escalated").count() == len(items)


# --- the rules' API ---------------------------------------------------------------------------------


def post_rule(client: Client, body, **extra):
    return client.post("/api/v1/escalation-rules", data=json.dumps(body), content_type="application/json", **extra)


def test_a_team_member_sets_a_rule_for_the_team_and_it_is_audited(alice, bob, team, finance):
    client = Client()
    client.force_login(alice)
    response = post_rule(client, {"team": "ops", "afterMinutes": 30, "toUser": "bob"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["team"] == "ops" and body["toUser"] == "bob" and body["step"] == 1
    assert body["why"] == "no decision from ops in 30 min"
    assert body["grantsAccess"] is False and "changes nothing" in body["note"]
    event = AuditEvent.objects.get(verb="escalation_rule.created")
    assert (event.actor_label, event.data["to"]) == ("alice", "bob")
    assert [rule["id"] for rule in client.get("/api/v1/escalation-rules").json()] == [body["id"]]


@pytest.mark.parametrize(
    ("body", "field", "status"),
    [
        ({"afterMinutes": 30, "toTeam": "Finance leads"}, "team", 400),
        ({"team": "ops", "agent": "x", "afterMinutes": 30, "toTeam": "Finance leads"}, "agent", 400),
        ({"team": "nope", "afterMinutes": 30, "toTeam": "Finance leads"}, "team", 400),
        ({"team": "ops", "toTeam": "Finance leads"}, "afterMinutes", 400),
        ({"team": "ops", "afterMinutes": "30", "toTeam": "Finance leads"}, "afterMinutes", 400),
        ({"team": "ops", "afterMinutes": 0, "toTeam": "Finance leads"}, "afterMinutes", 400),
        (
            {"team": "ops", "afterMinutes": 30, "beforeDeadlineMinutes": 5, "toTeam": "Finance leads"},
            "beforeDeadlineMinutes",
            400,
        ),
        ({"team": "ops", "afterMinutes": 30}, "toTeam", 400),
        ({"team": "ops", "afterMinutes": 30, "toUser": "ghost"}, "toUser", 400),
        ({"team": "ops", "afterMinutes": 30, "toTeam": "Finance leads", "step": 3}, "step", 400),
        ({"team": "ops", "afterMinutes": 30, "toTeam": "Finance leads", "step": 2}, "step", 400),
        ({"team": "Finance leads", "afterMinutes": 30, "toTeam": "ops"}, "team", 403),
        ([1, 2], "body", 400),
    ],
)
def test_a_bad_rule_is_refused_naming_the_field(alice, team, finance, body, field, status):
    client = Client()
    client.force_login(alice)
    response = post_rule(client, body)
    assert response.status_code == status, response.content
    assert response.json()["field"] == field
    assert not EscalationRule.objects.exists()


def test_a_scope_keeps_one_rule_per_step(alice, team, finance):
    client = Client()
    client.force_login(alice)
    assert post_rule(client, {"team": "ops", "afterMinutes": 30, "toTeam": "ops"}).status_code == 201
    again = post_rule(client, {"team": "ops", "afterMinutes": 10, "toTeam": "ops"})
    assert again.status_code == 409
    assert again.json()["field"] == "step"


def test_an_agent_reads_its_own_rules_with_its_token_and_names_no_target(agent, finance, dave, staff):
    """An agent's token never chooses who decides its items (tests/security/test_escalation_targets.py): it reads
    the rules staff or its team set on it."""
    rule = EscalationRule.objects.create(agent=agent.agent, before_deadline_minutes=10, to_user=dave, created_by=staff)
    client = Client()
    assert [each["id"] for each in client.get("/api/v1/agent/escalation-rules", **agent.auth).json()] == [rule.pk]
    other = client.post(
        "/api/v1/agent/escalation-rules",
        data=json.dumps({"agent": "someone-else", "afterMinutes": 10, "toUser": "dave"}),
        content_type="application/json",
        **agent.auth,
    )
    assert other.status_code == 400 and other.json()["field"] == "agent"


def test_an_outsider_neither_sees_nor_deletes_a_teams_rule(rule, carol):
    client = Client()
    client.force_login(carol)
    assert client.get("/api/v1/escalation-rules").json() == []
    assert client.delete(f"/api/v1/escalation-rules/{rule.pk}").status_code == 404
    assert EscalationRule.objects.filter(pk=rule.pk).exists()


def test_stats_give_the_time_to_decision_with_and_without_escalation(stored_run, clock, rule, alice, dave):
    from inbox.audit.stats import build_report
    from inbox.decisions.services import decision_submit

    quick = stored_run("t-1", "r-1", 300).items.get()
    slow = stored_run("t-2", "r-2", 300).items.get()
    clock.shift(timedelta(minutes=10))
    decision_submit(item_id=quick.pk, user=alice, status="resolved", payload={"approved": True})
    clock.shift(timedelta(minutes=30))  # 40 minutes in: the slow one is escalated, and Finance decides it
    escalation_sweep()
    clock.shift(timedelta(minutes=50))
    decision_submit(item_id=slow.pk, user=dave, status="resolved", payload={"approved": True})

    report = build_report(user=alice, days=7)
    assert report.escalated_decided == 1
    assert (report.median_escalated_label, report.median_unescalated_label) == ("1.5 h", "10 min")
    client = Client()
    client.force_login(alice)
    page = client.get("/audit/stats/").content.decode()
    assert "escalated: 1.5 h · not escalated: 10 min" in page
