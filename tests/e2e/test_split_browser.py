"""The list's split view on a wide screen: the list on the left, the selected item on the right, the address bar
following the selection; deciding by keyboard moves on without loading a page; back, forward and reload show
the same item; live updates reach the item shown; a phone keeps one column."""

from __future__ import annotations

import copy
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem
from tests.conftest import spec_example
from tests.e2e.conftest import off_loop, open_live, ship_orders

pytestmark = pytest.mark.browser

WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def eleven(live_asgi, agent) -> list[InboxItem]:
    return ship_orders(live_asgi, agent, [10 + n for n in range(1, 12)])


def _pane(page, item: InboxItem):
    return page.locator(f'#split-pane [data-pane-item][data-item-id="{item.pk}"]')


def _at(page, item: InboxItem) -> None:
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={item.pk}$"))


def _fetched(page, path: str) -> None:
    """Wait until the page has fetched ``path`` (its Resource Timing entry: the response is in)."""
    page.evaluate(
        """async (path) => {
          const done = () => performance.getEntriesByType("resource").some((entry) => entry.name.endsWith(path));
          while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
        }""",
        path,
    )


def _wide(login, user):
    page = login(user)
    page.set_viewport_size(WIDE)
    return page


def test_ten_decisions_by_keyboard_alone_move_on_in_place_with_the_address_history_and_focus(login, alice, eleven):
    page = _wide(login, alice)
    page.goto("/inbox/")
    # The split view opens on the first item, its row selected, the address naming it.
    expect(_pane(page, eleven[0])).to_be_visible()
    _at(page, eleven[0])
    expect(page.locator(f'tr[data-item-row][data-item-id="{eleven[0].pk}"]')).to_have_class(
        "row-open is-selected is-shown"
    )
    page.evaluate("window.loadedOnce = true")  # gone if any step loads a page
    page.keyboard.press("Enter")
    expect(page.locator("#split-pane #item-heading")).to_be_focused()
    start = page.evaluate("history.length")

    for n, item in enumerate(eleven[:10]):
        following = eleven[n + 1]
        page.keyboard.press("a")
        expect(_pane(page, following)).to_be_visible()
        expect(page.locator("#split-pane #item-heading")).to_have_text(f"Ship order {n + 2}?")
        expect(page.locator("#split-pane .flash-success")).to_contain_text(f"Approved: “Ship order {n + 1}?”")
        _at(page, following)
        expect(page.locator("#split-pane #item-heading")).to_be_focused()
        assert page.evaluate("history.length") == start + n + 1
        # The decided row leaves the list (the socket that follows the pane), the next one is marked as shown.
        expect(page.locator(f'tr[data-item-row][data-item-id="{item.pk}"]')).to_have_count(0)
        expect(page.locator(f'tr[data-item-row][data-item-id="{following.pk}"]')).to_have_class(
            "row-open is-selected is-shown"
        )
    assert page.evaluate("window.loadedOnce") is True
    statuses = {item.pk: item.status for item in InboxItem.objects.filter(pk__in=[i.pk for i in eleven])}
    assert [statuses[item.pk] for item in eleven] == ["resolved"] * 10 + ["open"]
    assert all(item.response_payload == {"approved": True} for item in InboxItem.objects.filter(status="resolved"))

    # Back shows the item decided last in the pane (decided, its form gone), forward the open one again.
    page.go_back()
    _at(page, eleven[9])
    expect(_pane(page, eleven[9]).locator(f'[data-item-status="{eleven[9].pk}"]').first).to_have_text("Approved")
    page.go_forward()
    _at(page, eleven[10])
    expect(_pane(page, eleven[10]).locator('button[data-action="approve"]')).to_be_enabled()
    assert page.evaluate("window.loadedOnce") is True

    # A reload (and so a shared link) shows the same item beside the list.
    page.reload()
    expect(_pane(page, eleven[10])).to_be_visible()
    expect(page.locator(f'tr[data-item-row][data-item-id="{eleven[10].pk}"]')).to_have_class(
        "row-open is-selected is-shown"
    )


