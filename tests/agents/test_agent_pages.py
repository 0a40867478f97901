"""The agent pages: the list, and "Start a run" on an agent's page."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from inbox.ingest.start import run_start_finish
from inbox.models import Run, RunStart
from tests.agent_servers import Reply


def worker_runs_the_start() -> None:
    """What the Celery task does (``inbox.tasks.start_run``), here in the test process."""
    for start in RunStart.objects.filter(state=RunStart.State.PENDING):
        run_start_finish(start.pk)


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
    start = RunStart.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/agents/demo/starts/{start.pk}/"
    progress = client.get(response["Location"])
    assert progress.status_code == 200 and 'data-start-progress="pending"' in progress.content.decode()
    assert 'http-equiv="refresh"' in progress.content.decode()
    worker_runs_the_start()
    run = Run.objects.get()
    done = client.get(response["Location"])
    assert done.status_code == 302 and done["Location"] == run.get_absolute_url()
    assert (run.source, run.items.count()) == ("started", 3)
    assert f'href="{run.get_absolute_url()}"' in client.get("/agents/demo/").content.decode()


@pytest.mark.integration
def test_an_unreachable_agent_shows_why_the_run_was_not_started(client, make_agent, alice, scripted):
    server = scripted(Reply())
    make_agent("gone", endpoint=server.url)
    server.stop()
    client.force_login(alice)
    started = client.post("/agents/gone/", {"message": "hello"})
    worker_runs_the_start()
    response = client.get(started["Location"])
    assert response.status_code == 502
    assert "Could not reach the agent" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.integration
@override_settings(INBOX_AGENT_READ_TIMEOUT=5, INBOX_AGENT_STREAM_DEADLINE=5)
def test_a_silent_agent_does_not_hold_the_approvers_request(client, make_agent, alice, bob, scripted):
    """Starting a run from the page answers at once; the progress page shows it, and only to who started it."""
    server = scripted(Reply(hang=True))
    make_agent("silent", endpoint=server.url)
    client.force_login(alice)
    began = time.monotonic()
    response = client.post("/agents/silent/", {"message": "hello"})
    assert time.monotonic() - began < 2 and response.status_code == 302
    assert 'data-start-progress="pending"' in client.get(response["Location"]).content.decode()
    assert server.received == []  # nothing was sent from the web request: a worker sends it
    client.force_login(bob)
    assert client.get(response["Location"]).status_code == 404


def test_a_start_that_lost_its_worker_is_given_up(client, make_agent, alice, settings):
    from datetime import timedelta

    import time_machine

    make_agent("lost", endpoint="http://127.0.0.1:9/agent")
    client.force_login(alice)
    location = client.post("/agents/lost/", {"message": "hello"})["Location"]
    assert client.get(location).status_code == 200
    later = settings.INBOX_AGENT_STREAM_DEADLINE + settings.INBOX_AGENT_CONNECT_TIMEOUT + 61
    with time_machine.travel(timedelta(seconds=later)):
        given_up = client.get(location)
    assert given_up.status_code == 504 and "did not answer in time" in given_up.content.decode()
