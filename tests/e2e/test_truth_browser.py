"""What the approver sees is the truth, in Chromium against the live server: a deny reads Denied everywhere,
a run whose interrupt expired closes the others at once and says why, a failed delivery shows on the item
and in the list, the requester cannot click Approve, and a page decided elsewhere looks decided.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the tests visit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume
from tests.e2e.conftest import item_page, off_loop, open_live, shot

pytestmark = pytest.mark.browser


def confirmations(thread: str, run: str, *minutes: float, requested_by: str = "") -> dict:
    now = timezone.now()
    body = {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": f"{run}-i{n}",
                    "reason": "confirmation",
                    "message": f"Wire payment {n} of {run}?",
                    "expiresAt": (now + timedelta(minutes=lifetime)).isoformat(),
                    **({"metadata": {"requestedBy": requested_by}} if requested_by else {}),
                }
                for n, lifetime in enumerate(minutes, start=1)
            ],
        },
    }
    return body


def test_a_deny_shows_denied_on_the_item_the_run_and_the_list(login, alice, post_run):
    run = post_run(confirmations("t-1", "r-1", 60, 60))
    first, second = run.items.order_by("position")
    page = login(alice)
    page.goto(item_page(first))
    page.locator("[data-then-next]").uncheck()  # stay on the decided item to look at it
    page.locator('[data-decision-form] button[data-action="deny"]').click()

    expect(page.locator(f'.item-head [data-item-status="{first.pk}"]')).to_have_text("Denied")
    expect(page.locator(f'.item-head [data-item-status="{first.pk}"]')).to_have_class("pill pill-denied")
    expect(page.locator(".decision-card")).not_to_contain_text("The tool ran")
    shot(page, "truth-item-denied")

    page.goto(run.get_absolute_url())
    expect(page.locator(f'.run-item [data-item-status="{first.pk}"]')).to_have_text("Denied")
    expect(page.locator(f'.run-item [data-item-status="{second.pk}"]')).to_have_text("Open")
    shot(page, "truth-run-denied")

    page.goto("/inbox/?tab=decided")
    row = page.locator(f'tr[data-item-id="{first.pk}"]')
    expect(row.locator(".col-due .pill")).to_have_text("Denied")
    expect(row.locator(".status-dot")).to_have_class("status-dot status-denied")
    shot(page, "truth-list-denied")


def test_a_run_with_an_expired_sibling_shows_the_run_deadline_and_closes_the_others_at_once(login, alice, post_run):
    # One run whose first interrupt expires long before the second: the second's real deadline is the first's.
    soon_run = post_run(confirmations("t-1", "r-1", 10, 600))
    soon, late = soon_run.items.order_by("position")
    page = login(alice)
    page.goto(item_page(late))
    expect(page.locator(".item-head .countdown")).to_have_attribute("data-expires", soon.expires_at.isoformat())
    expect(page.locator("[data-run-deadline]")).to_have_text("run deadline")
    expect(page.locator(".meta-row")).to_contain_text("(the run’s deadline)")
    page.goto("/inbox/")
    expect(page.locator(f'tr[data-item-id="{late.pk}"] .countdown')).to_contain_text("in 9")

    # A run posted with one interrupt already past: its sibling is closed at once, with the reason.
    dead_run = post_run(confirmations("t-2", "r-2", -1, 600))
    past, sibling = dead_run.items.order_by("position")
    assert stored_status(sibling) == ("expired", "expired")
    page.goto(item_page(sibling))
    expect(page.locator(f'.item-head [data-item-status="{sibling.pk}"]')).to_have_text("Expired")
    expect(page.locator("[data-expired-why]")).to_contain_text("Closed as expired at")
    expect(page.locator("[data-expired-why]")).to_contain_text("another interrupt of the same run expired")
    expect(page.locator("[data-decision-form]")).to_have_count(0)
    expect(page.locator(".item-head .countdown")).to_have_count(0)
    shot(page, "truth-item-closed-by-sibling")


def stored_status(item: InboxItem) -> tuple[str, str]:
    item.refresh_from_db()
    return item.status, item.outcome


def test_a_failed_delivery_is_visible_on_the_item_and_in_the_list(login, alice, post_run):
    run = post_run(confirmations("t-1", "r-1", 60))
    item = run.items.get()
    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=run).update(state="failed", attempts=6, last_error="the agent answered 502")
    page = login(alice)
    page.goto(item_page(item))
    box = page.locator("div.delivery")
    expect(box).to_have_attribute("data-delivery", "failed")
    expect(box).to_contain_text("Failed: needs a person")
    expect(box).to_contain_text("did not reach the agent after 6 attempts: the agent answered 502")
    expect(page.locator(".decision-card")).not_to_contain_text("the resume goes back to the agent")
    shot(page, "truth-item-delivery-failed")

    page.goto("/inbox/?tab=decided")
    mark = page.locator(f'tr[data-item-id="{item.pk}"] .delivery-mark')
    expect(mark).to_have_text("Failed: needs a person")
    page.locator("[data-delivery-filter]").select_option("failed")
    page.wait_for_url("**delivery=failed**")
    expect(page.locator("tr[data-item-row]")).to_have_count(1)
    shot(page, "truth-list-delivery-failed")


def test_staff_retry_a_failed_delivery_from_the_run_page_and_see_a_refusal_in_the_page(login, alice, staff, post_run):
    run = post_run(confirmations("t-1", "r-1", 60))
    off_loop(decision_submit, item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=run).update(state="failed", attempts=6, last_error="the agent answered 502")
    # The decision was just made, so the page's socket redraws the run on connecting: open_live waits for that.
    page = open_live(login(staff), run.get_absolute_url())

    Resume.objects.filter(run=run).update(state="pending")  # someone else retried it meanwhile
    page.get_by_role("button", name="Retry sending").click()
    expect(page.locator("#live-notice")).to_have_text("Only a failed resume can be retried; this one is pending.")
    expect(page.get_by_role("button", name="Retry sending")).to_be_enabled()

    Resume.objects.filter(run=run).update(state="failed")
    page.get_by_role("button", name="Retry sending").click()
    expect(page.locator("#resume-state")).to_have_attribute("data-resume-state", "pending")
    expect(page.get_by_role("button", name="Retry sending")).to_have_count(0)
    expect(page.locator("#live-notice")).to_be_empty()  # the refusal went with the new attempt
    assert Resume.objects.get(run=run).state == "pending"


def test_approve_is_disabled_with_the_reason_for_the_requester(login, alice, post_run):
    run = post_run(confirmations("t-1", "r-1", 60, requested_by=alice.get_username()))
    page = login(alice)
    page.goto(item_page(run.items.get()))
    approve = page.locator('[data-decision-form] button[data-action="approve"]')
    expect(approve).to_be_disabled()
    expect(approve).to_have_accessible_description(
        "You asked for this action, so someone else must approve it. You can still deny or cancel it."
    )
    expect(page.locator('[data-decision-form] button[data-action="deny"]')).to_be_enabled()
    shot(page, "truth-item-self-approval")


def test_a_page_decided_in_another_window_looks_decided(login, alice, bob, post_run):
    item = post_run(confirmations("t-1", "r-1", 60)).items.get()
    page = open_live(login(bob), item_page(item))
    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": False})

    expect(page.locator(f'.item-head [data-item-status="{item.pk}"]')).to_have_text("Denied")
    expect(page.locator(".item-head .countdown")).to_have_text("no longer open")
    expect(page.locator("[data-decision-form]")).to_have_attribute("aria-disabled", "true")
    expect(page.locator('[data-decision-form] button[data-action="approve"]')).to_be_disabled()
    # The outcome itself, without a reload: who denied it and that nothing goes back yet.
    outcome = page.locator("[data-item-outcome]")
    expect(outcome.locator("[data-outcome]")).to_have_text("Denied")
    expect(outcome).to_contain_text("by alice")
    expect(page.locator("#live-notice")).to_contain_text("Decided by alice.")
    expect(page.locator("#live-notice")).not_to_contain_text("Reload")
    shot(page, "truth-item-decided-elsewhere")


def test_the_run_header_follows_the_resume_live(login, alice, bob, post_run):
    run = post_run(confirmations("t-1", "r-1", 60))
    item = run.items.get()
    page = open_live(login(bob), run.get_absolute_url())
    expect(page.locator("[data-run-status]").first).to_contain_text("0 of 1 decided")
    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    expect(page.locator(".item-head [data-run-status]")).to_contain_text("1 of 1 decided")
    expect(page.locator(".item-head [data-run-status] .delivery-mark")).to_have_count(1)


def test_an_unknown_reason_with_an_open_question_takes_a_free_text_answer(login, alice, post_run):
    run = post_run(
        {
            "type": "RUN_FINISHED",
            "threadId": "t-q",
            "runId": "r-q",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "ask-1", "reason": "ask_user", "message": "What should I tell them?"}],
            },
        }
    )
    item = run.items.get()
    page = login(alice)
    page.goto(item_page(item))
    page.get_by_label("Your answer").fill("Tell them the report ships on Friday.")
    shot(page, "truth-item-free-text")
    page.get_by_role("button", name="Send this answer").click()
    expect(page.locator(f'.item-head [data-item-status="{item.pk}"]')).to_have_text("Answered")
    item.refresh_from_db()
    assert item.response_payload == {"answer": "Tell them the report ships on Friday."}
