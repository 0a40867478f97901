"""On a phone the list's tabs and the main menu scroll sideways: the edge that hides more fades out, in light and
dark, and the hint follows the scroll (the right edge at first, the left once scrolled to the end)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import shot

pytestmark = pytest.mark.browser

MASK = "getComputedStyle(document.querySelector(sel)).webkitMaskImage || getComputedStyle(document.querySelector(sel)).maskImage"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_clipped_edge_of_the_tabs_and_the_menu_fades_out_on_a_phone(login, staff, scheme):
    page = login(staff)
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme=scheme)
    page.goto("/inbox/")
    for selector in (".tabs", ".mainnav"):
        box = page.locator(selector)
        assert box.evaluate("box => box.scrollWidth > box.clientWidth"), f"{selector} fits: nothing to hint"
        expect(box).to_have_attribute("data-more", "right")
        assert "gradient" in page.evaluate(f"sel => {MASK}", selector)
    shot(page, f"scroll-hint-390-{scheme}")

    for selector in (".tabs", ".mainnav"):
        page.locator(selector).evaluate("box => { box.scrollLeft = box.scrollWidth; }")
        expect(page.locator(selector)).to_have_attribute("data-more", "left")
        page.locator(selector).evaluate("box => { box.scrollLeft = 40; }")
        expect(page.locator(selector)).to_have_attribute("data-more", "both")

    # Wide: the menu fits and does not fade; the list's tabs, in the split view's narrower list, scroll and fade
    # exactly when they are clipped.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/inbox/")
    expect(page.locator(".mainnav")).not_to_have_attribute("data-more", "right")
    assert page.evaluate(f"sel => {MASK}", ".mainnav") == "none"
    tabs = page.locator(".tabs")
    if tabs.evaluate("box => box.scrollWidth > box.clientWidth + 1"):
        expect(tabs).to_have_attribute("data-more", "right")
        assert "gradient" in page.evaluate(f"sel => {MASK}", ".tabs")
        shot(page, f"scroll-hint-1280-{scheme}")
    else:
        assert page.evaluate(f"sel => {MASK}", ".tabs") == "none"
