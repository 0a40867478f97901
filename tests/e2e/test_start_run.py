"""A newcomer starts a demo scenario from the agent's page and decides it in the browser."""

from __future__ import annotations

import pytest

from inbox.models import Resume, Run

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_a_newcomer_starts_the_email_scenario_from_the_agent_page(login, demo, demo_agent, alice, start_worker):
    start_worker()  # the worker asks the agent; the page shows the start's progress until the run is stored
    page = login(alice)
    page.goto("/agents/")
    page.click("text=Demo")
    page.click("[data-scenario=email]")
    page.wait_for_url("**/inbox/runs/*/")
    run = Run.objects.get()
    assert page.url.endswith(run.get_absolute_url())
    assert "sendEmail" in page.content()
    assert not Resume.objects.exists()
