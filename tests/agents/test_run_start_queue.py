"""No request waits on an agent: the run-start API answers 202 at once, a worker asks the agent holding no
database connection meanwhile, and a person's or an agent's starts in flight are bounded (429, Retry-After)."""

from __future__ import annotations

import json
import time

import pytest

from inbox.ingest.start import run_start_finish
from inbox.models import RunStart
from tests.agent_servers import Reply, wait_for

pytestmark = pytest.mark.integration

FINISHED = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "success"}},
]


def post(client, slug: str, body: dict, **extra):
    return client.post(f"/api/v1/agents/{slug}/runs", data=json.dumps(body), content_type="application/json", **extra)


def test_the_api_answers_202_at_once_against_a_silent_agent(client, make_agent, alice, scripted, settings):
    settings.INBOX_AGENT_READ_TIMEOUT = 5.0  # bounds this test on a server that would wait for the agent
    silent = scripted(Reply(hang=True))
    make_agent("silent", endpoint=silent.url)
    client.force_login(alice)
    assert post(client, "silent", {"message": ""}).status_code == 400  # this process loads the view's code first
    started = time.monotonic()
    response = post(client, "silent", {"message": "email"})
    took = time.monotonic() - started
    assert response.status_code == 202, response.content
    assert took < settings.INBOX_AGENT_READ_TIMEOUT / 2, (
        f"the start took {took:.1f} s (the agent is read for up to {settings.INBOX_AGENT_READ_TIMEOUT:g} s)"
    )
    body = response.json()
    assert body["state"] == "pending" and body["run"] is None and body["error"] is None
    assert response["Location"] == body["url"] and body["url"].endswith(f"/api/v1/agents/silent/starts/{body['id']}")
    assert body["runId"] == RunStart.objects.get(pk=body["id"]).run_input["runId"]
    assert silent.received == []  # the request asked the agent nothing: a worker will
    assert client.get(body["url"]).json()["state"] == "pending"


def test_a_start_ends_with_its_run_or_its_refusal_at_its_address(client, make_agent, alice, bob, scripted):
    server = scripted(Reply(sse=FINISHED), Reply(status=500, body=b"no", content_type="text/plain"))
    make_agent("scripted", endpoint=server.url)
    client.force_login(alice)
    ok = post(client, "scripted", {"message": "hi", "threadId": "t1"}).json()
    run_start_finish(ok["id"])
    done = client.get(ok["url"]).json()
    assert (done["state"], done["run"]["outcome"], done["run"]["threadId"]) == ("done", "success", "t1")
    bad = post(client, "scripted", {"message": "again", "threadId": "t1"}).json()
    run_start_finish(bad["id"])
    failed = client.get(bad["url"]).json()
    assert failed["state"] == "failed" and failed["run"] is None
    assert (failed["error"]["status"], failed["error"]["error"]) == (502, "agent_unreachable")
    client.force_login(bob)  # a start is its starter's
    assert client.get(ok["url"]).status_code == 404


def test_past_the_limit_a_persons_start_is_429_with_retry_after(client, make_agent, alice, bob, scripted, settings):
    settings.INBOX_STARTS_IN_FLIGHT_PER_USER = 2
    server = scripted(Reply(sse=FINISHED))
    make_agent("busy", endpoint=server.url)
    client.force_login(alice)
    first, second = (post(client, "busy", {"message": "go"}) for _ in range(2))
    assert (first.status_code, second.status_code) == (202, 202)
    refused = post(client, "busy", {"message": "go"})
    assert refused.status_code == 429, refused.content
    assert refused["Retry-After"] == str(settings.INBOX_START_RETRY_AFTER_SECONDS)
    body = refused.json()
    assert (body["error"], body["scope"], body["limit"], body["inFlight"]) == ("too_many_starts", "user", 2, 2)
    assert body["limitName"] == "INBOX_STARTS_IN_FLIGHT_PER_USER" and "limit is 2" in body["detail"]
    assert RunStart.objects.count() == 2
    client.force_login(bob)  # the limit is alice's, not everyone's
    assert post(client, "busy", {"message": "go"}).status_code == 202
    client.force_login(alice)
    run_start_finish(first.json()["id"])  # one of hers ended: a slot is free again
    assert post(client, "busy", {"message": "go"}).status_code == 202


def test_past_the_limit_an_agents_starts_are_429_whoever_asks(client, make_agent, alice, bob, scripted, settings):
    settings.INBOX_STARTS_IN_FLIGHT_PER_AGENT = 2
    server = scripted(Reply(sse=FINISHED))
    make_agent("popular", endpoint=server.url)
    make_agent("quiet", endpoint=server.url)
    for user in (alice, bob):
        client.force_login(user)
        assert post(client, "popular", {"message": "go"}).status_code == 202
    refused = post(client, "popular", {"message": "go"})
    assert refused.status_code == 429 and refused.has_header("Retry-After")
    assert (refused.json()["scope"], refused.json()["limitName"]) == ("agent", "INBOX_STARTS_IN_FLIGHT_PER_AGENT")
    assert post(client, "quiet", {"message": "go"}).status_code == 202


def test_the_agent_page_says_why_a_start_past_the_limit_is_refused(client, make_agent, alice, scripted, settings):
    settings.INBOX_STARTS_IN_FLIGHT_PER_USER = 1
    server = scripted(Reply(sse=FINISHED))
    make_agent("paged", endpoint=server.url)
    client.force_login(alice)
    assert client.post("/agents/paged/", {"message": "go"}).status_code == 302
    page = client.post("/agents/paged/", {"message": "go again"})
    assert page.status_code == 429
    assert "the limit is 1" in page.content.decode() and page["Retry-After"] == "5"


def _worker_connections(cursor, name: str) -> int:
    cursor.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s", [name]
    )
    return cursor.fetchone()[0]


@pytest.mark.postgresql
def test_the_worker_holds_no_database_connection_while_the_agent_is_silent(
    client, make_agent, alice, scripted, start_worker
):
    from django.db import connection

    from tests.conftest import _test_database_url

    silent = scripted(Reply(hang=True))
    make_agent("silent", endpoint=silent.url)
    name = "inbox-start-worker-under-test"
    start_worker(
        extra_env={"DATABASE_URL": f"{_test_database_url()}?application_name={name}", "INBOX_AGENT_READ_TIMEOUT": "30"}
    )
    client.force_login(alice)
    assert post(client, "silent", {"message": ""}).status_code == 400  # this process loads the view's code first
    started = time.monotonic()
    response = post(client, "silent", {"message": "email"})
    assert response.status_code == 202 and time.monotonic() - started < 1.0
    wait_for(lambda: silent.received, what="the worker to ask the agent")
    time.sleep(1.0)  # the worker is now waiting on the agent's answer
    with connection.cursor() as cursor:
        held = _worker_connections(cursor, name)
    assert held == 0, f"the worker holds {held} database connection(s) while the agent is silent"
    assert RunStart.objects.get().state == RunStart.State.PENDING
    silent.stop()  # the agent hangs up: the start fails, and says so at its address
    wait_for(lambda: RunStart.objects.get().state == RunStart.State.FAILED, what="the start to fail")
    assert client.get(response.json()["url"]).json()["error"]["status"] == 502
