"""Deciding beside the list, as the approver reads it (issue 48): the next item shows at the click or key, before the
server has answered the decision, which is sent behind it; a refused decision brings the item back with the reason.
An item decided in another browser is read-only where it is shown, its heading a decision; a follow-up the agent
raises while another item is read is announced, with a key and a button to open it, and the pane stays put."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem
from tests.e2e.conftest import off_loop, open_live, ship_orders

pytestmark = pytest.mark.browser

WIDE = {"width": 1280, "height": 800}


@pytest.fixture
def orders(live_asgi, agent) -> list[InboxItem]:
    return ship_orders(live_asgi, agent, [10 + n for n in range(1, 5)])


def _pane(page, item: InboxItem):
    return page.locator(f'#split-pane [data-pane-item][data-item-id="{item.pk}"]')


def _fetched_ahead(page, item: InboxItem) -> None:
    """Wait until the split view has fetched ``item``'s pane ahead (its Resource Timing entry: the response is in)."""
    page.evaluate(
        """async (path) => {
          const done = () => performance.getEntriesByType("resource").some((entry) => entry.name.endsWith(path));
          while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
        }""",
        item.get_absolute_url(),
    )


def _hold_decisions(page) -> list:
    """Every decision POST is held (not sent on) until the test lets it go: what the page shows meanwhile is what it
    shows before the server answers."""
    held: list = []
    page.route(re.compile(r"/inbox/items/\d+/decide/$"), lambda route: held.append(route))
    return held


def _wait_held(page, held: list) -> None:
    for _ in range(200):
        if held:
            return
        page.wait_for_timeout(25)
    raise AssertionError("no decision was sent")


def test_the_next_item_shows_before_the_decision_is_answered_and_the_words_follow(login, alice, orders, settings):
    settings.INBOX_UNDO_SECONDS = 30  # the live server decides in this process
    page = login(alice)
    page.set_viewport_size(WIDE)
    open_live(page, f"/inbox/?item={orders[0].pk}")
    _fetched_ahead(page, orders[1])
    held = _hold_decisions(page)

    page.locator('#split-pane button[data-action="approve"]').click()
    _wait_held(page, held)
    # The decision has not reached the server, and the next item is on screen, the address and the list with it.
    expect(_pane(page, orders[1])).to_be_visible()
    expect(page.locator("#split-pane #item-heading")).to_have_text("Ship order 2?")
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={orders[1].pk}$"))
    expect(page.locator("#split-pane #item-heading")).to_be_focused()
    assert InboxItem.objects.get(pk=orders[0].pk).status == "open"

    held.pop().continue_()
    # Decided behind the pane: its words and Undo come above the item now shown, which stays.
    expect(page.locator("#split-pane [data-undo-toast]")).to_contain_text("Approved: “Ship order 1?”")
    expect(_pane(page, orders[1])).to_be_visible()
    assert InboxItem.objects.get(pk=orders[0].pk).response_payload == {"approved": True}
    # Its socket watches the run just decided (the chain), as the page reached by deciding does.
    expect(page.locator("body")).to_have_attribute("data-live-url", re.compile(rf"after={orders[0].run_id}&chain=1"))

    # The key does the same: d shows the next item at once, the denial goes behind it.
    _fetched_ahead(page, orders[2])
    page.keyboard.press("d")
    _wait_held(page, held)
    expect(_pane(page, orders[2])).to_be_visible()
    assert InboxItem.objects.get(pk=orders[1].pk).status == "open"
    held.pop().continue_()
    expect(page.locator("#split-pane [data-undo-toast]")).to_contain_text("Denied: “Ship order 2?”")
    expect(page.locator("#split-pane [data-undo-toast]")).to_have_count(1)  # the first decision's Undo is gone
    assert InboxItem.objects.get(pk=orders[1].pk).response_payload == {"approved": False}

    # u undoes it while its Undo shows: the item is back beside the list, open again.
    page.keyboard.press("u")
    expect(_pane(page, orders[1]).locator('button[data-action="deny"]')).to_be_enabled()
    assert InboxItem.objects.get(pk=orders[1].pk).status == "open"


def test_a_refused_decision_brings_the_item_back_with_the_reason(login, alice, bob, orders):
    page = login(alice)
    page.set_viewport_size(WIDE)
    open_live(page, f"/inbox/?item={orders[0].pk}")
    _fetched_ahead(page, orders[1])
    held = _hold_decisions(page)

    page.keyboard.press("a")
    _wait_held(page, held)
    expect(_pane(page, orders[1])).to_be_visible()
    # Meanwhile bob denies it: alice's approval, sent now, is refused (409).
    off_loop(decision_submit, item_id=orders[0].pk, user=bob, status="resolved", payload={"approved": False})
    held.pop().continue_()

    pane = _pane(page, orders[0])
    expect(pane).to_be_visible()
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={orders[0].pk}$"))
    expect(pane.locator("[data-decision-error]")).to_contain_text("already")
    expect(pane.locator(f'[data-item-status="{orders[0].pk}"]').first).to_have_text("Denied")
    assert InboxItem.objects.get(pk=orders[0].pk).decided_by == bob


def test_an_item_decided_in_another_browser_turns_read_only_where_it_is_shown(
    login, alice, bob, staff, live_asgi, make_agent
):
    two = make_agent("two-keys", approvals_required=2)
    (item,) = ship_orders(live_asgi, two, [30], prefix="q-")
    off_loop(decision_submit, item_id=item.pk, user=staff, status="resolved", payload={"approved": True})
    page = login(alice)
    page.set_viewport_size(WIDE)
    open_live(page, f"/inbox/?item={item.pk}")
    pane = _pane(page, item)
    heading = pane.locator("[data-decision-heading]")
    expect(heading).to_have_text("Your decision")
    expect(pane.locator("[data-decide-by]")).to_be_visible()
    expect(pane.locator("[data-snooze]")).to_be_enabled()

    # Bob, in a browser of his own, gives the second approval the item needs.
    other = login(bob)
    other.goto(f"{item.get_absolute_url()}?full=1")
    other.locator('[data-decision-form] button[data-action="approve"]').click()
    expect(other.locator("[data-decision-heading]")).to_have_text("Decided by staff and bob: Approved")

    # Alice's pane reads as the decision it is now: who decided and what, every approver of the quorum, no
    # deadline to decide by, and nothing left to press.
    expect(heading).to_have_text("Decided by staff and bob: Approved")
    expect(pane.locator("#live-notice")).to_contain_text("Decided by bob")
    expect(pane.locator("[data-quorum]")).to_contain_text("Approved by staff and bob.")
    expect(pane.locator("[data-quorum]")).not_to_contain_text("needs")
    expect(pane.locator("[data-item-outcome] [data-deciders]")).to_have_text("by staff and bob")
    expect(pane.locator("[data-decide-by]")).to_have_count(0)
    for control in ('button[data-action="approve"]', 'button[data-action="deny"]', "[data-claim]"):
        expect(pane.locator(control)).to_be_disabled()
    expect(pane.locator("[data-snooze]")).to_be_disabled()
    expect(pane.locator("[data-snooze-until]")).to_be_disabled()
    # A reload says the same.
    page.reload()
    expect(_pane(page, item).locator("[data-decision-heading]")).to_have_text("Decided by staff and bob: Approved")
    expect(_pane(page, item).locator("[data-snooze]")).to_have_count(0)
