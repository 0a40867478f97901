"""Guessing passwords and tokens: the login locks, failed tokens and ingest floods are throttled."""

from __future__ import annotations

import json

import pytest
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
    # Past the rate even the right token waits: guessing cannot go on in the background.
    blocked = client.get("/api/v1/agent", **agent.auth)
    assert blocked.status_code == 429
    assert "Retry-After" in blocked.headers
    assert Client(REMOTE_ADDR="198.51.100.7").get("/api/v1/agent", **agent.auth).status_code == 200


@override_settings(INBOX_INGEST_RATE="3/min")
def test_ingest_is_throttled_per_agent(client: Client, agent, make_agent):
    def post(who, n: int):
        body = {"type": "RUN_FINISHED", "threadId": f"t-{n}", "runId": f"r-{n}"}
        return client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **who.auth)

    assert [post(agent, n).status_code for n in range(4)] == [201, 201, 201, 429]
    assert post(make_agent("other"), 9).status_code == 201


@pytest.mark.parametrize("token", ["Token wrong-1", "Token 0123456789abcdef0123456789abcdef01234567"])
@override_settings(INBOX_FAILED_AUTH_RATE="2/min")
def test_failed_approver_tokens_are_throttled(db, client: Client, token):
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 403
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 403
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=token).status_code == 429
