"""Saved views and snooze in Debian's Chromium against the live ASGI server (real database, real Redis):
a saved view survives logging out and shows the rows of its filters; a snoozed item leaves my Open list, stays
in a colleague's, and comes back with a reminder when the wake sweep runs past its time.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the tests visit."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import AuditEvent, Snooze
from inbox.teams.reminders import snoozes_wake
from tests.e2e.conftest import item_page, off_loop, open_live, shot

pytestmark = pytest.mark.browser


def _finished(thread: str, run: str, interrupts: list[dict]) -> dict:
    expires = (timezone.now() + timedelta(hours=3)).isoformat()
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": [{"expiresAt": expires, **each} for each in interrupts]},
    }


def _row_ids(page) -> list[int]:
    return [int(pk) for pk in page.locator("tr[data-item-row]").evaluate_all("rows => rows.map(r => r.dataset.itemId)")]


def test_a_saved_view_survives_logout_and_shows_the_rows_of_its_filters(login, alice, post_run, live_asgi):
    post_run(
        _finished(
            "t-a", "r-a", [{"id": f"c-{n}", "reason": "confirmation", "message": f"Restart {n}?"} for n in range(3)]
        )
    )
    tools = post_run(
        _finished(
            "t-b",
            "r-b",
            [
                {"id": f"t-{n}", "reason": "tool_call", "toolCallId": f"tc-{n}", "message": f"Refund {n}?"}
                for n in range(2)
            ],
        )
    )
    page = login(alice)
    page.goto("/inbox/")
    page.get_by_label("Reason").select_option("tool_call")
    expect(page).to_have_url(re.compile(r"reason=tool_call"))
    page.get_by_label("Sort").select_option("oldest")
    expect(page).to_have_url(re.compile(r"sort=oldest"))
    filtered = _row_ids(page)
    assert filtered == sorted(item.pk for item in tools.items.all())

    page.locator("[data-save-view] summary").click()
    page.get_by_label("Name of the view").fill("Refunds, oldest first")
    page.get_by_role("button", name="Save view").click()
    expect(page.locator(".flash-success")).to_contain_text("Saved the view “Refunds, oldest first”")
    tab = page.locator("[data-view-tab]")
    expect(tab).to_have_attribute("aria-current", "true")
    expect(tab.locator(".count")).to_have_text("2")
    shot(page, "saved-view-tab")

    # Log out, log in again: the tab is there, counted, and shows the same rows as the filters did.
    page.context.clear_cookies()
    page = login(alice)
    page.goto("/inbox/")
    tab = page.get_by_role("link", name=re.compile("Refunds, oldest first"))
    expect(tab.locator(".count")).to_have_text("2")
    tab.click()
    expect(page.locator("[data-view-tab]")).to_have_attribute("aria-current", "true")
    assert _row_ids(page) == filtered
    expect(page.get_by_label("Reason")).to_have_value("tool_call")

    # Rename it on the views page, then delete it.
    page.goto("/inbox/views/")
    page.get_by_label("Name of “Refunds, oldest first”").fill("Refunds")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator(".flash-success")).to_contain_text("Renamed to “Refunds”")
    shot(page, "saved-views-page")
    page.get_by_role("button", name="Delete “Refunds”").click()
    expect(page.locator("[data-no-views]")).to_be_visible()


def test_a_snoozed_item_leaves_my_open_list_stays_in_a_colleagues_and_comes_back_with_a_reminder(
    login, alice, bob, post_run, mailoutbox
):
    run = post_run(
        _finished(
            "t-s",
            "r-s",
            [
                {"id": "s-1", "reason": "confirmation", "message": "Rotate the keys?"},
                {"id": "s-2", "reason": "confirmation", "message": "Drop the cache?"},
            ],
        )
    )
    item, other = run.items.order_by("position")
    alices = login(alice)
    alices.goto(item_page(item))
    alices.get_by_label("Remind me").select_option("1h")
    alices.get_by_role("button", name="Snooze").click()
    expect(alices.locator(".flash-success")).to_contain_text("Snoozed until")
    expect(alices.locator(".flash-success")).to_contain_text("“Rotate the keys?” is out of your Open list")

    alices = open_live(alices, "/inbox/")
    assert _row_ids(alices) == [other.pk]
    expect(alices.locator('[data-count="snoozed"]')).to_have_text("1")
    shot(alices, "list-after-snooze")
    bobs = login(bob)
    bobs.goto("/inbox/")
    assert sorted(_row_ids(bobs)) == sorted([item.pk, other.pk])
    expect(bobs.locator('[data-count="snoozed"]')).to_have_text("0")

    alices_snoozed = alices.context.new_page()
    alices_snoozed.goto("/inbox/?tab=snoozed")
    assert _row_ids(alices_snoozed) == [item.pk]
    alices_snoozed.goto(item_page(item))
    expect(alices_snoozed.locator("[data-snoozed-until]")).to_contain_text("Snoozed until")
    shot(alices_snoozed, "item-snoozed")
    alices_snoozed.close()

    # The wake sweep, as beat runs it, at a time past the snooze: the item is back on alice's open page, live,
    # with a reminder there and by mail (her settings: at once).
    until = Snooze.objects.get(user=alice, item=item).until
    assert off_loop(snoozes_wake, now=until + timedelta(seconds=1)) == 1
    expect(alices.locator(f'tr[data-item-id="{item.pk}"]')).to_be_visible()
    expect(alices.locator(".live-toast")).to_contain_text("“Rotate the keys?” (confirmation) is back")
    expect(alices.locator('[data-count="snoozed"]')).to_have_text("0")
    assert [message.to for message in mailoutbox] == [[alice.email]]
    assert AuditEvent.objects.filter(verb="item.snooze_ended", object_id=str(item.pk)).count() == 1
    bobs.reload()
    assert sorted(_row_ids(bobs)) == sorted([item.pk, other.pk])
