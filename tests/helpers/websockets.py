"""The inbox websocket from a test: a logged-in user's session cookie, a socket on the real channel layer
(config.asgi), and a run body with one confirmation interrupt."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.utils import timezone

from config.asgi import application


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def open_socket(cookie: str | None = None, origin: str = "http://127.0.0.1:8000") -> WebsocketCommunicator:
    headers = [(b"origin", origin.encode())]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, "/ws/inbox/", headers=headers)


async def connected(cookie: str) -> WebsocketCommunicator:
    socket = await open_socket(cookie)
    ok, _ = await socket.connect(timeout=5)
    assert ok
    assert (await socket.receive_json_from(timeout=5))["event"] == "hello"
    return socket


def run_scenario(scenario: Callable[[], Awaitable[None]]) -> None:
    """Sync tests (the ORM and the test client stay synchronous); the websocket part runs in one loop, on
    a thread of its own: when browser tests ran earlier in the session, Playwright's event loop is still
    registered on the main thread, where ``async_to_sync`` refuses to run."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(scenario)()
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(async_to_sync(scenario)).result(timeout=60)


def confirmation_run(thread: str, run: str, minutes: float = 60) -> dict:
    expires = (timezone.now() + timedelta(minutes=minutes)).isoformat()
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": f"{run}-i1", "reason": "confirmation", "message": "Proceed?", "expiresAt": expires}],
        },
    }
