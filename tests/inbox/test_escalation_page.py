"""Escalation rules have a page (Notifications → Escalation rules): a team member lists, adds and deletes their
teams' and agents' rules there as the API does, each change audited; bad input is a 400 with the field's own
words beside the form and stores nothing; another team's rule is not theirs to see or delete."""

from __future__ import annotations

import pytest

from inbox.models import AuditEvent, EscalationRule
from tests.factories import TeamFactory, UserFactory

PAGE = "/inbox/settings/escalation/"


@pytest.fixture
def finance(db):
    return TeamFactory(name="Finance leads")


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def test_with_no_rules_the_page_says_what_a_rule_does(as_alice, team):
    page = as_alice.get(PAGE).content.decode()
    assert "No escalation rules yet" in page
    assert f'<option value="team:{team.pk}">ops</option>' in page


def test_a_member_adds_a_rule_for_their_team_and_sees_it_listed(as_alice, alice, team, finance):
    response = as_alice.post(
        PAGE, {"scope": f"team:{team.pk}", "step": "1", "trigger": "after", "minutes": "30", "to_team": team.pk}
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    rule = EscalationRule.objects.get()
    assert (rule.team, rule.step, rule.after_minutes, rule.to_team, rule.created_by) == (team, 1, 30, team, alice)
    assert AuditEvent.objects.filter(verb="escalation_rule.created", actor_user=alice).count() == 1
    page = as_alice.get(PAGE).content.decode()
    assert "Escalation rule added: no decision from ops in 30 min, add ops." in page
    assert "changes nothing in who may decide" in page
    assert "No decision from ops in 30 min" in page and f'data-rule="{rule.pk}"' in page


def test_a_step_before_the_deadline_to_a_person(as_alice, team, agent):
    UserFactory(username="erin", teams=[team])
    as_alice.post(
        PAGE, {"scope": f"team:{team.pk}", "step": "1", "trigger": "after", "minutes": "30", "to_user": "erin"}
    )
    response = as_alice.post(
        PAGE,
        {"scope": f"agent:{agent.agent.pk}", "step": "1", "trigger": "before", "minutes": "15", "to_user": "erin"},
    )
    assert response.status_code == 302
    rule = EscalationRule.objects.get(agent=agent.agent)
    assert (rule.before_deadline_minutes, rule.after_minutes, rule.to_user.username) == (15, None, "erin")


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"to_team": "", "to_user": ""}, "to_team", "one of them"),
        ({"to_user": "erin"}, "to_team", "one of them"),  # a team and a person
        ({"to_team": "", "to_user": "nobody"}, "to_user", "no active person &#x27;nobody&#x27;"),
        ({"minutes": "0"}, "minutes", "greater than or equal to 1"),
        ({"minutes": "99999999"}, "minutes", "less than or equal to 10080"),
        ({"minutes": "ten"}, "minutes", "Enter a whole number"),
        ({"trigger": "sometime"}, "trigger", "Select a valid choice"),
        ({"step": "3"}, "step", "Select a valid choice"),
        ({"step": "2"}, "step", "step 2 goes after step 1, which ops has not set"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(as_alice, team, finance, change, field, words):
    UserFactory(username="erin")
    body = {"scope": f"team:{team.pk}", "step": "1", "trigger": "after", "minutes": "30", "to_team": team.pk}
    response = as_alice.post(PAGE, {**body, **change})
    assert response.status_code == 400
    page = response.content.decode()
    assert f"<code>{field}</code> " in page and words in page, page[page.find("data-rule-errors") :][:600]
    assert not EscalationRule.objects.exists()


def test_a_second_step_one_for_the_same_team_is_refused_beside_the_form(as_alice, team, finance):
    body = {"scope": f"team:{team.pk}", "step": "1", "trigger": "after", "minutes": "30", "to_team": team.pk}
    assert as_alice.post(PAGE, body).status_code == 302
    response = as_alice.post(PAGE, {**body, "minutes": "60"})
    assert response.status_code == 400
    assert "ops has a step 1 already; delete it first" in response.content.decode()
    assert EscalationRule.objects.get().after_minutes == 30


def test_a_team_that_is_not_yours_cannot_be_chosen(as_alice, finance):
    response = as_alice.post(
        PAGE, {"scope": f"team:{finance.pk}", "step": "1", "trigger": "after", "minutes": "5", "to_team": finance.pk}
    )
    assert response.status_code == 400 and "<code>scope</code> Select a valid choice" in response.content.decode()
    assert not EscalationRule.objects.exists()


def test_deleting_step_one_deletes_the_chain_and_is_audited(as_alice, alice, team, finance):
    first = EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance)
    EscalationRule.objects.create(team=team, step=2, after_minutes=60, to_user=alice)
    response = as_alice.post(f"{PAGE}{first.pk}/delete/")
    assert response.status_code == 302
    assert not EscalationRule.objects.exists()
    assert AuditEvent.objects.filter(verb="escalation_rule.deleted").count() == 2
    assert "Escalation rule deleted: ops, step 1 and any after it." in as_alice.get(PAGE).content.decode()


def test_another_teams_rule_is_neither_listed_nor_deletable(as_alice, finance, team):
    theirs = EscalationRule.objects.create(team=finance, after_minutes=30, to_team=team)
    assert f'data-rule="{theirs.pk}"' not in as_alice.get(PAGE).content.decode()
    assert as_alice.post(f"{PAGE}{theirs.pk}/delete/").status_code == 404
    assert as_alice.get(f"{PAGE}{theirs.pk}/delete/").status_code == 405
    assert EscalationRule.objects.filter(pk=theirs.pk).exists()


def test_staff_see_and_may_set_every_team(client, staff, finance, team):
    EscalationRule.objects.create(team=finance, after_minutes=30, to_team=team)
    client.force_login(staff)
    page = client.get(PAGE).content.decode()
    assert "No decision from Finance leads in 30 min" in page
    assert f'value="team:{finance.pk}"' in page and f'value="team:{team.pk}"' in page


def test_signed_out_the_page_asks_to_sign_in(client):
    response = client.get(PAGE)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_page_is_reached_from_notifications_which_the_menu_marks_as_current(as_alice):
    assert f'href="{PAGE}"' in as_alice.get("/inbox/settings/notifications/").content.decode()
    page = as_alice.get(PAGE).content.decode()
    assert '<a href="/inbox/settings/notifications/" aria-current="page">Notifications</a>' in page
    assert '<a href="/inbox/" aria-current="page">' not in page
