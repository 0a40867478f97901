"""An agent's settings on its page (staff), through the Django client: who may change what, errors under
their fields with nothing stored, the write-only auth header, tokens shown once, and the audit record."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client

from agents.durations import DurationParseError, format_duration, parse_duration
from agents.models import Agent
from inbox.models import AuditEvent
from tests.factories import TeamFactory, UserFactory

SETTINGS = "/agents/mailer/settings/"
TOKENS = "/agents/mailer/tokens/"


def settings_data(agent: Agent, **changes) -> dict:
    data = {
        "default_ttl": format_duration(agent.default_ttl),
        "approvals_required": str(agent.approvals_required),
        "teams": [team.pk for team in agent.teams.all()],
        "endpoint_url": agent.endpoint_url,
        "auth_header_name": agent.auth_header_name,
        "auth_header_value": "",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def stored(agent: Agent) -> tuple:
    agent = Agent.objects.get(pk=agent.pk)
    teams = sorted(agent.teams.values_list("name", flat=True))
    fields = ("default_ttl", "approvals_required", "endpoint_url", "auth_header_name", "auth_header_value", "enabled")
    return (*(getattr(agent, field) for field in fields), teams)


def field_errors(page: str) -> dict[str, str]:
    """What each field's error list says, by field name."""
    found = re.findall(r'data-field-error="([^"]+)">(.*?)</ul>', page, flags=re.S)
    return {name: re.sub(r"<[^>]+>", " ", text).strip() for name, text in found}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h 30m", timedelta(hours=2, minutes=30)),
        ("90m", timedelta(minutes=90)),
        ("1d", timedelta(days=1)),
        ("1 day 2 h", timedelta(days=1, hours=2)),  # what the page shows reads back
        ("2 h 30 min", timedelta(hours=2, minutes=30)),
        ("1.5h", timedelta(minutes=90)),
        ("1d, 2h and 3m", timedelta(days=1, hours=2, minutes=3)),
    ],
)
def test_durations_read_as_people_type_them(text, expected):
    assert parse_duration(text) == expected
    assert parse_duration(format_duration(expected)) == expected


@pytest.mark.parametrize("text", ["", "2", "soon", "2h 2h", "2h soon", "h2", "99999999999999999999d", "x" * 65])
def test_what_is_not_a_duration_is_refused_with_a_hint(text):
    with pytest.raises(DurationParseError, match=r"\w"):
        parse_duration(text)


def test_staff_change_ttl_quorum_and_teams_and_the_audit_log_says_who_changed_what(client, staff, agent):
    finance = TeamFactory(name="finance")
    last = AuditEvent.objects.order_by("pk").last()
    client.force_login(staff)
    response = client.post(
        SETTINGS, settings_data(agent.agent, default_ttl="2h", approvals_required="2", teams=[finance.pk])
    )
    assert response.status_code == 302 and response["Location"] == "/agents/mailer/#settings"
    assert stored(agent.agent)[:2] == (timedelta(hours=2), 2)
    assert stored(agent.agent)[-1] == ["finance"]
    page = client.get("/agents/mailer/").content.decode()
    assert 'value="2h"' in page  # the form shows the TTL back as typed
    assert re.search(r'data-setting="default_ttl">2 h\b', page)  # and the header humanized
    assert 'data-setting="approvals_required">2<' in page and 'data-setting="teams">finance<' in page
    assert "Settings saved: Default expiry (TTL), Approvals required (quorum), Teams." in page
    (event,) = AuditEvent.objects.filter(pk__gt=last.pk if last else 0)
    assert (event.verb, event.actor_user, event.agent_id) == ("agent.changed", staff, agent.agent.pk)
    assert event.data == {
        "fields": ["default_ttl", "approvals_required", "teams"],
        "changes": {
            "default_ttl": {"before": "1d", "after": "2h"},
            "approvals_required": {"before": 1, "after": 2},
            "teams": {"before": ["ops"], "after": ["finance"]},
        },
    }


