"""The inbox websocket on the real Redis channel layer: who may connect, who hears what, and nothing
before (or without) a commit."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.expiry.services import expire_items, expire_sweep
from inbox.live import push as live
from inbox.models import InboxItem
from inbox.teams.reminders import reminders_send
from tests.helpers.websockets import confirmation_run, connected, open_socket, run_scenario, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def orm_beside_playwright():
    """For the same reason, Django's async guard would refuse this test's synchronous ORM calls."""
    # Module scope: set before the database fixtures of every test here, unset after their teardown.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture
def elsewhere_agent(make_agent, carol):
    """An agent of carol's team, to prove carol's socket works while she hears nothing of ops."""
    other = make_agent("elsewhere-bot")
    other.agent.teams.set([Group.objects.get(name="elsewhere")])
    return other


def test_an_anonymous_socket_is_refused(db):
    async def scenario() -> None:
        socket = await open_socket()
        ok, code = await socket.connect(timeout=5)
        assert not ok
        assert code == 4401

    run_scenario(scenario)


def test_a_socket_from_a_foreign_origin_is_refused(alice):
    cookie = session_cookie(alice)

    async def scenario() -> None:
        socket = await open_socket(cookie, origin="https://evil.example")
        ok, _ = await socket.connect(timeout=5)
        assert not ok
        await socket.disconnect()  # as the browser would: lets the denying app stop listening at once

    run_scenario(scenario)


def test_a_new_item_reaches_its_team_and_staff_and_no_one_else(agent, elsewhere_agent, ingest, alice, carol, staff):
    cookies = {user.username: session_cookie(user) for user in (alice, carol, staff)}
    post = sync_to_async(ingest)

    async def scenario() -> None:
        sockets = {name: await connected(cookie) for name, cookie in cookies.items()}
        response = await post(agent, confirmation_run("t-1", "r-1"))
        assert response.status_code == 201
        item_id = response.json()["items"][0]["id"]
        for name in ("alice", "staff"):
            message = await sockets[name].receive_json_from(timeout=5)
            assert message["event"] == "item.created"
            assert message["payload"]["item"] == item_id
            assert message["payload"]["status"] == "open"
        # carol's socket is live (she hears her own team's agent) but heard nothing of the ops item.
        await post(elsewhere_agent, confirmation_run("t-2", "r-2"))
        message = await sockets["carol"].receive_json_from(timeout=5)
        assert message["event"] == "item.created"
        assert message["payload"]["item"] != item_id
        for socket in sockets.values():
            await socket.disconnect()

    run_scenario(scenario)


def test_each_interrupt_of_a_run_arrives_as_its_own_event_in_order(agent, ingest, alice):
    run = confirmation_run("t-1", "r-1")
    run["outcome"]["interrupts"] = [{**run["outcome"]["interrupts"][0], "id": f"i-{n}"} for n in range(4)]
    cookie = session_cookie(alice)
    post = sync_to_async(ingest)

    async def scenario() -> None:
        socket = await connected(cookie)
        response = await post(agent, run)
        assert response.status_code == 201
        received = [await socket.receive_json_from(timeout=5) for _ in range(4)]
        assert [message["event"] for message in received] == ["item.created"] * 4
        assert [message["payload"]["item"] for message in received] == [i["id"] for i in response.json()["items"]]
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()

    run_scenario(scenario)


def test_a_decision_reaches_the_other_approvers_with_who_decided(agent, ingest, alice, bob):
    response = ingest(agent, confirmation_run("t-1", "r-1"))
    item_id = response.json()["items"][0]["id"]
    cookie = session_cookie(alice)
    decide = sync_to_async(decision_submit)

    async def scenario() -> None:
        socket = await connected(cookie)
        await decide(item_id=item_id, user=bob, status="resolved", payload={"approved": True})
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.decided"
        assert message["payload"]["item"] == item_id
        assert message["payload"]["decidedBy"] == "bob"
        assert message["payload"]["status"] == "resolved"
        # The run's last item was decided: the resume is created and its state pushed too.
        message = await socket.receive_json_from(timeout=5)
        assert (message["event"], message["payload"]["state"]) == ("resume.state", "pending")
        await socket.disconnect()

    run_scenario(scenario)


def test_expiry_and_reminders_reach_the_team(agent, ingest, alice, settings):
    settings.INBOX_REMINDER_LEAD_SECONDS = 600
    posted = ingest(agent, confirmation_run("t-1", "r-1", minutes=5)).json()
    soon, run_id = posted["items"][0]["id"], posted["id"]
    cookie = session_cookie(alice)

    async def scenario() -> None:
        socket = await connected(cookie)
        assert await sync_to_async(reminders_send)() == 1
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.reminder"
        assert message["payload"]["item"] == soon
        assert message["payload"]["message"] == "“Proceed?” (confirmation) expires in 5 minutes."

        assert await sync_to_async(expire_sweep)(now=timezone.now() + timedelta(minutes=6)) == 1
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.expired"
        assert message["payload"] == {
            "item": soon,
            "run": run_id,
            "status": "expired",
            "note": "expiresAt passed before it was decided",
        }
        await socket.disconnect()

    run_scenario(scenario)


def test_an_item_page_can_subscribe_to_an_item_its_user_may_see(agent, ingest, alice, carol):
    item_id = ingest(agent, confirmation_run("t-1", "r-1")).json()["items"][0]["id"]
    alice_cookie, carol_cookie = session_cookie(alice), session_cookie(carol)
    send = sync_to_async(live.send_now)

    async def scenario() -> None:
        alice_socket, carol_socket = await connected(alice_cookie), await connected(carol_cookie)
        await alice_socket.send_json_to({"subscribe": {"item": item_id}})
        assert await alice_socket.receive_json_from(timeout=5) == {"event": "subscribed", "payload": {"item": item_id}}
        await carol_socket.send_json_to({"subscribe": {"item": item_id}})
        refused = await carol_socket.receive_json_from(timeout=5)
        assert refused["event"] == "error"
        assert refused["payload"] == {"field": "subscribe.item", "message": f"No item {item_id} that you may see."}

        await send([f"inbox.item.{item_id}"], "item.claimed", {"item": item_id, "claimedBy": "bob"})
        assert (await alice_socket.receive_json_from(timeout=5))["event"] == "item.claimed"
        await carol_socket.send_json_to({"ping": 1})
        assert (await carol_socket.receive_json_from(timeout=5))["event"] == "pong"  # nothing came before it
        await alice_socket.disconnect()
        await carol_socket.disconnect()

    run_scenario(scenario)


def test_a_message_for_several_groups_of_one_socket_arrives_once(agent, ingest, alice):
    response = ingest(agent, confirmation_run("t-1", "r-1")).json()
    item_id, run_id = response["items"][0]["id"], response["id"]
    cookie = session_cookie(alice)
    send = sync_to_async(live.send_now)

    async def scenario() -> None:
        socket = await connected(cookie)
        await socket.send_json_to({"subscribe": {"item": item_id}})
        await socket.receive_json_from(timeout=5)
        await socket.send_json_to({"subscribe": {"run": run_id}})
        await socket.receive_json_from(timeout=5)

        await send(
            live.groups_for(agent_id=agent.agent.pk, item_id=item_id, run_id=run_id), "item.claimed", {"item": item_id}
        )
        await send([f"inbox.run.{run_id}"], "marker", {})
        assert (await socket.receive_json_from(timeout=5))["event"] == "item.claimed"
        assert (await socket.receive_json_from(timeout=5))["event"] == "marker"
        await socket.disconnect()

    run_scenario(scenario)


def test_nothing_is_sent_for_a_rolled_back_transaction(agent, ingest, alice):
    item_id = ingest(agent, confirmation_run("t-1", "r-1")).json()["items"][0]["id"]
    cookie = session_cookie(alice)

    def expire_then_fail() -> None:
        with pytest.raises(RuntimeError), transaction.atomic():
            expire_items(items_qs=InboxItem.objects.filter(pk=item_id), now=timezone.now(), note="test")
            raise RuntimeError("something later in the same transaction failed")

    async def scenario() -> None:
        socket = await connected(cookie)
        await sync_to_async(expire_then_fail)()
        await sync_to_async(live.send_now)([f"inbox.agent.{agent.agent.pk}"], "marker", {})
        assert (await socket.receive_json_from(timeout=5))["event"] == "marker"
        await socket.disconnect()

    run_scenario(scenario)
    assert InboxItem.objects.get(pk=item_id).status == "open"


def test_bad_messages_get_an_error_naming_the_field(alice):
    cookie = session_cookie(alice)

    async def scenario() -> None:
        socket = await connected(cookie)
        await socket.send_to(text_data="not json")
        assert (await socket.receive_json_from(timeout=5))["payload"]["message"] == "Not valid JSON."
        await socket.send_json_to({"subscribe": {"thread": 1}})
        assert (await socket.receive_json_from(timeout=5))["payload"]["field"] == "subscribe.thread"
        await socket.send_json_to({"subscribe": {"item": "12; drop"}})
        assert (await socket.receive_json_from(timeout=5))["payload"]["field"] == "subscribe.item"
        await socket.send_json_to({"hello": 1})
        assert (await socket.receive_json_from(timeout=5))["payload"]["field"] == "subscribe"
        await socket.disconnect()

    run_scenario(scenario)


def test_a_big_sweep_sends_each_audience_one_summary_instead_of_a_message_per_item(agent, ingest, alice, staff):
    for n in range(3):
        response = ingest(
            agent,
            {
                "type": "RUN_FINISHED",
                "threadId": f"t-{n}",
                "runId": f"r-{n}",
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [
                        {
                            "id": f"i-{k}",
                            "reason": "confirmation",
                            "expiresAt": (timezone.now() + timedelta(minutes=5)).isoformat(),
                        }
                        for k in range(70)
                    ],
                },
            },
        )
        assert response.status_code == 201
    cookies = [session_cookie(alice), session_cookie(staff)]

    async def scenario() -> None:
        sockets = [await connected(cookie) for cookie in cookies]
        expired = await sync_to_async(expire_sweep)(now=timezone.now() + timedelta(minutes=6))
        assert expired == 210
        await sync_to_async(live.send_now)([f"inbox.agent.{agent.agent.pk}", "inbox.staff"], "marker", {})
        for socket in sockets:
            message = await socket.receive_json_from(timeout=5)
            assert message == {
                "event": "items.expired",
                "payload": {"count": 210, "note": "expiresAt passed before it was decided"},
            }
            assert (await socket.receive_json_from(timeout=5))["event"] == "marker"
            await socket.disconnect()

    run_scenario(scenario)


def test_a_push_to_a_browser_already_gone_is_dropped_without_ending_the_consumer(agent, ingest, alice):
    """uvicorn raises ClientDisconnected (an OSError) for a send after the browser closed the socket; the push
    is dropped and the consumer lives on to handle the disconnect, instead of dying with a traceback."""
    import asyncio

    from uvicorn.protocols.utils import ClientDisconnected

    cookie = session_cookie(alice)
    post = sync_to_async(ingest)
    gone = {"yes": False}

    class Browser(asyncio.Queue):  # where the consumer's messages go: raises as uvicorn does once it is closed
        async def put(self, message):
            if gone["yes"] and message["type"] == "websocket.send":
                raise ClientDisconnected
            await super().put(message)

    async def scenario() -> None:
        socket = await open_socket(cookie)
        socket._output_queue = Browser()
        assert (await socket.connect(timeout=5))[0]
        assert (await socket.receive_json_from(timeout=5))["event"] == "hello"
        gone["yes"] = True
        assert (await post(agent, confirmation_run("t-gone", "r-1"))).status_code == 201
        assert await socket.receive_nothing(timeout=0.3)
        assert not socket.future.done()  # the consumer did not end with the error
        gone["yes"] = False
        assert (await post(agent, confirmation_run("t-back", "r-1"))).status_code == 201
        assert (await socket.receive_json_from(timeout=5))["event"] == "item.created"
        await socket.disconnect()

    run_scenario(scenario)


def test_a_channel_layer_that_fails_fails_no_write_and_is_logged(agent, ingest, monkeypatch, caplog):
    class DownLayer:
        async def group_send(self, group: str, message: dict) -> None:
            raise ConnectionError("redis is down")

    monkeypatch.setattr(live, "get_channel_layer", DownLayer)
    response = ingest(agent, confirmation_run("t-down", "r-1"))
    assert response.status_code == 201
    assert InboxItem.objects.filter(thread__thread_id="t-down").count() == 1
    assert "live push of 1 message(s) failed" in caplog.text


def test_a_push_that_fails_once_is_sent_on_the_second_try(monkeypatch, caplog):
    sent: list[str] = []
    failures = {"left": 1}

    class FlakyLayer:
        async def group_send(self, group: str, message: dict) -> None:
            if failures["left"]:
                failures["left"] -= 1
                raise ConnectionError("connection reset by peer")
            sent.append(message["event"])

    monkeypatch.setattr(live, "get_channel_layer", FlakyLayer)
    live.send_now(["inbox.staff"], "item.created", {"item": 1})
    assert sent == ["item.created"]
    assert "failed once" in caplog.text
    assert "live push of 1 message(s) failed\n" not in caplog.text


def test_a_push_from_a_thread_whose_event_loop_is_running_is_sent(monkeypatch, caplog):
    """A notebook, or a script driving a browser with Playwright's sync API, runs sync code inside a running loop,
    where ``async_to_sync`` refuses to work."""
    sent: list[str] = []

    class RecordingLayer:
        async def group_send(self, group: str, message: dict) -> None:
            sent.append(message["event"])

    monkeypatch.setattr(live, "get_channel_layer", RecordingLayer)

    async def inside_a_running_loop() -> None:
        live.send_now(["inbox.staff"], "item.created", {"item": 1})

    with ThreadPoolExecutor(max_workers=1) as pool:  # a thread with no loop of its own yet, whatever this one holds
        pool.submit(asyncio.run, inside_a_running_loop()).result(timeout=10)
    assert sent == ["item.created"]
    assert "failed" not in caplog.text
