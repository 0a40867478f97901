"""A policy's backtest in Debian's Chromium: staff run it from the policy's page and from its edit form (unsaved
values), read the result, follow a disagreement to its item, and promote with the backtest as evidence.

Set INBOX_SCREENSHOTS=<dir> to keep the result page at 1280×800 and 390×844, light and dark."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from inbox.models import AuditEvent
from inbox.models.policies import PolicyBacktest
from tests.e2e.conftest import shot
from tests.helpers.browser import sign_in
from tests.policies.history import internal_email_with_history

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def policy(staff, agent, alice):
    return internal_email_with_history(staff, agent.agent, alice)


def test_staff_backtest_a_policy_read_its_disagreements_and_promote_on_it(login, staff, policy):
    page = login(staff)
    page.goto(policy.get_absolute_url())
    expect(page.locator("[data-promote-evidence]")).to_contain_text("has no backtest yet")
    page.fill("#backtest-days", "400")  # the browser refuses it before the server would (a 400 naming days)
    assert page.locator("#backtest-days").evaluate("field => field.validity.rangeOverflow")
    page.fill("#backtest-days", "30")
    page.get_by_role("button", name="Run backtest").click()
    expect(page.locator("[data-backtest-state=done]")).to_be_visible()
    expect(page.locator("[data-stat=decided]")).to_have_text("8")
    expect(page.locator("[data-stat=matched]")).to_have_text("5")
    expect(page.locator("[data-stat=agreement]")).to_contain_text("40% (2 of 5)")
    expect(page.locator("[data-stat=found_wrong]")).to_have_text("1")
    disagreements = page.locator("[data-backtest-findings=disagreed] tbody tr")
    expect(disagreements).to_have_count(3)
    wrong = page.locator("[data-backtest-findings=found_wrong] tbody tr")
    expect(wrong).to_have_count(1)
    expect(wrong).to_contain_text("sendEmail for jo?")
    expect(wrong).to_contain_text("by alice")
    page.get_by_role("link", name="sendEmail for bob?").click()  # beside the list on this wide screen
    expect(page.locator("#item-heading")).to_contain_text("sendEmail for bob?")
    page.go_back()
    page.get_by_role("link", name="Internal email").click()
    expect(page.locator("[data-promote-evidence]")).to_contain_text("backtest")
    shot(page, "policy-with-backtest")
    page.get_by_role("button", name="Promote to enforce").click()
    expect(page.locator("[data-policy-mode]")).to_have_text("Enforce")
    evidence = AuditEvent.objects.get(verb="policy.promoted").data["backtest"]
    assert evidence["matched"] == 5 and evidence["id"] == PolicyBacktest.objects.get().pk


def test_the_edit_form_backtests_unsaved_values_without_saving_them(login, staff, policy):
    page = login(staff)
    page.goto(f"/policies/{policy.pk}/edit/")
    page.fill("#id_match_schema", '{"properties": {"to": {"pattern": "@evil\\\\.com$"}}}')
    page.select_option("#id_action", "deny")
    shot(page, "policy-edit-backtest")
    page.get_by_role("button", name="Backtest these values").click()
    expect(page.locator("h1")).to_contain_text("unsaved changes")
    expect(page.locator("[data-stat=matched]")).to_have_text("1")
    expect(page.locator("[data-stat=agreement]")).to_contain_text("100% (1 of 1)")
    policy.refresh_from_db()
    assert policy.action == "approve" and policy.version == 1


def test_the_result_page_at_every_size_and_scheme(browser, live_asgi, staff, policy):
    from inbox.policies.backtest import backtest_start

    backtest = backtest_start(user=staff, policy=policy)
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
            page = sign_in(context, staff)
            page.goto(backtest.get_absolute_url())
            expect(page.locator("[data-stat=matched]")).to_have_text("5")
            sideways = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert sideways <= 0, (size, scheme, sideways)
            shot(page, f"backtest-{size}-{scheme}")
            context.close()