def test_saving_unchanged_settings_writes_and_audits_nothing(client, staff, agent):
    client.force_login(staff)
    before = AuditEvent.objects.count()
    response = client.post(SETTINGS, settings_data(agent.agent), follow=True)
    assert "Nothing changed" in response.content.decode()
    assert AuditEvent.objects.count() == before


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        ({"default_ttl": "soon"}, {"default_ttl": "Not a duration"}),
        ({"default_ttl": "90"}, {"default_ttl": "Add a unit: 90m, 90h or 90d."}),
        ({"default_ttl": "30s"}, {"default_ttl": "Between 1m and 365d, got 30s."}),
        ({"default_ttl": ""}, {"default_ttl": "This field is required."}),
        ({"approvals_required": "0"}, {"approvals_required": "greater than or equal to 1"}),
        ({"approvals_required": "two"}, {"approvals_required": "Enter a whole number."}),
        ({"endpoint_url": "ftp://agents.example/run"}, {"endpoint_url": "Enter a valid URL."}),
        ({"endpoint_url": "javascript:alert(1)"}, {"endpoint_url": "Enter a valid URL."}),
        ({"teams": ["999999"]}, {"teams": "Select a valid choice."}),
        (
            {"default_ttl": "x", "approvals_required": "-1", "endpoint_url": "file:///etc/passwd"},
            {"default_ttl": "Not a duration", "approvals_required": "greater than", "endpoint_url": "valid URL"},
        ),
    ],
)
def test_bad_input_is_a_400_with_the_error_under_its_field_and_nothing_changes(client, staff, agent, changes, errors):
    client.force_login(staff)
    before, events = stored(agent.agent), AuditEvent.objects.count()
    # Other fields change too: a refused form stores none of them.
    response = client.post(SETTINGS, settings_data(agent.agent, auth_header_name="X-Other", **changes))
    assert response.status_code == 400
    page = response.content.decode()
    shown = field_errors(page)
    assert set(shown) == set(errors)
    for name, words in errors.items():
        assert words in shown[name], (name, shown[name])
        # The message sits in that field's own block, which the input names with aria-describedby.
        assert f'id="id_{name}_error"' in page or name == "teams"
    assert "Nothing was saved" in page
    assert stored(agent.agent) == before and AuditEvent.objects.count() == events
    # The header of the page still shows what is stored, not what was typed.
    assert 'data-setting="approvals_required">1<' in page


def test_the_auth_header_value_is_write_only_replaced_and_cleared(client, staff, agent):
    client.force_login(staff)
    client.post(SETTINGS, settings_data(agent.agent, auth_header_value="Bearer s3cret-value"))
    assert Agent.objects.get(pk=agent.agent.pk).auth_header_value == "Bearer s3cret-value"
    page = client.get("/agents/mailer/").content.decode()
    assert "s3cret" not in page
    assert re.search(r"data-auth-header-state>Auth header value: <strong>set</strong>", page)
    # Blank keeps it; typing and clearing at once is refused; clearing sends none.
    client.post(SETTINGS, settings_data(agent.agent, default_ttl="3h"))
    assert Agent.objects.get(pk=agent.agent.pk).auth_header_value == "Bearer s3cret-value"
    both = client.post(
        SETTINGS, settings_data(agent.agent, auth_header_value="Bearer other", clear_auth_header_value="on")
    )
    assert both.status_code == 400 and "Bearer other" not in both.content.decode()
    assert field_errors(both.content.decode()) == {"auth_header_value": "Type a new value or clear it, not both."}
    client.post(SETTINGS, settings_data(Agent.objects.get(pk=agent.agent.pk), clear_auth_header_value="on"))
    assert Agent.objects.get(pk=agent.agent.pk).auth_header_value == ""
    events = list(AuditEvent.objects.filter(verb="agent.changed").order_by("pk"))
    assert [event.data["fields"] for event in events] == [["auth_header_value"], ["default_ttl"], ["auth_header_value"]]
    assert events[0].data["changes"]["auth_header_value"] == {"before": "not set", "after": "set"}
    assert events[2].data["changes"]["auth_header_value"] == {"before": "set", "after": "not set"}
    assert "s3cret" not in str([event.data for event in AuditEvent.objects.all()])


