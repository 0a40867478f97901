"""Any screen: no page scrolls sideways at 390 px, and axe-core (through axe-playwright-python) finds no
critical or serious violation on the pages of the issue, at 1280×800 and 390×844, light and dark.

Set INBOX_SCREENSHOTS=<dir> to keep a screenshot of every page at every size and scheme."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.models import Resume
from tests.conftest import PASSWORD, spec_example
from tests.e2e.conftest import off_loop, shot

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def _finished(thread: str, run: str, interrupt: dict) -> dict:
    interrupt = {"expiresAt": (timezone.now() + timedelta(hours=2)).isoformat(), **interrupt}
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    }


@pytest.fixture
def pages(agent, staff, alice, post_run) -> dict[str, str]:
    """One of every page the issue lists, with data in it."""
    tool = post_run(spec_example("approve_with_edits"))
    confirmation = post_run(
        _finished("t-c", "r-c", {"id": "c-1", "reason": "confirmation", "message": "Restart the cluster?"})
    )
    filing = copy.deepcopy(spec_example("non_tool_input_request"))
    filing["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    form = post_run(filing)
    nested = post_run(
        _finished(
            "t-n",
            "r-n",
            {
                "id": "n-1",
                "reason": "input_required",
                "message": "Who attends?",
                "responseSchema": {
                    "type": "object",
                    "properties": {
                        "event": {"type": "string", "title": "Event"},
                        "people": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                                "required": ["name"],
                            },
                        },
                    },
                    "required": ["event"],
                },
            },
        ),
    )
    unknown = post_run(
        _finished("t-u", "r-u", {"id": "u-1", "reason": "ask_user", "message": "What should I tell them?"})
    )
    delivered = post_run(
        _finished("t-d", "r-d", {"id": "d-1", "reason": "confirmation", "message": "Archive the logs?"})
    )
    item = delivered.items.get()
    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=delivered).update(state="delivered", attempts=1)
    tool_item = tool.items.get()
    return {
        "inbox": "/inbox/",
        "decided": "/inbox/?tab=decided",
        "item-tool-call": tool_item.get_absolute_url(),
        "item-confirmation": confirmation.items.get().get_absolute_url(),
        "item-input-form": form.items.get().get_absolute_url(),
        "item-nested-form": nested.items.get().get_absolute_url(),
        "item-unknown": unknown.items.get().get_absolute_url(),
        "item-decided": item.get_absolute_url(),
        "run-open": confirmation.get_absolute_url(),
        "run-delivered": delivered.get_absolute_url(),
        "agents": "/agents/",
        "agent": f"/agents/{agent.agent.slug}/",
        "thread": f"/audit/threads/{tool.thread_id}/",
        "audit-log": "/audit/",
        "tool-call-trail": f"/audit/tool-calls/{tool_item.tool_call_id}/",
        "stats": "/audit/stats/",
        "notification-settings": "/inbox/settings/notifications/",
    }


def _login(browser, live_asgi, user, viewport, scheme):
    context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    if user is not None:
        page.fill("input[name=username]", user.get_username())
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return context, page


def _sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_no_page_scrolls_sideways_on_a_phone(browser, live_asgi, staff, pages):
    context, page = _login(browser, live_asgi, None, SIZES["phone"], "light")
    assert _sideways(page) <= 0, "login"
    context.close()
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    wide = {}
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        wide[name] = _sideways(page)
    context.close()
    assert {name: extra for name, extra in wide.items() if extra > 0} == {}


def test_the_list_is_cards_and_the_decision_comes_first_on_a_phone(browser, live_asgi, staff, pages):
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.goto(pages["inbox"])
    row = page.locator("tr[data-item-row]").first
    expect(row).to_have_css("display", "grid")  # waits out a live re-render of the rows
    page.goto(pages["item-confirmation"])
    decision = page.locator(".decision-card").bounding_box()
    conversation = page.get_by_role("heading", name="Conversation").bounding_box()
    assert decision["y"] < conversation["y"]
    context.close()


def test_the_audit_log_is_cards_on_a_phone_with_every_column_readable(browser, live_asgi, staff, pages):
    """The details' one long line squeezed the other columns of the log's table to a letter each on a phone (no
    sideways scroll, so nothing else caught it): each event is a card, its actor and date on one line."""
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "dark")
    page.goto(pages["audit-log"])
    row = page.locator("#audit-events tbody tr").first
    expect(row).to_have_css("display", "grid")
    for column in ("au-col-when", "au-col-actor", "au-col-object"):
        box = row.locator(f"td.{column}").bounding_box()
        assert box["width"] > 80 and box["height"] < 60, (column, box)
    context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_screenshots_of_every_page(browser, live_asgi, staff, pages, size, scheme):
    context, page = _login(browser, live_asgi, None, SIZES[size], scheme)
    shot(page, f"screen-{size}-{scheme}-login")
    context.close()
    context, page = _login(browser, live_asgi, staff, SIZES[size], scheme)
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        shot(page, f"screen-{size}-{scheme}-{name}")
    context.close()


def _axe_problems(axe, page) -> list[tuple[str, str, str]]:
    results = axe.run(page)
    return [
        (violation["id"], violation["impact"], ", ".join(str(node["target"]) for node in violation["nodes"][:5]))
        for violation in results.response["violations"]
        if violation["impact"] in ("critical", "serious")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_axe_finds_nothing_critical_or_serious(browser, live_asgi, staff, pages, size, scheme):
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    found = {}
    context, page = _login(browser, live_asgi, None, SIZES[size], scheme)
    found["login"] = _axe_problems(axe, page)
    context.close()
    context, page = _login(browser, live_asgi, staff, SIZES[size], scheme)
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        page.wait_for_load_state("networkidle")
        found[name] = _axe_problems(axe, page)
    context.close()
    bad = {name: problems for name, problems in found.items() if problems}
    assert bad == {}, json.dumps(bad, indent=1)


def test_on_a_phone_the_scrolling_tabs_take_the_keyboard_and_keep_their_landmark(browser, live_asgi, staff, pages):
    """a11y.js gave every box that scrolls sideways role="region"; on the list's <nav> tabs and the audit log's
    filter <form> that is a role axe does not allow (a minor finding, so the test above let it through): they
    keep their own roles, and still take the keyboard."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.set_viewport_size({"width": 320, "height": 800})  # narrower than the tabs on every page with a list
    disallowed = {}
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        page.wait_for_load_state("networkidle")
        tabs = page.locator("nav.tabs")
        if tabs.count() and tabs.evaluate("nav => nav.scrollWidth > nav.clientWidth + 1"):
            expect(tabs).to_have_attribute("tabindex", "0")
            assert tabs.get_attribute("role") is None, name
        found = [
            str(node["target"])
            for v in axe.run(page).response["violations"]
            if v["id"] == "aria-allowed-role"
            for node in v["nodes"]
        ]
        if found:
            disallowed[name] = found
    context.close()
    assert disallowed == {}


def test_axe_finds_nothing_on_the_empty_inbox(browser, live_asgi, staff):
    from axe_playwright_python.sync_playwright import Axe

    context, page = _login(browser, live_asgi, staff, SIZES["wide"], "light")
    page.goto("/inbox/")
    assert _axe_problems(Axe(), page) == []
    context.close()
