"""A newcomer starts a demo scenario from the agent's page and decides it in the browser."""

from __future__ import annotations

import pytest

from inbox.models import Resume, Run

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture(autouse=True)
def orm_beside_playwright(django_db_setup, monkeypatch):
    """Playwright's sync API keeps an event loop on this thread; the ORM calls of the test are safe."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_a_newcomer_starts_the_email_scenario_from_the_agent_page(login, demo, demo_agent, alice):
    page = login(alice)
    page.goto("/agents/")
    page.click("text=Demo")
    page.click("[data-scenario=email]")
    page.wait_for_url("**/inbox/runs/*/")
    run = Run.objects.get()
    assert page.url.endswith(run.get_absolute_url())
    assert "sendEmail" in page.content()
    assert not Resume.objects.exists()
