"""A page open through a Redis outage: no reconnect storm, no traceback per attempt, and back within a few
seconds of Redis's return. The channel layer runs on a redis-server of this test's own, stopped and started
again on the same port (sessions and the rest of the suite keep theirs)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from inbox.web import consumers
from tests.conftest import free_port
from tests.e2e.conftest import open_live
from tests.helpers.redis_server import RedisServer

pytestmark = pytest.mark.browser

OUTAGE_SECONDS = 12


@pytest.fixture
def layer_redis(settings, tmp_path, monkeypatch) -> Iterator[RedisServer]:
    from channels.layers import channel_layers

    monkeypatch.setattr(consumers, "_outage_logged", False)  # another test's outage in this process is over

    server = RedisServer(free_port(), tmp_path).start()
    layer = settings.CHANNEL_LAYERS["default"]
    host = {**layer["CONFIG"]["hosts"][0], "address": server.url, "socket_connect_timeout": 1}
    settings.CHANNEL_LAYERS = {"default": {**layer, "CONFIG": {**layer["CONFIG"], "hosts": [host]}}}
    channel_layers.backends.clear()
    yield server
    server.stop()


def _attempts(page) -> int:
    return int(page.locator("body").get_attribute("data-live-attempts") or 0)


def test_a_page_backs_off_through_a_redis_outage_and_is_back_soon_after(login, bob, layer_redis, caplog):
    caplog.set_level(logging.WARNING)
    page = open_live(login(bob), "/inbox/")

    layer_redis.stop()
    expect(page.locator("body")).to_have_attribute("data-live", "closed")
    before = _attempts(page)
    time.sleep(OUTAGE_SECONDS)
    during = _attempts(page) - before
    # Capped backoff from 0.5 s to 5 s: about 7 attempts in 12 s. A server that accepted and then closed each
    # handshake would reset the page's backoff on every open, and the attempts would be many more.
    assert 2 <= during <= 8, f"{during} reconnect attempts in {OUTAGE_SECONDS} s"
    expect(page.locator("body")).not_to_have_attribute("data-live", "open")

    layer_redis.start()
    back = time.monotonic()
    expect(page.locator("body")).to_have_attribute("data-live", "open", timeout=20_000)
    took = time.monotonic() - back
    # The backoff is capped at 5 s, so the page tries again within 5 s of Redis's return; allow that try to land
    # too early and one more (on a loaded machine the handshake alone is slow). Uncapped, it would take far longer.
    assert took < 11, f"the page reconnected {took:.1f} s after Redis returned"

    assert "Exception in ASGI application" not in caplog.text
    outage_lines = [r for r in caplog.records if "channel layer (Redis) is unreachable" in r.getMessage()]
    assert len(outage_lines) == 1, [r.getMessage() for r in caplog.records]
