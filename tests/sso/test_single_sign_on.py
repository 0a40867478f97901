"""Single sign-on against a real OpenID Connect provider on loopback (django-oauth-toolkit in its own process):
login, first-login user creation, the groups claim mapped to teams at each login (audited), a removed group
losing access, logout (here and at the provider), and local passwords turned off."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from inbox.models import AuditEvent
from inbox.models.sso import SSOIdentity, TeamClaimMapping
from tests.policies.runs import post_tool_run
from tests.sso.conftest import ProviderBrowser, inbox_path, sso_login


@pytest.fixture
def mapped(team) -> TeamClaimMapping:
    return TeamClaimMapping.objects.create(team=team, claim_value="acme-ops")


def test_the_login_page_offers_sso_when_configured(client, sso):
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with ACME" in page and 'name="password"' in page


def test_first_login_creates_the_user_and_maps_the_groups_claim_to_teams(client, sso, mapped, agent, ingest):
    sso.user("erin", "acme-ops", "acme-sales")
    item = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {})).items.get()
    done = sso_login(client, sso, "erin")
    assert done.status_code == 302 and done["Location"] == "/inbox/"
    erin = User.objects.get(username="erin")
    assert erin.email == "erin@acme.example" and not erin.has_usable_password()
    assert SSOIdentity.objects.get(user=erin).issuer == sso.issuer
    assert list(erin.groups.values_list("name", flat=True)) == ["ops"]
    assert AuditEvent.objects.filter(verb="user.created_by_sso", actor_label="sso").exists()
    synced = AuditEvent.objects.get(verb="user.teams_synced")
    assert synced.data["added"] == ["ops"] and synced.data["removed"] == []
    assert client.get("/inbox/").status_code == 200
    assert client.get(f"/api/v1/items/{item.pk}").status_code == 200


def test_a_removed_group_loses_access_at_the_next_login_and_unmapped_teams_stay(client, sso, mapped, agent, ingest):
    sso.user("erin", "acme-ops")
    item = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {})).items.get()
    sso_login(client, sso, "erin")
    erin = User.objects.get(username="erin")
    erin.groups.add(Group.objects.create(name="by-hand"))
    client.logout()

    sso.user("erin")  # the company took erin out of acme-ops
    sso_login(client, sso, "erin")
    assert set(erin.groups.values_list("name", flat=True)) == {"by-hand"}
    assert client.get(f"/api/v1/items/{item.pk}").status_code == 404
    removed = AuditEvent.objects.filter(verb="user.teams_synced").order_by("-pk").first()
    assert removed.data["removed"] == ["ops"]
    # A login that changes nothing is not audited again.
    client.logout()
    sso_login(client, sso, "erin")
    assert AuditEvent.objects.filter(verb="user.teams_synced").count() == 2
    assert User.objects.filter(username__startswith="erin").count() == 1


def test_logout_ends_the_inbox_session_and_the_providers(client, sso):
    sso.user("erin")
    browser = ProviderBrowser(sso)
    sso_login(client, sso, "erin", browser)
    out = client.post("/accounts/logout/")
    assert out.status_code == 302 and out["Location"].startswith(f"{sso.issuer}/logout/")
    assert "id_token_hint=" in out["Location"]
    assert client.get("/inbox/").status_code == 302  # logged out here
    back = browser.follow(out["Location"])
    assert isinstance(back, str) and inbox_path(back) == "/accounts/login/"
    # ... and at the provider: the next SSO login asks for the password again.
    start = client.get("/oidc/authenticate/")
    page = browser.follow(start["Location"])
    assert not isinstance(page, str) and "ACME identity provider" in page.text


def test_a_callback_with_a_state_this_session_never_sent_logs_nobody_in(client, sso):
    sso.user("erin")
    other = client.__class__()
    start = other.get("/oidc/authenticate/")
    callback = ProviderBrowser(sso).sign_in(start["Location"], "erin")
    client.get("/oidc/authenticate/")  # this session has a state of its own, not that one
    assert client.get(inbox_path(callback)).status_code == 400  # Django's answer to a SuspiciousOperation
    assert client.get("/inbox/").status_code == 302
    assert not User.objects.filter(username="erin").exists()


def test_with_local_passwords_off_only_sso_logs_in(client, sso, settings, alice):
    settings.INBOX_LOCAL_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = ["inbox.sso.backend.InboxOIDCBackend"]
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b"Sign in with ACME" in page.content and b'name="password"' not in page.content
    refused = client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"})
    assert refused.status_code == 403 and b"Password sign-in is turned off" in refused.content
    assert client.get("/inbox/").status_code == 302
    sso.user("erin")
    assert sso_login(client, sso, "erin")["Location"] == "/inbox/"
    assert client.get("/inbox/").status_code == 200


def test_without_an_issuer_sso_is_off(client, settings):
    settings.OIDC_ISSUER = ""
    assert client.get("/oidc/authenticate/").status_code == 404
    assert b"Sign in with" not in client.get("/accounts/login/").content
