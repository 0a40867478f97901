"""Whose address a login failure or a wrong token counts against: the socket's, never a header the client wrote,
unless a setting names the reverse proxies in front (``agents/addresses.py``).

The login tests go over real HTTP to the product served by uvicorn as the project starts it (``live_asgi``), with
the victim on another loopback address (127.0.0.2), so a server that rewrote the client's address from
``X-Forwarded-For`` would fail them.
"""

from __future__ import annotations

import re

import httpx
import pytest
from django.test import Client, RequestFactory, override_settings

from agents.addresses import address_from, client_address
from inbox.models import ApiToken
from tests.conftest import PASSWORD

ATTACKER, VICTIM = "127.0.0.1", "127.0.0.2"


def browser(base: str, source: str = ATTACKER) -> httpx.Client:
    return httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=source), timeout=10)


def sign_in(http: httpx.Client, username: str, password: str, forwarded_for: str | None = None) -> httpx.Response:
    page = http.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "the login page has a CSRF token"
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return http.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={**headers, "Referer": f"{http.base_url}accounts/login/"},
    )


def test_rotating_x_forwarded_for_still_locks_the_user(live_asgi, alice):
    with browser(live_asgi) as attacker:
        statuses = [sign_in(attacker, "alice", f"guess-{n}", f"198.51.100.{n}").status_code for n in range(8)]
        assert 429 in statuses
        right = sign_in(attacker, "alice", PASSWORD, "198.51.100.200")
        assert right.status_code == 429
        assert attacker.get("/inbox/").status_code == 302  # still signed out


@pytest.mark.parametrize("forwarded_for", [VICTIM, f"{VICTIM}, {ATTACKER}"], ids=["alone", "proxy-appended"])
def test_a_victims_address_in_x_forwarded_for_locks_nobody(live_asgi, alice, forwarded_for):
    with browser(live_asgi) as attacker:
        for n in range(8):
            sign_in(attacker, "alice", f"guess-{n}", forwarded_for)
    with browser(live_asgi, VICTIM) as victim:
        assert sign_in(victim, "alice", PASSWORD).status_code == 302
        assert victim.get("/inbox/").status_code == 200


@override_settings(INBOX_TRUSTED_PROXY_COUNT=1)
def test_behind_a_named_proxy_x_forwarded_for_is_the_client(live_asgi, alice):
    """With one trusted proxy (here the test, on 127.0.0.1), its X-Forwarded-For entry is the client: the lock
    falls on that address and not on the proxy's other clients."""
    with browser(live_asgi) as proxy:
        for n in range(8):
            sign_in(proxy, "alice", f"guess-{n}", "198.51.100.7")
        assert sign_in(proxy, "alice", PASSWORD, "198.51.100.7").status_code == 429
        # Another client behind the same proxy; a spoofed entry left of the proxy's does not help the attacker.
        assert sign_in(proxy, "alice", PASSWORD, "198.51.100.8").status_code == 302
    with browser(live_asgi) as proxy:
        assert sign_in(proxy, "alice", PASSWORD, "198.51.100.99, 198.51.100.7").status_code == 429


@override_settings(INBOX_FAILED_AUTH_RATE="5/min")
def test_rotating_x_forwarded_for_does_not_escape_the_token_throttle(db):
    client = Client()
    statuses = [
        client.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer agi_wrong{n}", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
        for n in range(7)
    ]
    assert [s.status_code for s in statuses] == [401] * 5 + [429] * 2


@pytest.mark.parametrize(
    ("meta", "count", "networks", "expected"),
    [
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, 0, [], "10.0.0.2"),
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 1.2.3.4"}, 1, [], "1.2.3.4"),
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 1.2.3.4, 10.0.0.1"}, 2, [], "1.2.3.4"),
        ({"REMOTE_ADDR": "10.0.0.2"}, 1, [], "10.0.0.2"),
        (
            {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 1.2.3.4, 10.0.0.1"},
            0,
            ["10.0.0.0/8"],
            "1.2.3.4",
        ),
        ({"REMOTE_ADDR": "203.0.113.5", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, 0, ["10.0.0.0/8"], "203.0.113.5"),
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "not-an-address"}, 1, [], "10.0.0.2"),
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "::ffff:1.2.3.4"}, 1, [], "1.2.3.4"),
    ],
    ids=["default", "count1", "count2", "count-no-header", "networks", "untrusted-peer", "junk", "mapped"],
)
def test_the_address_rule(meta, count, networks, expected):
    import ipaddress

    assert address_from(meta, count=count, networks=[ipaddress.ip_network(n) for n in networks]) == expected


def test_the_settings_choose_the_rule():
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 1.2.3.4")
    assert client_address(request) == "10.0.0.2"
    with override_settings(INBOX_TRUSTED_PROXIES=["10.0.0.0/8"]):
        assert client_address(request) == "1.2.3.4"


# --- 2. failed tokens never lock out a valid one ------------------------------------------------------------


@override_settings(INBOX_FAILED_AUTH_RATE="30/min")
def test_valid_tokens_work_after_thirty_failures_from_their_address(client: Client, agent, alice):
    _, key = ApiToken.issue(alice, label="ci")
    for n in range(30):
        client.get("/api/v1/agent", HTTP_AUTHORIZATION=f"Bearer agi_wrong{n}")
    for n in range(3):
        client.get("/api/v1/items", HTTP_AUTHORIZATION=f"Token wrong-{n}")
    wrong = client.get("/api/v1/agent", HTTP_AUTHORIZATION="Bearer agi_wrong-again")
    assert wrong.status_code == 429 and "Retry-After" in wrong.headers  # failures are still throttled
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION="Token wrong-again").status_code == 429
    assert client.get("/api/v1/agent", **agent.auth).status_code == 200
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_every_way_the_project_starts_uvicorn_leaves_the_address_alone():
    """uvicorn rewrites the client's address from X-Forwarded-For for peers on 127.0.0.1 unless told not to."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in ("Procfile", "config/launcher.py", "tests/faults/cluster.py"):
        text = (root / path).read_text()
        assert text.count("uvicorn") and "--no-proxy-headers" in text, path
    assert "proxy_headers=False" in (root / "tests/conftest.py").read_text()
