"""Controls never offer what will fail, a chain jump is announced, and the list and the item agree (issue 31,
points 6-8), in Chromium against the live server: after someone else decides, the claim and assign controls
are disabled by the live update; with a quorum of 2 my Approve is disabled once I approved; the follow-up the
page jumps to says "The agent asked again: …" in its aria-live region; an item the list marks as needing its
form has no Approve on its page, and pressing ``a`` there says why and puts the focus in the form."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import demo, demo_agent, demo_server, wait_for  # noqa: F401
from tests.conftest import spec_example
from tests.e2e.conftest import item_page, off_loop, open_live, shot
from tests.e2e.test_truth_browser import confirmations

pytestmark = pytest.mark.browser


def test_claim_and_assign_are_disabled_live_when_someone_else_decides(login, alice, bob, post_run):
    item = post_run(confirmations("t-1", "r-1", 60)).items.get()
    page = open_live(login(bob), item_page(item))
    claim = page.locator("[data-claim-box] button[data-claim]")
    expect(claim).to_be_enabled()

    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})

    expect(page.locator(f'.item-head [data-item-status="{item.pk}"]')).to_have_text("Approved")
    expect(claim).to_be_disabled()
    expect(page.locator("[data-claim-closed]")).to_contain_text("nothing left to claim or assign")
    for control in page.locator("[data-claim-box] button, [data-claim-box] select").all():
        expect(control).to_be_disabled()
    expect(page.locator('[data-decision-form] button[data-action="approve"]')).to_be_disabled()
    shot(page, "controls-decided-elsewhere")


def test_with_a_quorum_of_two_my_approve_is_disabled_after_my_approval(login, alice, bob, agent, post_run):
    agent.agent.approvals_required = 2
    agent.agent.save(update_fields=["approvals_required"])
    item = post_run(confirmations("t-1", "r-1", 60)).items.get()
    page = login(alice)
    page.goto(item_page(item))
    page.locator('[data-decision-form] button[data-action="approve"]').click()

    expect(page.locator("[data-quorum-hint]")).to_contain_text("You approved; waiting for one more")
    approve = page.locator('[data-decision-form] button[data-action="approve"]')
    expect(approve).to_be_disabled()
    expect(approve).to_have_attribute("aria-describedby", "quorum-hint")
    expect(page.locator('[data-decision-form] button[data-action="deny"]')).to_be_enabled()  # still mine to give
    # Pressing a says why instead of a 409.
    page.locator("h1").click()
    page.keyboard.press("a")
    expect(page.locator("#live-notice")).to_contain_text("You approved; waiting for one more")
    assert InboxItem.objects.get(pk=item.pk).is_open


def test_my_quorum_vote_in_another_window_disables_approve_live(login, alice, agent, post_run):
    agent.agent.approvals_required = 2
    agent.agent.save(update_fields=["approvals_required"])
    item = post_run(confirmations("t-1", "r-1", 60)).items.get()
    page = open_live(login(alice), item_page(item))
    approve = page.locator('[data-decision-form] button[data-action="approve"]')
    expect(approve).to_be_enabled()

    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})

    expect(page.locator("[data-quorum-hint]")).to_contain_text("You approved; waiting for one more")
    expect(approve).to_be_disabled()


def test_a_form_item_says_why_a_does_not_approve_and_focuses_its_form(login, alice, post_run):
    body = spec_example("non_tool_input_request")
    body["outcome"]["interrupts"][0].pop("expiresAt")
    item = post_run(body).items.get()
    page = login(alice)
    page.goto("/inbox/")
    row = page.locator(f'tr[data-item-row][data-item-id="{item.pk}"]')
    expect(row.locator('[data-bulk-note="form"]')).to_have_count(1)
    page.goto(item_page(item))
    expect(page.locator('[data-decision-form] button[data-action="approve"]')).to_have_count(0)
    page.locator("h1").click()
    page.keyboard.press("a")
    expect(page.locator("#live-notice")).to_contain_text("needs an answer from its form")
    focused = page.evaluate("document.activeElement.closest('[data-decision-form]') !== null")
    assert focused
    assert InboxItem.objects.get(pk=item.pk).is_open


def test_an_unknown_reason_without_schema_is_bulk_selectable_and_has_approve_on_its_page(login, alice, post_run):
    body = {
        "type": "RUN_FINISHED",
        "threadId": "t-u",
        "runId": "r-u",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "u-1", "reason": "ask_user", "message": "Go ahead?"}]},
    }
    item = post_run(body).items.get()
    page = login(alice)
    page.goto("/inbox/")
    row = page.locator(f'tr[data-item-row][data-item-id="{item.pk}"]')
    expect(row.locator("[data-bulk-select]")).to_have_count(1)
    expect(row).not_to_contain_text("Needs an answer from its form")
    page.goto(item_page(item))
    expect(page.locator('[data-decision-form] button[data-action="approve"]')).to_be_enabled()


@pytest.mark.integration
def test_the_chain_jump_is_announced_in_the_live_region(login, alice, demo):  # noqa: F811
    invoice = InboxItem.objects.get(
        run=off_loop(run_start, agent=demo.agent, user=alice, message="chain: invoice ACME").run
    )
    page = login(alice)
    page.goto(item_page(invoice))
    expect(page.locator("[data-then-next]")).to_be_checked()
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    page.wait_for_url(f"**{invoice.get_absolute_url()}?after={invoice.run_id}")
    expect(page.locator("body")).to_have_attribute("data-live", "open")

    resume = wait_for(lambda: Resume.objects.filter(run_id=invoice.run_id).first(), what="the resume")
    assert off_loop(resume_dispatch, resume_id=resume.pk) == "delivered"
    follow_up = InboxItem.objects.get(message="Email the new invoice to ACME Corp?")
    page.wait_for_url(f"**{follow_up.get_absolute_url()}?asked_again={invoice.run_id}", timeout=15_000)
    notice = page.locator('#live-notice[aria-live="polite"]')
    expect(notice).to_contain_text("The agent asked again: “Email the new invoice to ACME Corp?”")
    expect(notice).to_be_visible()
    shot(page, "chain-jump-announced")


def test_a_forged_asked_again_says_nothing(login, alice, post_run):
    first = post_run(confirmations("t-1", "r-1", 60)).items.get()
    other = post_run(confirmations("t-2", "r-2", 60)).items.get()
    page = login(alice)
    page.goto(f"{other.get_absolute_url()}?asked_again={first.run_id}")
    page.wait_for_timeout(300)
    expect(page.locator("#live-notice")).not_to_contain_text("asked again")
