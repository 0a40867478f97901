"""Nothing clipped, nothing lost (issue 48, points 2 and 5): at 1280 px the split view's list shows its tabs,
filters and ages whole, keeps the row of the item shown in sight, opens on the first item, and the page itself does
not scroll past its two panes; at 390 px the menu and the tabs are whole, every section a tap away.

Set INBOX_SCREENSHOTS=<dir> to keep a screenshot of each size and scheme."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import InboxItem
from tests.e2e.conftest import ship_orders, shot

pytestmark = pytest.mark.browser

WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# Every piece of text a person reads in the list's head, with the width it needs against the width it has. A select
# or an input clips its text without growing its scrollWidth: the selected option (or placeholder) is measured in
# the control's own font, against its content box (a select's right padding holds its arrow).
CLIPPED = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  const found = [];
  const label = (el) => (el.textContent || el.value || el.placeholder || "").trim().replace(/\\s+/g, " ").slice(0, 40);
  // On the screen: not in a closed <details>, not the visually hidden (1 px) Apply button.
  const seen = (el) => el.checkVisibility({visibilityProperty: true}) && el.getBoundingClientRect().width > 2;
  const boxes = "#list-tabs .tab, #view-tabs .tab, .mainnav a, .filters .btn, td.col-age, td.col-due, table.items th";
  for (const el of document.querySelectorAll(boxes)) {
    if (!seen(el)) continue;
    if (el.scrollWidth > el.clientWidth + 1) found.push([label(el), el.scrollWidth, el.clientWidth]);
  }
  // A box that scrolls sideways (the tabs, the menu) hides what is past its edge.
  for (const el of document.querySelectorAll("#list-tabs, #view-tabs, .mainnav, .filters")) {
    if (seen(el) && el.scrollWidth > el.clientWidth + 1) found.push([el.id || el.className, el.scrollWidth, el.clientWidth]);
  }
  for (const el of document.querySelectorAll(".filters select, .filters input[type=text], .filters input[type=search]")) {
    if (!seen(el)) continue;
    const style = getComputedStyle(el);
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = el.tagName === "SELECT" ? el.options[el.selectedIndex].text : el.value || el.placeholder;
    const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const need = canvas.measureText(text).width;
    if (need > room + 1) found.push([text, Math.ceil(need), Math.floor(room)]);
  }
  return found;
}"""


@pytest.fixture
def many(live_asgi, agent):
    """A hundred and twenty open items: three-digit counts on the tabs, a list longer than the screen, and ages of
    every length ("21 min ago", "13 days ago")."""
    items = ship_orders(live_asgi, agent, [10 + n for n in range(120)])
    now = timezone.now()
    for item, age in zip(
        items, (timedelta(minutes=21), timedelta(days=13), timedelta(hours=23, minutes=59)), strict=False
    ):
        InboxItem.objects.filter(pk=item.pk).update(created_at=now - age)
    return items


def _open(browser, live_asgi, user, viewport, scheme):
    from tests.helpers.browser import sign_in

    context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
    return context, sign_in(context, user)