def test_a_click_shows_the_item_beside_the_list_and_the_next_one_is_fetched_ahead_for_moving_on_and_deciding(
    login, alice, eleven, settings
):
    settings.INBOX_UNDO_SECONDS = 30  # the live server decides in this process: a decision can be undone
    page = open_live(_wide(login, alice), "/inbox/")
    requests = []
    page.on("request", lambda request: requests.append(request))
    page.locator(f'tr[data-item-id="{eleven[2].pk}"] .row-link').click()
    expect(_pane(page, eleven[2])).to_be_visible()
    expect(page.locator("h1").first).to_have_text("Inbox")  # still the list page
    _at(page, eleven[2])
    # The next item's pane was asked for before anyone went there; going there asks for nothing more.
    next_path = f"/inbox/items/{eleven[3].pk}/"
    _fetched(page, next_path)
    before = len([r for r in requests if r.url.endswith(next_path)])
    page.locator("#split-pane [data-triage-next]").click()
    expect(_pane(page, eleven[3])).to_be_visible()
    assert len([r for r in requests if r.url.endswith(next_path)]) == before
    _at(page, eleven[3])

    # Deciding goes on to the pane fetched ahead, not fetched again (the browser says it is seen now, as for a move),
    # its words shown above the item.
    after_path = f"/inbox/items/{eleven[4].pk}/"
    _fetched(page, after_path)
    page.keyboard.press("d")
    expect(_pane(page, eleven[4])).to_be_visible()
    expect(page.locator("#split-pane [data-undo-toast]")).to_contain_text("Denied: “Ship order 4?”")
    assert len([r for r in requests if r.method == "GET" and after_path in r.url]) == 1
    _at(page, eleven[4])
    assert InboxItem.objects.get(pk=eleven[3].pk).response_payload == {"approved": False}
    # Its socket watches the run just decided, as the item page reached by deciding does (the chain).
    expect(page.locator("body")).to_have_attribute("data-live-url", re.compile(rf"after={eleven[3].run_id}&chain=1"))

    # u takes the decision back while its Undo shows: the item is open again, beside the list.
    page.keyboard.press("u")
    expect(_pane(page, eleven[3]).locator('button[data-action="deny"]')).to_be_enabled()
    _at(page, eleven[3])
    assert InboxItem.objects.get(pk=eleven[3].pk).status == "open"


def test_the_item_shown_beside_the_list_follows_what_happens_elsewhere(login, alice, bob, eleven, live_asgi, agent):
    page = _wide(login, alice)
    page.goto(f"/inbox/?item={eleven[0].pk}")
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    off_loop(decision_submit, item_id=eleven[0].pk, user=bob, status="resolved", payload={"approved": True})
    pane = _pane(page, eleven[0])
    expect(pane.locator("#live-notice")).to_contain_text("Decided by bob")
    expect(pane.locator('button[data-action="approve"]')).to_be_disabled()
    # Moved on in place, the socket follows the new item and the list still hears of new items.
    page.keyboard.press("j")
    expect(_pane(page, eleven[1])).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    off_loop(decision_submit, item_id=eleven[1].pk, user=bob, status="resolved", payload={"approved": False})
    expect(_pane(page, eleven[1]).locator("#live-notice")).to_contain_text("Decided by bob")
    (late,) = ship_orders(live_asgi, agent, [60], prefix="late-")
    expect(page.locator(f'tr[data-item-row][data-item-id="{late.pk}"]')).to_be_visible()


