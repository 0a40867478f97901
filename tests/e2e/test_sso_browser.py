"""Single sign-on in Debian's Chromium: the login page's SSO button, the real OIDC provider's login page
(django-oauth-toolkit, a separate process on loopback), back in the inbox with the mapped team's items, and
logout at both ends.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the test visits."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from playwright.sync_api import expect

from inbox.models.sso import TeamClaimMapping
from tests.e2e.conftest import off_loop, shot
from tests.policies.runs import tool_run
from tests.sso.conftest import oidc_provider, sso  # noqa: F401  (the provider fixtures)

pytestmark = pytest.mark.browser


def test_an_approver_signs_in_with_sso_sees_the_mapped_teams_items_and_logs_out(
    browser,
    live_asgi,
    sso,  # noqa: F811
    team,
    agent,
):
    TeamClaimMapping.objects.create(team=team, claim_value="acme-ops")
    sso.user("erin", "acme-ops")
    sso.allow(f"{live_asgi}/oidc/callback/", f"{live_asgi}/accounts/login/")

    def send() -> None:
        body = tool_run("t1", "r1", ("sendEmail", {"to": "ann@ourco.com", "subject": "Quarterly numbers"}))
        response = Client().post(
            "/api/v1/runs", data=json.dumps({"events": body}), content_type="application/json", **agent.auth
        )
        assert response.status_code == 201, response.content

    off_loop(send)
    context = browser.new_context(base_url=live_asgi, viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto("/inbox/")
        expect(page.get_by_role("link", name="Sign in with ACME")).to_be_visible()
        shot(page, "sso-login-page")
        page.get_by_role("link", name="Sign in with ACME").click()
        expect(page.locator("h1")).to_have_text("ACME identity provider")
        page.fill("#provider-username", "erin")
        page.fill("#provider-password", "provider-pass")
        page.get_by_role("button", name="Sign in to ACME").click()
        page.wait_for_url(f"{live_asgi}/inbox/")
        expect(page.locator(".username")).to_have_text("erin")
        expect(page.locator("main")).to_contain_text("sendEmail")
        shot(page, "sso-signed-in-inbox")
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url(f"{live_asgi}/accounts/login/")
        page.goto("/inbox/")
        page.get_by_role("link", name="Sign in with ACME").click()
        expect(page.locator("h1")).to_have_text("ACME identity provider")  # logged out at the provider too
    finally:
        context.close()
