"""An escalated item and the away banner in Debian's Chromium: Finance leads, added to an item's deciders by an
escalation rule, read why on the item and approve it; someone away sees the banner on every page.

Set INBOX_SCREENSHOTS=<dir> to keep a screenshot at 1280×800 and 390×844, light and dark."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import EscalationRule, InboxItem
from inbox.teams.away import away_set
from inbox.teams.escalations import escalation_sweep
from tests.e2e.conftest import item_page, off_loop, shot
from tests.factories import TeamFactory, UserFactory, interrupted_run
from tests.helpers.browser import sign_in

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def test_finance_reads_why_an_item_was_escalated_to_it_and_approves_it_while_away(browser, live_asgi, agent, alice):
    finance = TeamFactory(name="Finance leads")
    dave = UserFactory(username="dave", teams=[finance])
    erin = UserFactory(username="erin", teams=[finance])
    run = off_loop(interrupted_run, agent.agent, "t-1", "r-1", 240, now=timezone.now() - timedelta(minutes=45))
    InboxItem.objects.filter(run=run).update(message="Refund 900 EUR to order 77?")
    item = run.items.get()
    EscalationRule.objects.create(
        team=agent.agent.teams.get(),
        after_minutes=30,
        to_team=finance,
        created_by=UserFactory(username="staff", is_staff=True),  # a grant of access: staff's
    )
    assert off_loop(escalation_sweep) == 1  # the item arrived 45 minutes ago: Finance leads are added
    start = timezone.now() - timedelta(minutes=5)
    off_loop(away_set, user=dave, starts_at=start, ends_at=start + timedelta(days=3), delegate=erin, set_by=dave)

    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
            page = sign_in(context, dave)
            page.goto(item_page(item))
            note = page.locator("[data-escalation]")
            expect(note).to_contain_text("Escalated to Finance leads at")
            expect(note).to_contain_text("— no decision from ops in 30 min")
            banner = page.locator("[data-away-banner]")
            expect(banner).to_contain_text("You are away until")
            expect(banner).to_contain_text("erin decides for you")
            shot(page, f"escalated-item-{size}-{scheme}")
            page.goto("/inbox/settings/notifications/")
            expect(page.locator("#away-form select[name=delegate]")).to_have_value("erin")
            shot(page, f"away-settings-{size}-{scheme}")
            context.close()

    context = browser.new_context(base_url=live_asgi, viewport=SIZES["wide"])
    page = sign_in(context, dave)
    page.goto(item_page(item))
    with page.expect_navigation():
        page.get_by_role("button", name="Yes", exact=True).click()
    expect(page.locator("#main")).to_be_visible()
    context.close()
    item.refresh_from_db()
    assert (item.status, item.decided_by) == ("resolved", dave)