def test_a_live_update_of_the_item_shown_leaves_the_keyboard_selection_where_the_user_moved_it(
    login, alice, bob, eleven
):
    """j moves the selection at once, the pane follows when the next item arrives. A message about the item still
    shown (a teammate claims it) meanwhile must not pull the selection back to it: x would then tick the wrong item
    for a bulk decision (seen in CI as "2 selected" after x, x)."""
    from inbox.teams.claims import item_claim

    first, second = eleven[0], eleven[1]
    page = _wide(login, alice)
    held: list = []
    page.route(re.compile(rf"/inbox/items/{second.pk}/$"), lambda route: held.append(route))
    open_live(page, "/inbox/")
    expect(_pane(page, first)).to_be_visible()
    row = page.locator(f'tr[data-item-row][data-item-id="{second.pk}"]')
    page.keyboard.press("j")
    expect(row).to_have_class(re.compile(r"\bis-selected\b"))

    off_loop(lambda: item_claim(item_id=first.pk, user=bob))
    expect(_pane(page, first).locator("#live-notice")).to_contain_text("Claimed by bob")
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("1 selected")
    expect(page.locator("tr.is-checked")).to_have_attribute("data-item-id", str(second.pk))
    expect(row).to_have_class(re.compile(r"\bis-selected\b"))

    assert held, "the next item's pane was never asked for"
    for route in held:
        route.continue_()
    expect(_pane(page, second)).to_be_visible()
    expect(row).to_have_class(re.compile(r"\bis-selected\b.*\bis-shown\b"))
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("Select items to decide them together")


def test_a_phone_keeps_one_column_and_opens_the_item_page(login, alice, eleven):
    page = login(alice)
    page.set_viewport_size(PHONE)
    page.goto("/inbox/")
    expect(page.locator("#split-pane")).to_be_hidden()
    page.locator(f'tr[data-item-id="{eleven[1].pk}"] .row-link').click()
    page.wait_for_url(f"**{eleven[1].get_absolute_url()}")
    expect(page.locator("h1")).to_have_text("Ship order 2?")


