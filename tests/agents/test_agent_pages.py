"""The agent pages: the list, and "Start a run" on an agent's page."""

from __future__ import annotations

import pytest

from inbox.models import Run
from tests.agent_servers import Reply


def test_the_list_shows_only_the_agents_of_my_teams(client, make_agent, alice, db):
    make_agent("mailer")
    from agents.models import Agent

    Agent.objects.create(slug="secret", name="Secret agent")
    client.force_login(alice)
    page = client.get("/agents/").content.decode()
    assert "Mailer" in page and "Secret agent" not in page


def test_an_agent_page_of_another_team_is_not_found(client, make_agent, carol):
    make_agent("mailer")
    client.force_login(carol)
    assert client.get("/agents/mailer/").status_code == 404


@pytest.mark.integration
def test_a_demo_scenario_button_starts_a_run_and_opens_its_page(client, demo, demo_agent, alice):
    client.force_login(alice)
    page = client.get("/agents/demo/").content.decode()
    for scenario in ("email", "parallel", "filing", "chain"):
        assert f'value="{scenario}"' in page
    response = client.post("/agents/demo/", {"message": "parallel"})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert (run.source, run.items.count()) == ("started", 3)
    assert f'href="{run.get_absolute_url()}"' in client.get("/agents/demo/").content.decode()


@pytest.mark.integration
def test_an_unreachable_agent_shows_why_the_run_was_not_started(client, make_agent, alice, scripted):
    server = scripted(Reply())
    make_agent("gone", endpoint=server.url)
    server.stop()
    client.force_login(alice)
    response = client.post("/agents/gone/", {"message": "hello"})
    assert response.status_code == 502
    assert "Could not reach the agent" in response.content.decode()
    assert not Run.objects.exists()