def test_a_password_in_the_endpoint_url_is_refused_and_a_stored_one_stays_out_of_the_page(client, staff, make_agent):
    """A user part is refused when saved (tests/security/test_agent_endpoints.py); one stored before is shown
    redacted."""
    agent = make_agent("mailer", endpoint="https://bot:hunter2@agents.example/run")
    client.force_login(staff)
    response = client.post(SETTINGS, settings_data(agent.agent, endpoint_url="https://bot:hunter3@agents.example/run"))
    assert response.status_code == 400 and "endpoint_url" in response.context["settings_form"].errors
    assert Agent.objects.get(pk=agent.agent.pk).endpoint_url == "https://bot:hunter2@agents.example/run"
    assert not AuditEvent.objects.filter(verb="agent.changed").exists()
    header = client.get("/agents/mailer/").content.decode().split('name="endpoint_url"')[0]
    assert "hunter2" not in header and "https://bot:***@agents.example/run" in header
    assert "hunter2" not in client.get("/agents/").content.decode()


def test_staff_who_are_not_superusers_change_settings_but_not_where_resumes_go(client, agent):
    editor = UserFactory(username="editor", is_staff=True)
    client.force_login(editor)
    page = client.get("/agents/mailer/").content.decode()
    assert 'name="default_ttl"' in page and 'name="endpoint_url"' not in page and 'name="auth_header_value"' not in page
    assert "Only superusers change where the inbox sends resumes" in page
    response = client.post(
        SETTINGS,
        settings_data(agent.agent, approvals_required="3", endpoint_url="https://evil.example/", auth_header_value="x"),
    )
    assert response.status_code == 302
    stored_agent = Agent.objects.get(pk=agent.agent.pk)
    assert (stored_agent.approvals_required, stored_agent.endpoint_url) == (3, "http://127.0.0.1:9/agent")
    assert stored_agent.auth_header_value == ""
    assert AuditEvent.objects.get(verb="agent.changed").data["fields"] == ["approvals_required"]


def test_a_non_staff_approver_sees_the_settings_read_only_and_every_change_is_a_403(client, alice, agent):
    client.force_login(alice)
    page = client.get("/agents/mailer/").content.decode()
    assert 'data-setting="default_ttl">1 day' in page and "Staff change these settings." in page
    for absent in ('action="/agents/mailer/settings/"', 'action="/agents/mailer/tokens/"', 'name="default_ttl"'):
        assert absent not in page
    before, events = stored(agent.agent), AuditEvent.objects.count()
    tokens = list(agent.agent.tokens.values_list("pk", "revoked_at"))
    for url, data in (
        (SETTINGS, settings_data(agent.agent, approvals_required="5")),
        (TOKENS, {"action": "issue"}),
        (TOKENS, {"action": "revoke_all"}),
        ("/agents/mailer/enabled/", {"enabled": "0"}),
    ):
        assert client.post(url, data).status_code == 403, url
    assert stored(agent.agent) == before and AuditEvent.objects.count() == events
    assert list(agent.agent.tokens.values_list("pk", "revoked_at")) == tokens


def test_someone_who_cannot_see_the_agent_gets_a_404_not_a_403(client, carol, agent):
    client.force_login(carol)
    assert client.post(SETTINGS, settings_data(agent.agent)).status_code == 404
    assert client.post(TOKENS, {"action": "issue"}).status_code == 404


def test_changes_need_the_csrf_token(staff, agent):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    assert client.post(SETTINGS, settings_data(agent.agent, approvals_required="4")).status_code == 403
    assert client.post(TOKENS, {"action": "rotate"}).status_code == 403
    assert stored(agent.agent)[1] == 1
    assert client.get(SETTINGS).status_code == 405


def test_a_new_token_is_shown_once_works_and_stops_working_when_revoked(client, staff, agent):
    client.force_login(staff)
    response = client.post(TOKENS, {"action": "issue", "label": "billing host"})
    assert response.status_code == 302 and response["Location"] == "/agents/mailer/#tokens"
    first = client.get("/agents/mailer/")
    raw = re.search(r'value="(agi_[^"]+)" readonly data-new-token', first.content.decode()).group(1)
    assert "no-store" in first["Cache-Control"]
    assert raw not in client.get("/agents/mailer/").content.decode()  # once
    api = Client()
    assert api.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer {raw}").json()["slug"] == "mailer"
    token = agent.agent.tokens.get(label="billing host")
    client.post(TOKENS, {"action": "revoke", "token": str(token.pk)})
    assert api.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    # The fixture's own token was left alone.
    assert api.get("/api/v1/agent", **agent.auth).status_code == 200
    verbs = list(
        AuditEvent.objects.filter(verb__startswith="agent.token").order_by("pk").values_list("verb", "actor_user")
    )
    assert verbs == [("agent.token_issued", staff.pk), ("agent.token_revoked", staff.pk)]


