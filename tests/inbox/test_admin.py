"""The Django admin: every model is there with list columns, filters and search; the agent registry is
usable (tokens by prefix, rotate shows the new token once, endpoint URL superusers-only, http/https);
AuditEvent cannot be added, changed or deleted by anyone."""

from __future__ import annotations

import copy
import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from agents.models import Agent, AgentToken
from inbox.models import AuditEvent, TeamWebhook
from tests.conftest import PASSWORD, spec_example


@pytest.fixture
def editor(db) -> User:
    """Staff, not superuser, allowed to view and change agents."""
    user = User.objects.create_user("editor", "editor@example.com", PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_agent", "change_agent"]))
    return user


def agent_form_data(agent: Agent, **changes) -> dict:
    data = {
        "name": agent.name,
        "slug": agent.slug,
        "description": agent.description,
        "enabled": "on",
        "teams": [team.pk for team in agent.teams.all()],
        "endpoint_url": agent.endpoint_url,
        "auth_header_name": agent.auth_header_name,
        "auth_header_value": "",
        "default_ttl": "1 00:00:00",
        "approvals_required": "1",
        "tokens-TOTAL_FORMS": "0",
        "tokens-INITIAL_FORMS": "0",
        "tokens-MIN_NUM_FORMS": "0",
        "tokens-MAX_NUM_FORMS": "1000",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def test_every_model_of_both_apps_is_registered():
    from django.apps import apps

    for app_label in ("agents", "inbox"):
        for model in apps.get_app_config(app_label).get_models():
            assert admin.site.is_registered(model), f"{model.__name__} is not in the admin"


def test_every_changelist_renders_with_search_and_filters(staff, agent, ingest, client):
    ingest(agent, copy.deepcopy(spec_example("approve_with_edits")))
    client.force_login(staff)
    for model in admin.site._registry:
        if model._meta.app_label not in ("agents", "inbox"):
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url
        assert client.get(url, {"q": "tc-42"}).status_code == 200, url
    page = client.get(reverse("admin:inbox_inboxitem_changelist"), {"q": "tc-42"}).content.decode()
    assert "int-email-edit" in page and "By status" in page


def test_rotating_tokens_shows_the_new_token_once_and_it_works(staff, agent, ingest, client):
    client.force_login(staff)
    response = client.post(
        reverse("admin:agents_agent_changelist"),
        {"action": "rotate_tokens", "_selected_action": [agent.agent.pk]},
        follow=True,
    )
    raw = re.search(r"(agi_[A-Za-z0-9_\-]+)", response.content.decode()).group(1)
    assert "not shown again" in response.content.decode()
    assert ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval"))).status_code == 401  # old one revoked
    agent.token = raw
    assert ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval"))).status_code == 201
    # Shown once: the next page does not carry it.
    assert raw not in client.get(reverse("admin:agents_agent_changelist")).content.decode()
    assert AuditEvent.objects.filter(verb="agent.tokens_rotated", agent=agent.agent).exists()


def test_admin_token_actions_are_audited_with_the_acting_user(staff, agent, client):
    client.force_login(staff)
    client.post(
        reverse("admin:agents_agent_changelist"), {"action": "rotate_tokens", "_selected_action": [agent.agent.pk]}
    )
    rotated = AuditEvent.objects.get(verb="agent.tokens_rotated", agent=agent.agent)
    assert (rotated.actor_type, rotated.actor_user) == ("user", staff)
    live = AgentToken.objects.get(agent=agent.agent, revoked_at__isnull=True)
    assert rotated.data["prefix"] == live.prefix
    client.post(reverse("admin:agents_agenttoken_changelist"), {"action": "revoke", "_selected_action": [live.pk]})
    revoked = AuditEvent.objects.get(verb="agent.token_revoked", agent=agent.agent)
    assert (revoked.actor_user, revoked.data) == (staff, {"prefix": live.prefix})
    client.post(
        reverse("admin:agents_agent_changelist"), {"action": "disable_agents", "_selected_action": [agent.agent.pk]}
    )
    agent.agent.refresh_from_db()
    assert not agent.agent.enabled
    assert AuditEvent.objects.filter(verb="agent.disabled", agent=agent.agent, actor_user=staff).exists()


def test_pages_show_token_prefixes_and_never_hashes(staff, agent, client):
    client.force_login(staff)
    token = AgentToken.objects.get(agent=agent.agent)
    pages = [
        client.get(reverse("admin:agents_agent_change", args=[agent.agent.pk])).content.decode(),
        client.get(reverse("admin:agents_agenttoken_changelist")).content.decode(),
        client.get(reverse("admin:agents_agenttoken_change", args=[token.pk])).content.decode(),
    ]
    for page in pages:
        assert token.prefix in page
        assert token.token_hash not in page
        assert agent.token not in page


def test_revoking_a_token_from_the_admin_makes_ingest_refuse_it(staff, agent, ingest, client):
    client.force_login(staff)
    token = AgentToken.objects.get(agent=agent.agent)
    client.post(reverse("admin:agents_agenttoken_changelist"), {"action": "revoke", "_selected_action": [token.pk]})
    response = ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


@pytest.mark.parametrize("url", ["ftp://example.com/agent", "javascript:alert(1)", "not a url", "file:///etc/passwd"])
def test_the_endpoint_url_must_be_http_or_https(url, staff, agent, client):
    client.force_login(staff)
    response = client.post(
        reverse("admin:agents_agent_change", args=[agent.agent.pk]), agent_form_data(agent.agent, endpoint_url=url)
    )
    assert response.status_code == 200  # the form again, with its error
    assert "Enter a valid URL" in response.content.decode()
    agent.agent.refresh_from_db()
    assert agent.agent.endpoint_url == "http://127.0.0.1:9/agent"


def test_a_superuser_changes_the_endpoint_and_the_secret_header_is_never_shown(staff, agent, client):
    client.force_login(staff)
    url = reverse("admin:agents_agent_change", args=[agent.agent.pk])
    response = client.post(
        url,
        agent_form_data(
            agent.agent, endpoint_url="https://agents.example/run", auth_header_value="Bearer s3cret-value"
        ),
    )
    assert response.status_code == 302
    agent.agent.refresh_from_db()
    assert (agent.agent.endpoint_url, agent.agent.auth_header_value) == (
        "https://agents.example/run",
        "Bearer s3cret-value",
    )
    assert "s3cret-value" not in client.get(url).content.decode()
    # Saving again with the secret field blank keeps it.
    client.post(url, agent_form_data(agent.agent, endpoint_url="https://agents.example/run"))
    agent.agent.refresh_from_db()
    assert agent.agent.auth_header_value == "Bearer s3cret-value"
    first, second = AuditEvent.objects.filter(verb="agent.changed").order_by("id")
    assert set(first.data["fields"]) == {"endpoint_url", "auth_header_value"}
    assert second.data["fields"] == []
    assert "s3cret" not in str(first.data) + str(second.data)


def test_staff_who_are_not_superusers_cannot_change_the_endpoint(editor, agent, client):
    client.force_login(editor)
    url = reverse("admin:agents_agent_change", args=[agent.agent.pk])
    page = client.get(url).content.decode()
    assert 'name="endpoint_url"' not in page and "http://127.0.0.1:9/agent" in page
    response = client.post(url, agent_form_data(agent.agent, endpoint_url="https://evil.example/steal", name="Renamed"))
    assert response.status_code == 302
    agent.agent.refresh_from_db()
    assert agent.agent.name == "Renamed"
    assert agent.agent.endpoint_url == "http://127.0.0.1:9/agent"


def test_nobody_can_add_change_or_delete_an_audit_event_in_the_admin(staff, agent, ingest, client):
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    event = AuditEvent.objects.get(verb="run.ingested")
    client.force_login(staff)  # a superuser
    assert client.get(reverse("admin:inbox_auditevent_add")).status_code == 403
    assert client.post(reverse("admin:inbox_auditevent_delete", args=[event.pk]), {"post": "yes"}).status_code == 403
    change = reverse("admin:inbox_auditevent_change", args=[event.pk])
    page = client.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.post(change, {"verb": "rewritten", "actor_label": "someone"}).status_code == 403
    changelist = client.get(reverse("admin:inbox_auditevent_changelist")).content.decode()
    assert "delete_selected" not in changelist
    client.post(
        reverse("admin:inbox_auditevent_changelist"),
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )
    event.refresh_from_db()
    assert event.verb == "run.ingested" and AuditEvent.objects.filter(pk=event.pk).exists()


def test_a_team_webhook_needs_an_http_url_and_keeps_its_secret_hidden(staff, team, client):
    client.force_login(staff)
    add = reverse("admin:inbox_teamwebhook_add")
    bad = client.post(add, {"team": team.pk, "url": "gopher://x", "secret": "k", "enabled": "on"})
    assert "Enter a valid URL" in bad.content.decode()
    client.post(add, {"team": team.pk, "url": "https://chat.example/hook", "secret": "hook-secret", "enabled": "on"})
    webhook = TeamWebhook.objects.get()
    assert webhook.secret == "hook-secret"
    assert (
        "hook-secret" not in client.get(reverse("admin:inbox_teamwebhook_change", args=[webhook.pk])).content.decode()
    )
