"""The review-quality page in a real browser: its figures, as wide and phone, light and dark, with no sideways
scroll and nothing critical or serious for axe; and in the list, what a person does is recorded as it happened
(an item opened in the split view is seen; a key on the list's selection is a list-key decision).

Set INBOX_SCREENSHOTS=<dir> to keep the screenshots."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from inbox.models import Decision, DecisionVia, InboxItem, ItemSeen
from tests.audit.test_review_quality import History, history  # noqa: F401  (the seeded history)
from tests.e2e.conftest import shot
from tests.factories import InboxItemFactory, RunFactory
from tests.helpers.browser import sign_in

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_the_review_quality_page_reads_at_a_glance(browser, live_asgi, history: History, size, scheme) -> None:  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(base_url=live_asgi, viewport=SIZES[size], color_scheme=scheme)
    try:
        page = sign_in(context, history.staff)
        page.goto("/audit/")
        page.click(".au-subnav >> text=Review quality")
        expect(page.locator("h1")).to_have_text("Review quality")
        alice = page.locator("#review-approvers tr[data-key='alice']")
        expect(alice.locator("[data-figure=median]")).to_have_text("6.0 s")
        expect(alice.locator("[data-figure=fast]")).to_contain_text("50%")
        expect(alice.locator("[data-figure=streak]")).to_have_text("4")
        expect(alice.locator(".rq-how-words")).to_contain_text("2 without the arguments on screen")
        assert alice.locator(".rq-stack rect").count() == 1 + 4  # the track and the four kinds
        assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        problems = [
            (violation["id"], violation["impact"], [str(node["target"]) for node in violation["nodes"][:3]])
            for violation in Axe().run(page).response["violations"]
            if violation["impact"] in ("critical", "serious")
        ]
        assert problems == []
        shot(page, f"review-quality-{size}-{scheme}")
    finally:
        context.close()


def test_the_split_view_records_what_is_seen_and_a_list_key_how_it_was_decided(
    browser,
    live_asgi,
    history: History,  # noqa: F811
) -> None:
    first, second = (
        InboxItemFactory(run=RunFactory(agent=history.mailer), message=f"Send mail {n}?", response_schema=None)
        for n in (1, 2)
    )
    context = browser.new_context(base_url=live_asgi, viewport={"width": 1360, "height": 900})
    try:
        page = sign_in(context, history.alice)
        fetched_ahead: list[str] = []
        page.on("request", lambda r: r.headers.get("x-pane-prefetch") and fetched_ahead.append(r.url))
        page.goto(f"/inbox/?item={first.pk}")  # the split view, showing the first item
        expect(page.locator(f"[data-pane-item][data-item-id='{first.pk}']")).to_be_visible()
        assert ItemSeen.objects.filter(item=first, user=history.alice).exists()
        # The pane of the item after it is fetched ahead, and is not seen until it is shown.
        for url in fetched_ahead:
            pk = int(url.rstrip("/").rsplit("/", 1)[1])
            assert not ItemSeen.objects.filter(item_id=pk, user=history.alice).exists()

        # j until the list's selection is on the second item (the split view shows it), then x, A: a list key.
        for _ in range(4):
            if page.locator("tr.is-selected").get_attribute("data-item-id") == str(second.pk):
                break
            page.keyboard.press("j")
        expect(page.locator("tr.is-selected")).to_have_attribute("data-item-id", str(second.pk))
        expect(page.locator(f"[data-pane-item][data-item-id='{second.pk}']")).to_be_visible()
        page.keyboard.press("x")
        page.keyboard.press("Shift+A")
        expect(page.locator(f"tr[data-item-id='{second.pk}']")).to_have_count(0)
        assert Decision.objects.get(item=second).via == DecisionVia.LIST_KEY
        assert ItemSeen.objects.filter(item=second, user=history.alice).exists()
        second.refresh_from_db()
        assert second.status == InboxItem.Status.RESOLVED
    finally:
        context.close()
