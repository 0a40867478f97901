"""The key map (static/js/keys.js): docs/deciding.md's table is the map, the "?" overlay is drawn from it with the
keys that apply on the page, and the list's keys (x, Shift+A, /, g d) do what the table says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from inbox.models import InboxItem
from tests.conftest import spec_example
from tests.e2e.conftest import item_page

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "deciding.md"
WHERE = {"list": "list", "item": "item", "any": "everywhere"}


def _documented() -> list[tuple[list[str], str, str]]:
    text = DOCS.read_text()
    section = text[text.index("## Keys") :]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        keys = [key.strip().strip("`") for key in cells[0].split(" or ")]
        rows.append((keys, cells[1], cells[2]))
    return rows


def test_the_docs_table_is_the_key_map_and_the_overlay_is_drawn_from_it(login, alice, post_run):
    run = post_run(spec_example("parallel_interrupts"))
    page = login(alice)
    page.goto("/inbox/")
    mapped = page.evaluate("InboxKeys.map()")
    in_map = [
        (entry["keys"], entry["does"], ", ".join(WHERE[where] for where in entry["where"].split())) for entry in mapped
    ]
    assert in_map == _documented()

    # On the list (no item beside it): the list's keys and those of every page, not an item's.
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_visible()
    terms = dialog.locator("dt")
    listed = [entry for entry in mapped if entry["where"] != "item"]
    expect(terms).to_have_count(len(listed))
    expect(dialog.locator("dd")).to_have_text([entry["does"] for entry in listed])
    expect(terms.nth(0)).to_have_text("j or n")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # On an item page: an item's keys too, and no list key.
    page.goto(item_page(run.items.first()))
    page.keyboard.press("?")
    expect(dialog).to_contain_text("Approve (or Yes)")
    expect(dialog).not_to_contain_text("Select the item for a bulk decision")
    page.keyboard.press("Escape")
    page.keyboard.press("s")  # snooze: its choice of when, focused
    expect(page.locator("[data-snooze-form] [data-snooze-until]")).to_be_focused()


def test_x_selects_shift_a_approves_the_selection_slash_searches_and_g_d_goes_to_decided(login, alice, post_run):
    run = post_run(spec_example("parallel_interrupts"))
    items = list(run.items.order_by("expires_at", "pk"))
    page = login(alice)
    page.set_viewport_size({"width": 1024, "height": 800})  # the list alone: Enter would open the page
    page.goto("/inbox/")
    page.keyboard.press("Shift+A")  # nothing selected: it says so, and nothing is decided
    expect(page.locator("#live-announce")).to_contain_text("Select items first")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("2 selected")
    page.keyboard.press("Shift+A")
    expect(page.locator("[data-bulk-summary]")).to_contain_text("2 decided")
    statuses = dict(InboxItem.objects.filter(run=run).values_list("pk", "status"))
    assert [statuses[item.pk] for item in items] == ["resolved", "resolved", "open"]

    page.keyboard.press("/")
    expect(page.locator("[data-search]")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("[data-search]")).not_to_be_focused()
    page.keyboard.press("g")
    page.keyboard.press("d")
    page.wait_for_url(re.compile(r"/inbox/\?tab=decided"))
    expect(page.locator("tr[data-item-row]")).to_have_count(2)


def test_the_help_opens_at_its_top_on_a_short_screen(login, alice, post_run):
    """showModal focused the Close button under the list, so on a screen shorter than the list the help opened
    scrolled to its end, its title and first keys out of sight."""
    run = post_run(spec_example("parallel_interrupts"))
    page = login(alice)
    page.set_viewport_size({"width": 1280, "height": 420})
    page.goto(item_page(run.items.first()))
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_visible()
    assert page.evaluate(
        "document.getElementById('shortcuts').scrollHeight > document.getElementById('shortcuts').clientHeight"
    )
    assert page.evaluate("document.getElementById('shortcuts').scrollTop") == 0
    expect(dialog.locator("h2")).to_be_focused()
    expect(dialog.locator("h2")).to_be_in_viewport()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
