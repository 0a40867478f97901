"""The list's tabs and the main menu hid their last entries past the edge on a phone ("Po…"), with only a fade to
say so: they now wrap to a second row, whole, at 390 px (and the split view's tabs at 1280 px), so there is nothing
to scroll and nothing faded. The fade (a11y.js's data-more, screens.css's mask) stays for a box that still
scrolls sideways."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot

pytestmark = pytest.mark.browser

MASK = "getComputedStyle(document.querySelector(sel)).webkitMaskImage || getComputedStyle(document.querySelector(sel)).maskImage"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_tabs_and_the_menu_are_whole_on_a_phone_and_beside_the_item(login, staff, scheme):
    page = login(staff)
    page.emulate_media(color_scheme=scheme)
    for width, height in ((390, 844), (1280, 800)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto("/inbox/")
        for selector in ("#list-tabs", ".mainnav"):
            box = page.locator(selector)
            assert box.evaluate("box => box.scrollWidth <= box.clientWidth + 1"), (width, selector)
            assert box.get_attribute("data-more") is None, (width, selector)
            assert page.evaluate(f"sel => {MASK}", selector) == "none", (width, selector)
            # Every entry inside the box, on the screen.
            assert box.evaluate(
                """box => [...box.querySelectorAll('a')].every(a => {
                     const r = a.getBoundingClientRect(), b = box.getBoundingClientRect();
                     return r.left >= b.left - 1 && r.right <= b.right + 1 && r.right <= innerWidth; })"""
            ), (width, selector)
        shot(page, f"tabs-whole-{width}-{scheme}")


def test_a_box_that_still_scrolls_sideways_fades_its_hidden_edge(login, staff):
    """The hint itself, on the tabs squeezed narrower than one tab (a11y.js marks the edges as it scrolls)."""
    page = login(staff)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/inbox/")
    tabs = page.locator("#list-tabs")
    tabs.evaluate("box => { box.style.flexWrap = 'nowrap'; box.style.overflowX = 'auto'; box.style.width = '150px'; }")
    page.evaluate("window.dispatchEvent(new Event('resize'))")
    page.wait_for_function("() => document.querySelector('#list-tabs').dataset.more === 'right'")
    assert "gradient" in page.evaluate(f"sel => {MASK}", "#list-tabs")
    tabs.evaluate("box => { box.scrollLeft = box.scrollWidth; }")
    page.wait_for_function("() => document.querySelector('#list-tabs').dataset.more === 'left'")
    tabs.evaluate("box => { box.scrollLeft = 40; }")
    page.wait_for_function("() => document.querySelector('#list-tabs').dataset.more === 'both'")