def test_an_item_whose_form_the_browser_draws_opens_beside_the_list_by_loading_the_page(login, alice, post_run):
    body = copy.deepcopy(spec_example("non_tool_input_request"))
    body["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    filing = post_run(body).items.get()
    page = open_live(_wide(login, alice), "/inbox/")
    page.locator(f'tr[data-item-id="{filing.pk}"] .row-link').click()
    _at(page, filing)
    pane = _pane(page, filing)
    expect(pane.locator("[data-schema-form] input").first).to_be_visible()  # django-jsonform drew it
    expect(page.locator("h1").first).to_have_text("Inbox")


def _open_from_its_run_page(page, item: InboxItem) -> None:
    """Follow the link to ``item`` a page of the app shows (its run page), as one in a mail or a notice is."""
    open_live(page, item.run.get_absolute_url())  # in sync: no resync swaps the link under the click
    page.locator(f'a.run-item-message[href="{item.get_absolute_url()}"]').click()


def test_a_link_to_an_item_opens_it_beside_the_list_on_a_wide_screen_with_back_forward_and_reload_right(
    login, alice, eleven
):
    page = login(alice)
    page.set_viewport_size(WIDE)
    item = eleven[4]
    _open_from_its_run_page(page, item)
    _at(page, item)
    expect(_pane(page, item)).to_be_visible()
    expect(page.locator("h1").first).to_have_text("Inbox")
    expect(page.locator(f'tr[data-item-row][data-item-id="{item.pk}"]')).to_have_class("row-open is-selected is-shown")
    expect(page).to_have_title("Ship order 5? · Approval Inbox")
    # Back goes where the link was (the item page left no entry of its own), forward and reload come back.
    page.go_back()
    expect(page).to_have_url(re.compile(rf"{item.run.get_absolute_url()}$"))
    page.go_forward()
    _at(page, item)
    expect(_pane(page, item)).to_be_visible()
    page.reload()
    _at(page, item)
    expect(_pane(page, item).locator('button[data-action="approve"]')).to_be_enabled()
    # Printed, it is the item alone.
    page.emulate_media(media="print")
    expect(page.locator(".split-list")).to_be_hidden()
    expect(_pane(page, item).locator("#item-heading")).to_be_visible()
    page.emulate_media(media="screen")
    expect(page.locator(".split-list")).to_be_visible()
    # Moving on in the split view, then back: the item of the link again, beside the list.
    page.keyboard.press("j")
    _at(page, eleven[5])
    page.go_back()
    _at(page, item)
    expect(_pane(page, item)).to_be_visible()

    # The pane's "Open as a page" is the item page itself, on a wide screen too (no loop back to the list).
    _pane(page, item).get_by_role("link", name="Open as a page").click()
    expect(page).to_have_url(re.compile(rf"{item.get_absolute_url()}\?full=1$"))
    expect(page.locator("h1")).to_have_text("Ship order 5?")
    expect(page.locator("#split-pane")).to_have_count(0)
    # Opened as a page, it goes on in pages: its Next is the next item's page.
    page.locator("[data-triage-next]").click()
    expect(page).to_have_url(re.compile(rf"{eleven[5].get_absolute_url()}$"))
    expect(page.locator("h1")).to_have_text("Ship order 6?")


def test_a_link_to_an_item_opens_its_page_on_a_phone(login, alice, eleven):
    page = login(alice)
    page.set_viewport_size(PHONE)
    item = eleven[4]
    _open_from_its_run_page(page, item)
    expect(page).to_have_url(re.compile(rf"{item.get_absolute_url()}$"))
    expect(page.locator("h1")).to_have_text("Ship order 5?")
    expect(page.locator('button[data-action="approve"]')).to_be_visible()
    expect(page.locator("#split-pane")).to_have_count(0)
    page.reload()
    expect(page).to_have_url(re.compile(rf"{item.get_absolute_url()}$"))


def test_a_split_views_address_opened_on_a_phone_shows_the_items_page(login, alice, eleven):
    """A link shared from a desktop (/inbox/?item=<id>) shows the item on a phone, not the list without it."""
    page = login(alice)
    page.set_viewport_size(PHONE)
    item = eleven[2]
    page.goto(f"/inbox/?tab=open&item={item.pk}")
    expect(page).to_have_url(re.compile(rf"{item.get_absolute_url()}$"))
    expect(page.locator("h1")).to_have_text("Ship order 3?")
    expect(page.locator('button[data-action="approve"]')).to_be_visible()
    page.reload()  # the item page stays put at this width
    expect(page).to_have_url(re.compile(rf"{item.get_absolute_url()}$"))


def test_in_the_pane_the_decision_comes_before_the_claim_and_snooze_boxes_and_needs_no_scrolling(login, alice, eleven):
    page = _wide(login, alice)
    page.set_viewport_size({"width": 1280, "height": 800})
    open_live(page, f"/inbox/?item={eleven[0].pk}")
    pane = _pane(page, eleven[0])
    approve = pane.locator('button[data-action="approve"]')  # "Yes" for a confirmation
    expect(approve).to_be_in_viewport()
    expect(pane.locator("[data-claim]")).to_be_visible()
    expect(pane.locator("[data-snooze]")).to_be_visible()
    # Read at once, in the page: where each control is, and whether anything was scrolled to show them.
    where = pane.evaluate(
        """root => {
          const bottom = (selector) => root.querySelector(selector).getBoundingClientRect().bottom;
          const top = (selector) => root.querySelector(selector).getBoundingClientRect().top;
          return {approve: bottom('button[data-action="approve"]'), claim: top("#claim-box"),
                  snooze: top("#snooze-box"), scrolled: document.getElementById("split-pane").scrollTop + scrollY};
        }"""
    )
    assert where["scrolled"] == 0
    assert where["approve"] <= WIDE["height"]
    assert where["approve"] < where["claim"] < where["snooze"], where
