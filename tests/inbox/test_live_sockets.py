"""The inbox websocket over time, on the real Redis channel layer: what a socket hears follows what its
user may see *now* (teams, staff flag, logout), an idle socket stays up past the layer's blocking reads,
a page socket gets HTML fragments rendered for its user, and a handshake while Redis is down is refused
with a 503-class close."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.test import Client

from config.asgi import application
from inbox.live import push as live
from tests.conftest import free_port
from tests.helpers.websockets import confirmation_run as body
from tests.helpers.websockets import connected, session_cookie
from tests.helpers.websockets import run_scenario as run_async

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def orm_beside_playwright():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


def page_socket(cookie: str, query: str) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://127.0.0.1:8000"), (b"cookie", cookie.encode())]
    return WebsocketCommunicator(application, f"/ws/inbox/?{query}", headers=headers)


def test_a_user_removed_from_the_team_stops_hearing_its_pushes_at_once(agent, ingest, alice):
    cookie = session_cookie(alice)
    post = sync_to_async(ingest)
    team = Group.objects.get(name="ops")

    async def scenario() -> None:
        socket = await connected(cookie)
        assert (await post(agent, body("t-1", "r-1"))).status_code == 201
        assert (await socket.receive_json_from(timeout=5))["event"] == "item.created"

        await sync_to_async(alice.groups.remove)(team)  # the admin takes alice off the team
        assert (await socket.receive_json_from(timeout=5))["event"] == "membership.changed"
        await post(agent, body("t-2", "r-2"))
        await sync_to_async(live.send_now)([f"inbox.user.{alice.pk}"], "marker", {})
        assert (await socket.receive_json_from(timeout=5))["event"] == "marker"  # nothing of ops before it

        await sync_to_async(team.user_set.add)(alice)  # and back, from the team's side
        assert (await socket.receive_json_from(timeout=5))["event"] == "membership.changed"
        await post(agent, body("t-3", "r-3"))
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.created"
        await socket.disconnect()

    run_async(scenario)


def test_an_agent_moved_to_another_team_is_no_longer_heard_by_the_old_team(agent, ingest, alice):
    cookie = session_cookie(alice)
    post = sync_to_async(ingest)

    async def scenario() -> None:
        socket = await connected(cookie)
        await sync_to_async(agent.agent.teams.set)([Group.objects.create(name="elsewhere-team")])
        assert (await socket.receive_json_from(timeout=5))["event"] == "membership.changed"
        await post(agent, body("t-1", "r-1"))
        await sync_to_async(live.send_now)([f"inbox.user.{alice.pk}"], "marker", {})
        assert (await socket.receive_json_from(timeout=5))["event"] == "marker"
        await socket.disconnect()

    run_async(scenario)


def test_logging_out_closes_that_sessions_sockets_only(alice):
    browser, other_browser = Client(), Client()
    browser.force_login(alice)
    other_browser.force_login(alice)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    other_cookie = f"sessionid={other_browser.cookies['sessionid'].value}"

    async def scenario() -> None:
        socket, other = await connected(cookie), await connected(other_cookie)
        response = await sync_to_async(browser.post)("/accounts/logout/")
        assert response.status_code == 302
        assert (await socket.receive_output(timeout=5))["type"] == "websocket.close"
        await other.send_json_to({"ping": 1})
        assert (await other.receive_json_from(timeout=5))["event"] == "pong"
        await other.disconnect()

    run_async(scenario)


def test_a_page_socket_gets_its_rows_as_html_rendered_for_its_user(agent, ingest, alice):
    cookie = session_cookie(alice)
    post = sync_to_async(ingest)

    async def scenario() -> None:
        socket = page_socket(cookie, "view=list&since=9999999999")
        ok, _ = await socket.connect(timeout=5)
        assert ok
        # Nothing changed since the page was rendered: only its cursor, moved on (the page is in sync).
        synced = await socket.receive_from(timeout=5)
        assert synced.startswith('<span id="live-meta"') and synced.count("<") == 2 and 'data-cursor="' in synced
        assert await socket.receive_nothing(timeout=0.3)
        response = await post(agent, body("t-1", "r-1"))
        item_id = response.json()["items"][0]["id"]
        html = await socket.receive_from(timeout=5)
        assert 'id="item-rows"' in html and 'hx-swap-oob="true"' in html
        assert f'data-item-id="{item_id}"' in html and "live-flash" in html
        assert 'data-count="open">1</span>' in html
        assert 'data-last-event="item.created"' in html
        await socket.disconnect()

    run_async(scenario)


def test_an_item_page_socket_closes_when_its_item_is_no_longer_visible(agent, ingest, alice):
    item_id = ingest(agent, body("t-1", "r-1")).json()["items"][0]["id"]
    cookie = session_cookie(alice)
    team = Group.objects.get(name="ops")

    async def scenario() -> None:
        socket = page_socket(cookie, f"view=item&item={item_id}&status=open")
        ok, _ = await socket.connect(timeout=5)
        assert ok
        await socket.receive_from(timeout=5)  # fresh fragments: the item was just posted
        await sync_to_async(team.user_set.remove)(alice)
        closed = await socket.receive_output(timeout=5)
        assert (closed["type"], closed["code"]) == ("websocket.close", 4404)

    run_async(scenario)


def test_an_idle_socket_outlives_the_layers_blocking_reads(alice, agent, ingest):
    """channels-redis blocks 5 s per read; with redis-py's default 5 s socket timeout every idle consumer
    died at the first read. Idle for three reads, the socket still hears the next push."""
    cookie = session_cookie(alice)
    post = sync_to_async(ingest)

    async def scenario() -> None:
        socket = await connected(cookie)
        assert await socket.receive_nothing(timeout=16, interval=1)
        assert (await post(agent, body("t-1", "r-1"))).status_code == 201
        assert (await socket.receive_json_from(timeout=5))["event"] == "item.created"
        await socket.disconnect()

    run_async(scenario)


def test_a_handshake_while_redis_is_down_is_a_try_again_later_close(alice, settings):
    cookie = session_cookie(alice)
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": f"redis://127.0.0.1:{free_port()}/0", "socket_connect_timeout": 1}]},
        }
    }
    from channels.layers import channel_layers

    channel_layers.backends.clear()

    async def scenario() -> None:
        socket = page_socket(cookie, "view=list")
        ok, code = await socket.connect(timeout=10)
        # Refused before it is accepted (not an HTTP 500): the page never sees an open socket, so it keeps backing off.
        assert (ok, code) == (False, 1013)

    run_async(scenario)
