"""Triage: deciding lands on the next open item of the list you came from (or stays, with the toggle off),
item shortcuts a / d / n / p and "?" with this page's shortcuts, j/k give rows real focus."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from inbox.models import InboxItem
from tests.e2e.conftest import item_page, ship_orders

pytestmark = pytest.mark.browser


@pytest.fixture
def three_runs(live_asgi, agent):
    """Three one-item runs expiring in 10, 20 and 30 minutes (the Open tab's order)."""
    return ship_orders(live_asgi, agent, [10, 20, 30])


def test_deciding_lands_on_the_next_open_item_of_the_list(login, alice, three_runs):
    first, second, third = three_runs
    page = login(alice)
    page.goto("/inbox/")  # the list the item page's next and previous follow
    page.goto(item_page(first))
    expect(page.locator("[data-then-next]")).to_be_checked()
    page.locator('[data-decision-form] button[data-action="approve"]').click()

    page.wait_for_url(f"**{second.get_absolute_url()}?after={first.run_id}")
    expect(page.locator(".flash-success")).to_contain_text("Approved: “Ship order 1?”.")
    expect(page.locator("h1")).to_have_text("Ship order 2?")

    # The toggle keeps today's behaviour: stay on the decided item (and it is remembered).
    page.locator("[data-then-next]").uncheck()
    page.locator('[data-decision-form] button[data-action="deny"]').click()
    page.wait_for_url(f"**{second.get_absolute_url()}?after={second.run_id}")
    expect(page.locator(f'.item-head [data-item-status="{second.pk}"]')).to_have_text("Denied")
    page.goto(item_page(third))
    expect(page.locator("[data-then-next]")).not_to_be_checked()


def test_item_shortcuts_approve_deny_and_move(login, alice, three_runs):
    first, second, third = three_runs
    page = login(alice)
    page.goto("/inbox/")
    page.goto(item_page(second))
    page.keyboard.press("n")
    page.wait_for_url(f"**{third.get_absolute_url()}")
    page.keyboard.press("p")
    page.wait_for_url(f"**{second.get_absolute_url()}")

    page.keyboard.press("?")
    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Approve (or Yes)")
    expect(dialog).not_to_contain_text("Select the item for a bulk decision")
    page.keyboard.press("Escape")

    page.keyboard.press("d")  # deny, then on to the next open item in the list's order (wrapping to the first)
    page.wait_for_url(f"**{third.get_absolute_url()}?after={second.run_id}")
    assert InboxItem.objects.get(pk=second.pk).outcome == "denied"
    page.keyboard.press("a")
    page.wait_for_url(f"**{first.get_absolute_url()}?after={third.run_id}")
    assert InboxItem.objects.get(pk=third.pk).outcome == "approved"


def test_j_and_k_move_real_focus_in_the_list(login, alice, three_runs):
    first, second, _third = three_runs
    page = login(alice)
    page.goto("/inbox/")
    # A wide screen opens the split view on the first item, its row selected: j moves on to the second.
    expect(page.locator(f'#split-pane [data-pane-item][data-item-id="{first.pk}"]')).to_be_visible()
    expect(page.locator(f'tr[data-item-id="{first.pk}"]')).to_have_class(re.compile(r"\bis-selected\b"))
    page.locator("body").press("j")
    expect(page.locator(f'tr[data-item-id="{second.pk}"] .row-link')).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator(f'tr[data-item-id="{first.pk}"] .row-link')).to_be_focused()