def _in_list(page, row_selector: str) -> dict:
    return page.evaluate(
        """(sel) => {
          const list = document.querySelector(".split-list").getBoundingClientRect();
          const row = document.querySelector(sel).getBoundingClientRect();
          return {inside: row.top >= list.top - 1 && row.bottom <= list.bottom + 1, list: [list.top, list.bottom],
                  row: [row.top, row.bottom]};
        }""",
        row_selector,
    )


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_split_view_at_1280_clips_nothing_and_keeps_the_shown_row_in_sight(browser, live_asgi, staff, many, scheme):
    context, page = _open(browser, live_asgi, staff, WIDE, scheme)
    # Opening the list shows its first item beside it, not an empty pane.
    page.goto("/inbox/")
    first = many[0]
    expect(page.locator(f'#split-pane [data-pane-item][data-item-id="{first.pk}"]')).to_be_visible()
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={first.pk}$"))
    expect(page.locator(f'tr[data-item-id="{first.pk}"]')).to_have_class(re.compile(r"\bis-shown\b"))
    shot(page, f"split-1280-{scheme}")
    assert page.evaluate(CLIPPED) == []
    # The page does not scroll: the two panes do, each on its own.
    page.mouse.wheel(0, 3000)
    assert page.evaluate("document.documentElement.scrollHeight - document.documentElement.clientHeight") <= 0
    assert page.evaluate("scrollY") == 0

    # An item far down the list, opened by its address: its row is scrolled into the list's view.
    far = many[40]
    page.goto(f"/inbox/?item={far.pk}")
    expect(page.locator(f'#split-pane [data-pane-item][data-item-id="{far.pk}"]')).to_be_visible()
    expect(page.locator(f'tr[data-item-id="{far.pk}"]')).to_have_class(re.compile(r"\bis-shown\b"))
    page.wait_for_function("() => document.querySelector('.split-list').scrollTop > 0")
    where = _in_list(page, f'tr[data-item-id="{far.pk}"]')
    assert where["inside"], where
    # Moving on by key past the bottom of the list's view keeps the shown row in sight.
    page.locator(".split-list").evaluate("list => { list.scrollTop = 0; }")
    nearby = many[41]
    page.locator("body").press("j")
    expect(page.locator(f'#split-pane [data-pane-item][data-item-id="{nearby.pk}"]')).to_be_visible()
    page.wait_for_function(
        """(sel) => { const l = document.querySelector('.split-list').getBoundingClientRect();
                      const r = document.querySelector(sel).getBoundingClientRect();
                      return r.top >= l.top - 1 && r.bottom <= l.bottom + 1; }""",
        arg=f'tr[data-item-id="{nearby.pk}"]',
    )
    assert page.evaluate("scrollY") == 0
    shot(page, f"split-1280-far-{scheme}")

    # The other tabs, with their filters (Decided adds the outcome's).
    for tab in ("decided", "all", "snoozed"):
        page.goto(f"/inbox/?tab={tab}")
        expect(page.locator("#main")).to_be_visible()
        assert page.evaluate(CLIPPED) == [], tab
        assert page.evaluate("document.documentElement.scrollHeight - document.documentElement.clientHeight") <= 0
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_phone_shows_the_whole_menu_and_every_tab(browser, live_asgi, staff, many, scheme):
    context, page = _open(browser, live_asgi, staff, PHONE, scheme)
    for path in ("/inbox/", "/inbox/?tab=decided", "/audit/", "/policies/"):
        page.goto(path)
        expect(page.locator("#main")).to_be_visible()
        shot(page, f"phone-390-{scheme}-{path.strip('/').replace('/', '-').replace('?tab=', '-')}")
        assert page.evaluate(CLIPPED) == [], path
        # Every section of the menu and every tab of the list on the screen, none past its edge.
        offscreen = page.evaluate(
            """() => [...document.querySelectorAll('.mainnav a, #list-tabs .tab, #view-tabs .tab')]
                 .filter((a) => { const r = a.getBoundingClientRect(); return r.left < 0 || r.right > innerWidth; })
                 .map((a) => a.textContent.trim())"""
        )
        assert offscreen == [], (path, offscreen)
    page.goto("/inbox/")
    names = page.locator(".mainnav a").all_inner_texts()
    for section in ("Inbox", "Agents", "Audit", "Notifications", "Policies", "API docs"):
        assert section in names
        expect(page.locator(".mainnav a", has_text=section).first).to_be_in_viewport()
    for tab in ("Open", "Mine", "Snoozed", "Decided", "Expired", "All"):
        expect(page.locator("#list-tabs .tab", has_text=tab)).to_be_in_viewport()
    shot(page, f"phone-390-{scheme}")
    context.close()
