"""Escalation that gives each step its time, in frozen time: step 2 counts from step 1's firing; a team's business
hours stop the clock at closing and start it again at opening, and nothing escalates or reminds while it is
closed; escalations reach the team's webhooks; a rule naming someone who already decides says it is a nudge."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta

import pytest

from inbox.models import AuditEvent, BusinessHours, Escalation, EscalationRule, InboxItem, Notice, TeamWebhook
from inbox.teams.escalations import escalation_sweep
from inbox.teams.hours import clock_start
from inbox.teams.reminders import reminders_send
from tests.factories import TeamFactory, UserFactory, interrupted_run

# Berlin is UTC+1 in December: the team works Monday to Friday, 09:00 to 17:00 Berlin, 08:00 to 16:00 UTC.
TUESDAY = datetime(2026, 12, 1, tzinfo=UTC)


def at(day_offset: int, hour: int, minute: int = 0) -> datetime:
    """A moment in UTC, ``day_offset`` days after Tuesday 1 December 2026."""
    return TUESDAY + timedelta(days=day_offset, hours=hour, minutes=minute)


@pytest.fixture
def finance(db):
    return TeamFactory(name="Finance leads")


@pytest.fixture
def staff_granter(db):
    return UserFactory(username="granter", is_staff=True, is_superuser=True)


@pytest.fixture
def office_hours(team):
    return BusinessHours.objects.create(
        team=team, days="12345", opens=time(9, 0), closes=time(17, 0), time_zone="Europe/Berlin"
    )


def arrive(agent, clock, when: datetime, name: str = "1", minutes: float = 7 * 24 * 60) -> InboxItem:
    clock.move_to(when)
    return interrupted_run(agent.agent, f"t-{name}", f"r-{name}", minutes, now=when).items.get()


def sweep_at(clock, when: datetime) -> int:
    clock.move_to(when)
    return escalation_sweep()


def test_step_two_fires_its_minutes_after_step_one_not_after_arrival(agent, clock, team, finance, staff_granter):
    ceo = UserFactory(username="ceo")
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=staff_granter)
    EscalationRule.objects.create(team=team, step=2, after_minutes=60, to_user=ceo, created_by=staff_granter)
    arrive(agent, clock, at(0, 10))

    # Swept first three hours after arrival (a stopped beat): older than both steps, yet only step 1 fires.
    assert sweep_at(clock, at(0, 13)) == 1
    assert sweep_at(clock, at(0, 13, 59)) == 0
    assert sweep_at(clock, at(0, 14)) == 1
    first, second = Escalation.objects.order_by("step")
    assert (first.fired_at, second.fired_at) == (at(0, 13), at(0, 14))


def test_outside_business_hours_nothing_fires_and_the_clock_resumes_at_opening(
    agent, clock, team, finance, staff_granter, office_hours
):
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=staff_granter)
    arrive(agent, clock, at(0, 15, 45))  # Tuesday 16:45 in Berlin: 15 working minutes left today

    assert sweep_at(clock, at(0, 16, 30)) == 0  # 45 minutes later, but the office closed at 17:00 Berlin
    assert sweep_at(clock, at(0, 23)) == 0
    assert sweep_at(clock, at(1, 8)) == 0  # Wednesday 09:00 Berlin: it opens with 15 minutes counted
    assert sweep_at(clock, at(1, 8, 14)) == 0
    assert sweep_at(clock, at(1, 8, 15)) == 1
    assert Escalation.objects.get().fired_at == at(1, 8, 15)


def test_an_item_overdue_at_the_weekend_escalates_when_the_team_opens_on_monday(
    agent, clock, team, finance, staff_granter, office_hours
):
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=staff_granter)
    arrive(agent, clock, at(3, 15, 50))  # Friday 16:50 Berlin: ten working minutes before the weekend

    for saturday_hour in (8, 12, 15):
        assert sweep_at(clock, at(4, saturday_hour)) == 0
    assert sweep_at(clock, at(6, 8, 19)) == 0  # Monday 09:19 Berlin: 29 working minutes
    assert sweep_at(clock, at(6, 8, 20)) == 1


def test_step_two_counts_working_minutes_from_step_one(agent, clock, team, finance, staff_granter, office_hours):
    ceo = UserFactory(username="ceo")
    EscalationRule.objects.create(team=team, after_minutes=10, to_team=finance, created_by=staff_granter)
    EscalationRule.objects.create(team=team, step=2, after_minutes=20, to_user=ceo, created_by=staff_granter)
    arrive(agent, clock, at(0, 15, 40))
    assert sweep_at(clock, at(0, 15, 50)) == 1  # step 1 at 16:50 Berlin, ten minutes before closing
    assert sweep_at(clock, at(0, 20)) == 0
    assert sweep_at(clock, at(1, 8, 9)) == 0
    assert sweep_at(clock, at(1, 8, 10)) == 1  # ten minutes on Tuesday, ten on Wednesday
    assert Escalation.objects.get(step=2).fired_at == at(1, 8, 10)


def test_the_clock_counts_only_working_minutes(office_hours):
    # Monday 09:05 Berlin, 60 working minutes back: 5 on Monday, 55 from Friday's 16:05 Berlin.
    assert clock_start(office_hours, now=at(6, 8, 5), minutes=60) == at(3, 15, 5)
    assert clock_start(None, now=at(6, 8, 5), minutes=60) == at(6, 7, 5)
    office_hours.days = ""
    assert clock_start(office_hours, now=at(6, 8, 5), minutes=60) is None


def test_no_reminder_while_the_team_is_closed_and_one_at_opening(
    agent, clock, alice, office_hours, settings, mailoutbox, django_capture_on_commit_callbacks
):
    settings.INBOX_REMINDER_LEAD_SECONDS = 3 * 3600
    item = arrive(agent, clock, at(0, 20), minutes=13 * 60)  # Tuesday 21:00 Berlin, expires Wednesday 10:00
    clock.move_to(at(1, 6))  # within the three hours' lead, but 07:00 in Berlin
    with django_capture_on_commit_callbacks(execute=True):
        assert reminders_send() == 0
    assert mailoutbox == []
    clock.move_to(at(1, 8))
    with django_capture_on_commit_callbacks(execute=True):
        assert reminders_send() == 1
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]
    item.refresh_from_db()
    assert item.reminder_sent_at == at(1, 8)


def test_an_escalation_reaches_the_target_teams_webhook_through_the_outbox(agent, clock, team, finance, staff_granter):
    hook = TeamWebhook.objects.create(team=finance, url="https://chat.example/finance", secret="s" * 32)
    TeamWebhook.objects.create(team=team, url="https://chat.example/ops", secret="s" * 32)
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=staff_granter)
    item = arrive(agent, clock, at(0, 10))
    assert sweep_at(clock, at(0, 10, 30)) == 1

    notice = Notice.objects.get(channel=Notice.Channel.WEBHOOK)
    assert (notice.webhook_id, notice.kind, notice.event) == (hook.pk, Notice.Kind.ESCALATION, "items.escalated")
    body = json.loads(notice.body)
    assert (body["to"], body["why"], body["step"], body["count"]) == (
        "Finance leads",
        "no decision from ops in 30 min",
        1,
        1,
    )
    assert body["items"][0]["id"] == item.pk
    assert set(body["items"][0]["decisionUrls"]) == {"approve", "deny"}
    assert body["text"].startswith("1 item(s) of ops escalated to Finance leads")
    assert body["alreadyDecides"] is False


def test_a_rule_naming_someone_who_already_decides_says_so_when_it_fires(
    agent, clock, team, alice, bob, mailoutbox, django_capture_on_commit_callbacks
):
    TeamWebhook.objects.create(team=team, url="https://chat.example/ops", secret="s" * 32)
    EscalationRule.objects.create(team=team, after_minutes=30, to_user=bob, created_by=alice)
    arrive(agent, clock, at(0, 10))
    clock.move_to(at(0, 10, 30))
    with django_capture_on_commit_callbacks(execute=True):
        assert escalation_sweep() == 1

    [message] = [message for message in mailoutbox if message.to == ["bob@example.com"]]
    assert "you already decide them, so this is a nudge; nothing changed in who may decide" in message.body
    assert AuditEvent.objects.get(verb="item.escalated").data["alreadyDecides"] is True
    # A person's escalation is heard in the webhook of the team whose items they are.
    body = json.loads(Notice.objects.get(channel=Notice.Channel.WEBHOOK).body)
    assert (body["team"], body["to"], body["alreadyDecides"]) == ("ops", "bob", True)
    assert "bob already decides these items: a nudge" in body["text"]


def test_a_lead_sets_the_teams_business_hours_on_the_rules_page_and_a_member_cannot(team, alice, bob):
    from django.test import Client

    from inbox.models import TeamLead

    TeamLead.objects.create(team=team, user=alice)
    body = {
        "form": "hours",
        "team": team.pk,
        "days": ["1", "2", "3", "4", "5"],
        "opens": "08:30",
        "closes": "16:30",
        "time_zone": "Europe/Berlin",
    }
    lead = Client()
    lead.force_login(alice)
    assert lead.post("/inbox/settings/escalation/", {**body, "time_zone": "Mars/Olympus"}).status_code == 400
    response = lead.post("/inbox/settings/escalation/", body, follow=True)
    page = response.content.decode()
    assert "Business hours of ops: Mon–Fri 08:30–16:30 Europe/Berlin." in page
    assert page.count('id="business-hours"') == 1  # once, in the page's body: not in its <title> or <head>
    assert "<title>Escalation rules" in page and "Business hours" not in page.split("</head>", 1)[0]
    hours = BusinessHours.objects.get(team=team)
    assert (hours.days, hours.opens, hours.time_zone) == ("12345", time(8, 30), "Europe/Berlin")
    assert AuditEvent.objects.get(verb="team.hours_set").actor_label == "alice"

    member = Client()
    member.force_login(bob)
    shown = member.get("/inbox/settings/escalation/").content.decode()
    assert "data-no-hours" in shown and 'name="opens"' not in shown  # told why, offered no form
    assert "set by staff or by the team&#x27;s lead; you lead no team" in shown
    refused = member.post("/inbox/settings/escalation/", {**body, "opens": "07:00"})
    assert refused.status_code == 400
    assert BusinessHours.objects.get(team=team).opens == time(8, 30)


def test_the_rules_page_says_which_rule_only_nudges_someone_who_decides_already(
    team, alice, bob, finance, staff_granter
):
    from django.test import Client

    EscalationRule.objects.create(team=team, after_minutes=30, to_user=bob, created_by=alice)
    EscalationRule.objects.create(team=team, step=2, after_minutes=30, to_team=finance, created_by=staff_granter)
    client = Client()
    client.force_login(alice)
    page = client.get("/inbox/settings/escalation/").content.decode()
    assert "bob already decides ops&#x27;s items: the rule tells them, and changes nothing" in page
    assert "Finance leads may decide ops&#x27;s items once the rule fires: a grant of access." in page


def test_staff_without_a_team_are_told_why_no_hours_can_be_set(db):
    from django.test import Client

    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    page = client.get("/inbox/settings/escalation/").content.decode()
    assert "data-no-hours" in page and 'name="opens"' not in page
    assert "there is no team yet: create one in the admin first" in page


def test_business_hours_are_read_set_and_cleared_through_the_api_as_on_the_page(team, alice, bob, carol, staff):
    """The Escalation rules page's business-hours card in the API: a lead reads and sets their team's hours, the
    page shows what the API set, a member and a lead of another team are refused, and clearing is audited."""
    from django.test import Client

    from inbox.models import TeamLead

    TeamLead.objects.create(team=team, user=alice)
    lead = Client()
    lead.force_login(alice)
    assert lead.get("/api/v1/business-hours").json() == []

    body = {"days": "54321", "opens": "08:30", "closes": "16:30", "timeZone": "Europe/Berlin"}
    saved = lead.put("/api/v1/business-hours/ops", body, content_type="application/json")
    assert saved.status_code == 200, saved.content
    expected = {
        "team": "ops",
        "days": "12345",
        "opens": "08:30",
        "closes": "16:30",
        "timeZone": "Europe/Berlin",
        "words": "Mon–Fri 08:30–16:30 Europe/Berlin",
    }
    assert saved.json() == expected
    assert lead.get("/api/v1/business-hours").json() == [expected]
    assert (
        "<strong>ops</strong>: Mon–Fri 08:30–16:30 Europe/Berlin"
        in lead.get("/inbox/settings/escalation/").content.decode()
    )
    assert AuditEvent.objects.get(verb="team.hours_set").data["opens"] == "08:30"

    wrong = lead.put(
        "/api/v1/business-hours/ops", {**body, "timeZone": "Mars/Olympus"}, content_type="application/json"
    )
    assert wrong.status_code == 400 and wrong.json()["field"] == "timeZone"
    late = lead.put("/api/v1/business-hours/ops", {**body, "closes": "08:00"}, content_type="application/json")
    assert late.status_code == 400 and late.json()["field"] == "closes"
    assert lead.put("/api/v1/business-hours/nobody", body, content_type="application/json").status_code == 404

    for person in (bob, carol):  # bob is a member of ops who leads nothing; carol leads another team
        other = Client()
        other.force_login(person)
        if person is carol:
            TeamLead.objects.create(team=carol.groups.get(), user=carol)
        assert other.get("/api/v1/business-hours").json() == []
        refused = other.put("/api/v1/business-hours/ops", {**body, "opens": "07:00"}, content_type="application/json")
        assert refused.status_code == 403 and refused.json()["field"] == "team"
        assert other.delete("/api/v1/business-hours/ops").status_code == 403
    assert BusinessHours.objects.get(team=team).opens == time(8, 30)

    admin = Client()
    admin.force_login(staff)
    assert [row["team"] for row in admin.get("/api/v1/business-hours").json()] == ["ops"]
    assert lead.delete("/api/v1/business-hours/ops").status_code == 204
    assert not BusinessHours.objects.filter(team=team).exists()
    assert AuditEvent.objects.get(verb="team.hours_cleared").actor_label == "alice"
    assert lead.get("/api/v1/business-hours").json() == []


def test_a_deadline_step_two_waits_a_sweep_after_step_one_and_fires_at_opening(
    agent, clock, team, finance, staff_granter, office_hours
):
    """Step 2 timed before the deadline: an item already inside its window when step 1 fires gets step 2 at a
    later sweep, never both at once; the team closed, it waits for opening (the deadline does not move)."""
    ceo = UserFactory(username="ceo")
    EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=staff_granter)
    EscalationRule.objects.create(
        team=team, step=2, before_deadline_minutes=24 * 60, to_user=ceo, created_by=staff_granter
    )
    arrive(agent, clock, at(0, 15, 20), minutes=20 * 60)  # Tuesday 16:20 Berlin, expires Wednesday 12:20 Berlin

    # 16:50 Berlin: step 1's 30 minutes are up and the item is inside step 2's window already: step 1 alone.
    assert sweep_at(clock, at(0, 15, 50)) == 1
    assert list(Escalation.objects.values_list("step", flat=True)) == [1]
    assert sweep_at(clock, at(0, 16)) == 0  # 17:00 Berlin: closed
    assert sweep_at(clock, at(1, 7, 59)) == 0
    assert sweep_at(clock, at(1, 8)) == 1  # Wednesday 09:00 Berlin, it opens: step 2
    assert Escalation.objects.get(step=2).fired_at == at(1, 8)
