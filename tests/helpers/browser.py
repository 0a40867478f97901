"""Signing in from a browser test: a session cookie, as the login form would leave it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.test import Client

from tests.factories import PASSWORD


def sign_in(context: Any, user: Any, *, landing: str = "/inbox/") -> Any:
    """A new page of ``context`` (a Playwright browser context), signed in as ``user`` and showing ``landing`` (the
    inbox, where the login form leads). The session is made as Django's test client makes one (``force_login``) and
    handed to the browser as its cookie: the form itself is tested where it is the point
    (``sign_in_through_the_form``, tests/security/test_brute_force.py, tests/e2e/test_sso_browser.py)."""
    client = Client()
    client.force_login(user, backend="inbox.teams.backends.PasswordBackend")
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "domain": "127.0.0.1", "path": "/"}]
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(landing)
    return page


def sign_in_through_the_form(context: Any, user: Any) -> Any:
    """A new page of ``context`` signed in as ``user`` through the login form, as a person does."""
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.get_username())
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return page
