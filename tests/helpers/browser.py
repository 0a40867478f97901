"""Signing in from a browser test: the login form, as a person uses it."""

from __future__ import annotations

from typing import Any

from tests.factories import PASSWORD


def sign_in(context: Any, user: Any) -> Any:
    """A new page of ``context`` (a Playwright browser context), signed in as ``user`` through the login form."""
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.get_username())
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return page
