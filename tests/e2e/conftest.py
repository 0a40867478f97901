"""Shared by the browser tests: screenshots on request, and Django's sync ORM beside Playwright."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from playwright.sync_api import Page, expect

from inbox.models import Run
from tests.conftest import LOOPBACK

T = TypeVar("T")

SCREENSHOTS = os.environ.get("INBOX_SCREENSHOTS", "")


def off_loop(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a service as an agent's request or a worker would, on a thread of its own: the test's thread
    carries Playwright's event loop, where the channel layer's async_to_sync refuses to run."""

    def call() -> T:
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result(timeout=30)


def open_live(page: Page, path: str) -> Page:
    """Open a page and wait until it is live and in sync: its socket up (<body data-live="open">) and the server's
    first message in, fresh fragments when something was audited shortly before the page was rendered
    (``INBOX_LIVE_RESYNC_MARGIN_SECONDS``) or only a cursor (``#live-meta[data-cursor]``). No resync swaps the
    page's parts after that, under a click or behind a test that changes the database. A list opened on a wide
    screen shows its first item beside it (split.js), whose socket replaces the list's: that one is waited for."""
    page.goto(path)
    expect(page.locator("#split-pane[aria-busy]")).to_have_count(0)
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    expect(page.locator("#live-meta")).to_have_attribute("data-cursor", re.compile(r"^\d"))
    return page


def settled(page: Page) -> Page:
    """Wait until no CSS transition or animation is running: after a switch of colour scheme or width, a row's
    background fades for a tenth of a second, and axe measuring mid-fade sees dark text on a half-dark row."""
    page.wait_for_function(
        "() => document.getAnimations().every(a => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity)"
    )
    return page


def item_page(item, query: str = "") -> str:
    """The item page itself at any width ("Open as a page": ``?full=1``): on a wide screen a plain link to the
    item opens the list's split view instead (static/js/to_split.js)."""
    return f"{item.get_absolute_url()}?full=1{'&' + query if query else ''}"


def shot(page, name: str) -> None:
    """Save a full-page screenshot when INBOX_SCREENSHOTS=<dir> is set, for people reviewing the pages."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module", autouse=True)
def orm_beside_playwright(django_db_setup) -> Iterator[None]:
    """Playwright's sync API keeps an event loop on this thread, so Django's async guard would refuse every
    (synchronous, safe) ORM call a test makes. Asking for ``django_db_setup`` creates the test database
    before Chromium starts. Module scope: set before the database fixtures of every test of the module,
    unset after their teardown."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


def ship_orders(live_asgi: str, agent, minutes: list[int], prefix: str = "") -> list:
    """One-item runs "Ship order <n>?" posted over HTTP, expiring in ``minutes`` (the Open tab's order: soonest
    first); their items."""
    items = []
    for n, minute in enumerate(minutes, start=1):
        response = LOOPBACK.post(
            f"{live_asgi}/api/v1/runs",
            headers={"Authorization": f"Bearer {agent.token}"},
            json={
                "type": "RUN_FINISHED",
                "threadId": f"{prefix}t-{n}",
                "runId": f"{prefix}r-{n}",
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [
                        {
                            "id": f"i-{n}",
                            "reason": "confirmation",
                            "message": f"Ship order {n}?",
                            "expiresAt": (timezone.now() + timedelta(minutes=minute)).isoformat(),
                        }
                    ],
                },
            },
        )
        assert response.status_code == 201, response.text
        items.append(Run.objects.get(pk=response.json()["id"]).items.get())
    return items


@pytest.fixture
def post_run(agent):
    """POST a run to the ingest API as the agent; returns the stored Run."""

    def post(body) -> Run:
        def send():
            response = Client().post(
                "/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent.auth
            )
            assert response.status_code == 201, response.content
            return response.json()["id"]

        return Run.objects.get(pk=off_loop(send))

    return post
