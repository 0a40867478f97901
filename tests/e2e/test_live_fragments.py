"""The live front end as a browser sees it: pushes arrive as server-rendered fragments (no request per
event), every page passes its Content-Security-Policy, and an idle list stays live."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import Page, expect

from inbox.models import InboxItem, Run
from tests.e2e.conftest import item_page, open_live

pytestmark = pytest.mark.browser


def post_runs(base: str, token: str, *, runs: int, per_run: int, prefix: str = "r") -> list[Run]:
    """An agent POSTs ``runs`` interrupted runs of ``per_run`` interrupts each to the live server."""
    expires = (timezone.now() + timedelta(hours=1)).isoformat()
    ids = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as client:
        for n in range(runs):
            interrupts = [
                {
                    "id": f"i-{k}",
                    "reason": "confirmation",
                    "message": f"Wire payment {prefix}{n}-{k}?",
                    "expiresAt": expires,
                }
                for k in range(per_run)
            ]
            body = {"type": "RUN_FINISHED", "threadId": f"t-{prefix}{n}", "runId": f"{prefix}{n}"}
            response = client.post(
                "/api/v1/runs", json={**body, "outcome": {"type": "interrupt", "interrupts": interrupts}}
            )
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
    return list(Run.objects.filter(pk__in=ids))


def test_a_list_receiving_100_new_items_makes_no_request_per_item(login, live_asgi, agent, bob):
    page = open_live(login(bob), "/inbox/")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    post_runs(live_asgi, agent.token, runs=10, per_run=10)

    expect(page.locator('[data-count="open"]')).to_have_text("100")
    expect(page.locator("tr[data-item-row]")).to_have_count(50)  # the first page, in the list's own order
    expect(page.locator(".pager")).to_contain_text("1–50 of 100")
    assert InboxItem.objects.filter(status="open").count() == 100
    # The fragments came over the socket: at most a handful of requests, none per item.
    assert len(requests) <= 5, requests


def test_the_pushed_rows_follow_the_lists_filters_and_its_viewer(login, live_asgi, agent, make_agent, alice, bob):
    other = make_agent("other-bot")
    alices = open_live(login(alice), f"/inbox/?agent={agent.agent.slug}")
    bobs = open_live(login(bob), "/inbox/")

    post_runs(live_asgi, other.token, runs=1, per_run=1, prefix="o")
    mine = post_runs(live_asgi, agent.token, runs=1, per_run=1, prefix="m")[0].items.get()

    expect(alices.locator(f'tr[data-item-id="{mine.pk}"]')).to_have_count(1)
    expect(alices.locator("tr[data-item-row]")).to_have_count(1)  # the other agent's item is filtered out
    expect(bobs.locator("tr[data-item-row]")).to_have_count(2)
    expect(alices.locator('[data-count="open"]')).to_have_text("1")


PAGES = [
    "/inbox/",
    "/inbox/?tab=all",
    "{item}",
    "{run}",
    "/agents/",
    "/agents/{agent}/",
    "/audit/",
    "/audit/stats/",
    "/audit/threads/{thread}/",
    "/inbox/settings/notifications/",
]
if settings.SPECTACULAR_SETTINGS.get("SWAGGER_UI_DIST") == "SIDECAR":  # Swagger UI from the project, not a CDN
    PAGES.append("/api/docs/")

COLLECT = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sourceFile || "") + ":" + e.lineNumber);
});
"""


def violations(page: Page) -> list[str]:
    return page.evaluate("window.__csp || []")


def test_every_main_page_passes_its_content_security_policy(login, live_asgi, agent, staff, browser):
    run = post_runs(live_asgi, agent.token, runs=1, per_run=2)[0]
    item = run.items.order_by("position").first()
    # The login page, before anyone signs in.
    context = browser.new_context(base_url=live_asgi)
    anonymous = context.new_page()
    anonymous.add_init_script(COLLECT)
    response = anonymous.goto("/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    anonymous.wait_for_timeout(300)
    assert violations(anonymous) == []
    context.close()

    page = login(staff)
    page.add_init_script(COLLECT)
    urls = [
        url.format(
            item=item.get_absolute_url(), run=run.get_absolute_url(), agent=agent.agent.slug, thread=run.thread_id
        )
        for url in PAGES
    ]
    for url in urls:
        response = page.goto(url)
        assert response.status == 200, url
        policy = response.headers["content-security-policy"]
        assert "'unsafe-inline'" not in policy and "style-src 'self'" in policy, url
        page.wait_for_load_state("networkidle")
        assert violations(page) == [], url
    # A live update swaps fragments in under the same policy.
    page.goto(item_page(item))
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    page.get_by_role("button", name="Claim — I’m on it").click()
    expect(page.locator("[data-holder]")).to_have_text("You hold this item")
    assert violations(page) == []


def test_a_list_left_idle_for_over_two_minutes_still_shows_a_new_item_live(login, live_asgi, agent, bob):
    """The soak: production socket settings (the channel layer blocks in Redis per read, and a socket timeout not
    above that would kill an idle socket and lose the pushes in the gap)."""
    page = open_live(login(bob), "/inbox/")
    drops: list[str] = []
    page.on("websocket", lambda socket: drops.append(socket.url))  # a reconnect would open a new one
    deadline = time.monotonic() + 125
    while time.monotonic() < deadline:
        page.wait_for_timeout(5_000)
        assert page.locator("body").get_attribute("data-live") == "open"

    new = post_runs(live_asgi, agent.token, runs=1, per_run=1)[0].items.get()

    expect(page.locator(f'tr[data-item-id="{new.pk}"]')).to_have_count(1, timeout=2_000)
    assert drops == [], "the idle socket was dropped and reopened"