def test_rotate_replaces_every_live_token_and_revoke_all_leaves_none(client, staff, agent):
    client.force_login(staff)
    client.post(TOKENS, {"action": "rotate"})
    raw = re.search(r'value="(agi_[^"]+)" readonly', client.get("/agents/mailer/").content.decode()).group(1)
    api = Client()
    assert api.get("/api/v1/agent", **agent.auth).status_code == 401
    assert api.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    client.post(TOKENS, {"action": "revoke_all"})
    assert api.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    assert not agent.agent.tokens.filter(revoked_at__isnull=True).exists()


def test_token_requests_that_make_no_sense_are_a_400(client, staff, agent):
    client.force_login(staff)
    assert client.post(TOKENS, {"action": "explode"}).status_code == 400
    long_label = client.post(TOKENS, {"action": "issue", "label": "x" * 101})
    assert long_label.status_code == 400
    assert "at most 100 characters" in field_errors(long_label.content.decode())["label"]
    assert agent.agent.tokens.count() == 1


def test_staff_disable_and_enable_an_agent_from_its_page(client, staff, agent, ingest):
    client.force_login(staff)
    assert client.post("/agents/mailer/enabled/", {"enabled": "0"}).status_code == 302
    assert Client().get("/api/v1/agent", **agent.auth).status_code == 403
    assert "Disabled" in client.get("/agents/").content.decode()
    client.post("/agents/mailer/enabled/", {"enabled": "1"})
    assert Client().get("/api/v1/agent", **agent.auth).status_code == 200
    verbs = list(
        AuditEvent.objects.filter(verb__in=["agent.enabled", "agent.disabled"])
        .order_by("pk")
        .values_list("verb", flat=True)
    )
    assert verbs == ["agent.disabled", "agent.enabled"]
    assert client.post("/agents/mailer/enabled/", {"enabled": "maybe"}).status_code == 400


def test_the_list_shows_state_host_teams_and_last_run(client, staff, make_agent):
    make_agent("mailer", endpoint="https://bot:hunter2@agents.example:8443/run")
    client.force_login(staff)
    page = client.get("/agents/").content.decode()
    row = page.split('data-agent-row="mailer"')[1].split("</tr>")[0]
    assert "agents.example:8443" in row and "hunter2" not in row and "/run" not in row
    assert "Enabled" in row and "ops" in row and "no runs yet" in row


def test_the_empty_list_tells_staff_the_command_and_others_whom_to_ask(client, staff, alice):
    client.force_login(staff)
    assert "manage.py agent_create" in client.get("/agents/").content.decode()
    client.force_login(alice)
    page = client.get("/agents/").content.decode()
    assert "agent_create" not in page and "ask a staff member" in page


def test_a_change_in_the_admin_is_audited_with_before_and_after_too(client, staff, agent):
    client.force_login(staff)
    data = {
        "name": "Mailer",
        "slug": "mailer",
        "description": "",
        "enabled": "on",
        "teams": [team.pk for team in agent.agent.teams.all()],
        "endpoint_url": agent.agent.endpoint_url,
        "auth_header_name": "Authorization",
        "auth_header_value": "Bearer admin-secret",
        "default_ttl": "02:00:00",
        "approvals_required": "3",
        "tokens-TOTAL_FORMS": "0",
        "tokens-INITIAL_FORMS": "0",
        "tokens-MIN_NUM_FORMS": "0",
        "tokens-MAX_NUM_FORMS": "1000",
    }
    assert client.post(f"/admin/agents/agent/{agent.agent.pk}/change/", data).status_code == 302
    event = AuditEvent.objects.get(verb="agent.changed")
    assert event.data["changes"] == {
        "auth_header_value": {"before": "not set", "after": "set"},
        "default_ttl": {"before": "1d", "after": "2h"},
        "approvals_required": {"before": 1, "after": 3},
    }
    assert "admin-secret" not in str(event.data)
