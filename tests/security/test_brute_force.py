"""Guessing passwords and tokens: the login locks, failed tokens and ingest floods are throttled."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client, override_settings

from tests.conftest import PASSWORD


def sign_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_fifty_wrong_passwords_then_the_right_one_does_not_sign_in(alice):
    client = Client()
    statuses = {sign_in(client, "alice", f"guess-{n}").status_code for n in range(50)}
    assert 429 in statuses

    response = sign_in(client, "alice", PASSWORD)
    assert response.status_code == 429
    assert b"Too many sign-in attempts" in response.content
    assert client.get("/inbox/").status_code == 302  # still signed out: sent to the login page


def test_a_lockout_is_per_user_and_address(alice, bob):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for n in range(10):
        sign_in(attacker, "alice", f"guess-{n}")
    # alice from her own address, and bob from the attacker's, still sign in.
    assert sign_in(Client(REMOTE_ADDR="198.51.100.7"), "alice", PASSWORD).status_code == 302
    assert sign_in(Client(REMOTE_ADDR="203.0.113.9"), "bob", PASSWORD).status_code == 302


def test_a_few_mistakes_do_not_lock_anyone_out(alice):
    client = Client()
    for n in range(3):
        assert sign_in(client, "alice", f"typo-{n}").status_code == 200
    assert sign_in(client, "alice", PASSWORD).status_code == 302


@override_settings(INBOX_FAILED_AUTH_RATE="5/min")
def test_failed_agent_tokens_are_throttled_per_address(client: Client, agent):
    for n in range(5):
        response = client.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer agi_wrong{n}")
        assert response.status_code == 401
    # Past the rate a wrong token waits; the right one is never refused (tests/security/test_client_address.py).
    blocked = client.get("/api/v1/agent", HTTP_AUTHORIZATION="Bearer agi_wrong-again")
    assert blocked.status_code == 429
    assert "Retry-After" in blocked.headers
    assert Client(REMOTE_ADDR="198.51.100.7").get("/api/v1/agent", HTTP_AUTHORIZATION="Bearer agi_x").status_code == 401


@override_settings(INBOX_INGEST_RATE="3/min")
def test_ingest_is_throttled_per_agent(client: Client, agent, make_agent):
    def post(who, n: int):
        body = {"type": "RUN_FINISHED", "threadId": f"t-{n}", "runId": f"r-{n}"}
        return client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **who.auth)

    assert [post(agent, n).status_code for n in range(4)] == [201, 201, 201, 429]
    assert post(make_agent("other"), 9).status_code == 201


@override_settings(INBOX_INGEST_RATE="3/min")
def test_the_ingest_limit_slides_over_the_previous_minute(client: Client, agent):
    """The previous minute's posts still count for the part of it that overlaps the last 60 s; refused posts
    count too, so an agent that keeps posting while refused does not get through at the turn of the minute."""

    def post(n: int):
        body = {"type": "RUN_FINISHED", "threadId": f"t-{n}", "runId": f"r-{n}"}
        return client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent.auth)

    minute = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    with time_machine.travel(minute + timedelta(seconds=40), tick=False):
        assert [post(n).status_code for n in range(4)] == [201, 201, 201, 429]
    with time_machine.travel(minute + timedelta(seconds=70), tick=False):
        refused = post(10)  # 4 x 50/60 of the previous minute + 1 is over 3
        assert refused.status_code == 429
        # Retry-After: until 4 x (1 - t/60) + 1 <= 3, that is 30 s into the minute, 20 s from now.
        assert int(refused.headers["Retry-After"]) in (20, 21)  # rounded up
    with time_machine.travel(minute + timedelta(seconds=115), tick=False):
        assert post(11).status_code == 201  # 4 x 5/60 + 2 (the one refused above counts) is under 3


def test_every_cache_object_of_a_process_shares_one_redis_client():
    """Each ASGI request context gets a throttle cache object of its own (``caches`` is per context); the Redis
    client and its pool beneath them are the process's, so a request does not open a connection of its own."""
    from django.core.cache import caches

    first, second = caches.create_connection("shared"), caches.create_connection("shared")
    assert first is not second
    assert first._cache.get_client(write=True) is second._cache.get_client(write=True)
    assert first._cache.get_client(write=True) is caches["shared"]._cache.get_client()


@pytest.mark.parametrize("token", ["Token wrong-1", "Token 0123456789abcdef0123456789abcdef01234567"])
@override_settings(INBOX_FAILED_AUTH_RATE="2/min")
def test_failed_approver_tokens_are_throttled(db, client: Client, token):
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 401
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 401
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 429


def test_while_the_throttle_counter_is_unreachable_the_api_answers_uncounted(client: Client, agent, settings, caplog):
    """The limits are not counted while their Redis is down (logged): an outage of the counter is not one of the
    API."""
    caches = {**settings.CACHES}
    caches["shared"] = {**caches["shared"], "LOCATION": "redis://127.0.0.1:1/0"}  # nothing listens there
    settings.CACHES = caches
    body = {"type": "RUN_FINISHED", "threadId": "t-down", "runId": "r-down"}
    posted = client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent.auth)
    assert posted.status_code == 201
    assert client.get("/api/v1/agent", HTTP_AUTHORIZATION="Bearer agi_wrong").status_code == 401
    assert "throttle cache unreachable, not counting" in caplog.text


def test_the_throttles_count_through_the_public_cache_api(client: Client, agent, settings):
    """The limits hold on any Django cache backend (here one that is not Redis): the throttles use the cache's
    public API only. (All through the ``settings`` fixture: an ``override_settings`` decorator on the same test
    would be restored first, and the fixture would then restore the decorator's rates for every later test.)"""
    settings.INBOX_INGEST_RATE = settings.INBOX_FAILED_AUTH_RATE = "2/min"
    settings.CACHES = {**settings.CACHES, "shared": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

    def post(n: int):
        body = {"type": "RUN_FINISHED", "threadId": f"t-{n}", "runId": f"r-{n}"}
        return client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent.auth)

    assert [post(n).status_code for n in range(3)] == [201, 201, 429]
    wrong = [client.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer agi_wrong{n}").status_code for n in range(3)]
    assert wrong == [401, 401, 429]
